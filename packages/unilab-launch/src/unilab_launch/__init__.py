"""Launching one worker per GPU, or N CPU workers, on one or many hosts through torchrunx."""

__version__ = "0.1.0"

__all__ = ["__version__"]
