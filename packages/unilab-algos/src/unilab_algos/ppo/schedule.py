"""RSL-RL's adaptive-KL learning-rate rule, on Python floats and on device tensors.

Rule (RSL-RL 5.4.2): `kl > 2*d` -> `lr = max(lo, lr / f)`; `0 < kl < d/2` -> `lr = min(hi, lr * f)`;
otherwise unchanged. The comparisons are made on the KL tensor against Python floats (float32
when the KL is float32, as in RSL-RL); the LR arithmetic is float64 in both forms, so the two
functions return the same values bit for bit.
"""

from __future__ import annotations

import torch

__all__ = ["adaptive_lr", "adaptive_lr_tensor"]


def adaptive_lr(
    lr: float,
    kl: torch.Tensor,
    *,
    desired_kl: float,
    factor: float,
    bounds: tuple[float, float],
) -> float:
    """The rule with a Python-float `lr` (reads `kl`, a 0-d tensor, on the host)."""
    lo, hi = bounds
    if kl > desired_kl * 2.0:
        return max(lo, lr / factor)
    if kl < desired_kl / 2.0 and kl > 0.0:
        return min(hi, lr * factor)
    return lr


def adaptive_lr_tensor(
    lr: torch.Tensor,
    kl: torch.Tensor,
    *,
    desired_kl: float,
    factor: float,
    bounds: tuple[float, float],
) -> torch.Tensor:
    """The rule on device: `lr` 0-d float64, `kl` 0-d (any float dtype, same device).

    Returns a new 0-d float64 tensor; no host synchronization (CUDA-graph capturable).
    """
    lo, hi = bounds
    down = kl > desired_kl * 2.0
    up = (kl < desired_kl / 2.0) & (kl > 0.0)
    lowered = (lr / factor).clamp(min=lo)
    raised = (lr * factor).clamp(max=hi)
    return torch.where(down, lowered, torch.where(up, raised, lr))
