"""Vectorized MuJoCo Warp environments and tasks with TensorDict input and output."""

__version__ = "0.1.0"

__all__ = ["__version__"]
