"""Behaviour-cloning loss of the distillation learner."""

from __future__ import annotations

import torch
from torch.nn import functional as F

__all__ = ["behavior_loss"]


def behavior_loss(actions: torch.Tensor, labels: torch.Tensor, kind: str) -> torch.Tensor:
    """Mean over all entries of `actions` [N, A] vs teacher `labels` [N, A]: MSE or Huber (delta 1)."""
    if kind == "mse":
        return F.mse_loss(actions, labels)
    if kind == "huber":
        return F.huber_loss(actions, labels)
    raise ValueError(f"unknown loss {kind!r}; expected 'mse' or 'huber'")
