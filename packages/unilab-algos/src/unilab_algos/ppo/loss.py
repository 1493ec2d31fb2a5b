"""PPO loss terms on one mini-batch (pure functions of tensors)."""

from __future__ import annotations

import torch
from torch.distributions import Normal, kl_divergence

__all__ = ["gaussian_kl", "ppo_loss"]


def gaussian_kl(
    old_mean: torch.Tensor, old_std: torch.Tensor, mean: torch.Tensor, std: torch.Tensor
) -> torch.Tensor:
    """Mean over samples of KL(old || new) of diagonal Gaussians, summed over actions.

    Shapes: [..., A] (std broadcasts). Returns a 0-d tensor. Same arithmetic as RSL-RL 5.4.2.
    """
    kl = kl_divergence(
        Normal(old_mean, old_std, validate_args=False), Normal(mean, std, validate_args=False)
    ).sum(dim=-1)
    return torch.mean(kl)


def ppo_loss(
    dist: Normal,
    actions: torch.Tensor,
    old_log_prob: torch.Tensor,
    advantages: torch.Tensor,
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    *,
    clip_param: float,
    value_loss_coef: float,
    entropy_coef: float,
    use_clipped_value_loss: bool,
    entropy_samples: int | None = None,
) -> dict[str, torch.Tensor]:
    """Clipped-surrogate PPO loss (RSL-RL 5.4.2 arithmetic).

    Shapes: `dist` over actions [..., A]; `actions` [..., A]; `old_log_prob`, `advantages`,
    `values`, `old_values`, `returns` [...] (one value per sample). Returns 0-d tensors:
    `loss = surrogate + value_loss_coef * value - entropy_coef * entropy`, `surrogate`,
    `value` (raw, unscaled; clipped as `max((v-R)^2, (v_clip-R)^2)` with `v_clip = v_old +
    clamp(v - v_old, +-clip_param)`, no 1/2), `entropy` (mean of the summed entropy; over the
    first `entropy_samples` samples only when given: the original half of a mirrored batch).
    """
    log_prob = dist.log_prob(actions).sum(dim=-1)
    entropy = dist.entropy()
    if entropy_samples is not None:
        entropy = entropy[:entropy_samples]
    entropy = entropy.sum(dim=-1).mean()
    ratio = torch.exp(log_prob - old_log_prob)
    surrogate = -advantages * ratio
    surrogate_clipped = -advantages * torch.clamp(ratio, 1.0 - clip_param, 1.0 + clip_param)
    surrogate_loss = torch.max(surrogate, surrogate_clipped).mean()
    if use_clipped_value_loss:
        value_clipped = old_values + (values - old_values).clamp(-clip_param, clip_param)
        value_losses = (values - returns).pow(2)
        value_losses_clipped = (value_clipped - returns).pow(2)
        value_loss = torch.max(value_losses, value_losses_clipped).mean()
    else:
        value_loss = (returns - values).pow(2).mean()
    loss = surrogate_loss + value_loss_coef * value_loss - entropy_coef * entropy
    return {"loss": loss, "surrogate": surrogate_loss, "value": value_loss, "entropy": entropy}
