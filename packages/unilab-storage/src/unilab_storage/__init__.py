"""Rollout storage, returns and GAE, mini-batch generators and replay shards, all TensorDicts
preallocated on the training device."""

__version__ = "0.1.0"

__all__ = ["__version__"]
