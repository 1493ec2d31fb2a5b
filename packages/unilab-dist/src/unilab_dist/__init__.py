"""Distributed primitives for data-parallel RL trainers: process groups, state broadcast,
flat gradient all-reduce, reductions and exact moment merges."""

__version__ = "0.1.0"

__all__ = ["__version__"]
