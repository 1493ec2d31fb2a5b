"""Generalized advantage estimation and (local or global) advantage normalization."""

from __future__ import annotations

from collections.abc import Callable

import torch

__all__ = ["compute_gae", "normalize_advantages"]

ReduceSum = Callable[[torch.Tensor], torch.Tensor]


def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    dones: torch.Tensor,
    last_values: torch.Tensor,
    gamma: float,
    lam: float,
    time_outs: torch.Tensor | None = None,
    *,
    rsl_rl: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE(gamma, lambda) advantages and returns over a rollout.

    Shapes: `rewards`, `values`, `dones` (bool or 0/1), `time_outs` (bool or 0/1) are [T, N]
    (extra trailing dims, e.g. RSL-RL's [T, N, 1], are allowed as long as all agree);
    `last_values` is [N] (the critic's value of the observation after the last step). Returns
    `(advantages, returns)`, both shaped like `values`, in `values`' dtype.

    `dones[t]` cuts both the value bootstrap and the lambda-recursion after step t. A time-out
    is also a done; when `time_outs` is given the reward is bootstrapped first as RSL-RL does:
    ``rewards + gamma * (values * time_outs)``, with `values` the value of the pre-step
    observation. Pass `time_outs` only if the stored rewards do not already include it.

    `returns = advantages + values`. With `rsl_rl=True` the advantages are then recomputed as
    ``returns - values``, which reproduces RSL-RL 5.4.2's ``compute_returns`` bit for bit
    (the raw GAE advantage can differ from it by rounding). The recursion is a loop over T;
    every other operation is vectorized over T and N.
    """
    if not (rewards.shape == values.shape == dones.shape):
        raise ValueError(
            f"compute_gae: rewards {tuple(rewards.shape)}, values {tuple(values.shape)} and "
            f"dones {tuple(dones.shape)} must have the same [T, N] shape"
        )
    if rewards.dim() < 2:
        raise ValueError(f"compute_gae: expected [T, N] tensors, got {tuple(rewards.shape)}")
    if tuple(last_values.shape) != tuple(values.shape[1:]):
        raise ValueError(
            f"compute_gae: last_values has shape {tuple(last_values.shape)}, "
            f"expected {tuple(values.shape[1:])}"
        )
    if not values.is_floating_point():
        raise TypeError(f"compute_gae: values must be floating point, got {values.dtype}")
    if time_outs is not None:
        if time_outs.shape != values.shape:
            raise ValueError(
                f"compute_gae: time_outs has shape {tuple(time_outs.shape)}, "
                f"expected {tuple(values.shape)}"
            )
        rewards = rewards + gamma * (values * time_outs.to(values.dtype))
    num_steps = values.shape[0]
    # Same operation order as RSL-RL's loop, done for all t at once (elementwise, so exact).
    not_terminal = 1.0 - dones.to(values.dtype)
    next_values = torch.cat((values[1:], last_values.to(values.dtype).unsqueeze(0)), dim=0)
    deltas = rewards + not_terminal * gamma * next_values - values
    coefs = not_terminal * gamma * lam
    advantages = torch.empty_like(values)
    advantage = deltas[num_steps - 1]
    advantages[num_steps - 1] = advantage
    for t in range(num_steps - 2, -1, -1):
        advantage = deltas[t] + coefs[t] * advantage
        advantages[t] = advantage
    returns = advantages + values
    if rsl_rl:
        advantages = returns - values
    return advantages, returns


def normalize_advantages(
    advantages: torch.Tensor,
    reduce_sum: ReduceSum | None = None,
    eps: float = 1e-8,
    unbiased: bool = True,
) -> torch.Tensor:
    """``(A - mean) / (std + eps)`` over all entries of `advantages` (any shape).

    `reduce_sum=None`: local statistics with `torch.mean` / `torch.std` (bitwise RSL-RL 5.4.2
    when `unbiased=True`, eps 1e-8). Otherwise `reduce_sum` sums a tensor across ranks (e.g.
    ``unilab_dist.sum_reducer()``) and is called once on the float64 vector
    ``[count, sum, sum of squares]``: the statistics are those of the concatenation of every
    rank's advantages, exact for unequal counts. `unbiased` divides the variance by
    ``count - 1`` instead of ``count``. No host synchronization happens on either path.
    """
    if not advantages.is_floating_point():
        raise TypeError(f"normalize_advantages: expected floating point, got {advantages.dtype}")
    if reduce_sum is None:
        if advantages.numel() < (2 if unbiased else 1):
            raise ValueError(
                f"normalize_advantages: {advantages.numel()} entries are too few for "
                f"{'an unbiased' if unbiased else 'a'} std"
            )
        mean = advantages.mean()
        std = advantages.std(correction=1 if unbiased else 0)
        return (advantages - mean) / (std + eps)
    flat = advantages.detach().reshape(-1).to(torch.float64)
    count = torch.full((1,), float(flat.numel()), dtype=torch.float64, device=flat.device)
    stats = torch.cat((count, flat.sum().reshape(1), flat.square().sum().reshape(1)))
    stats = reduce_sum(stats)
    n, total, total_sq = stats[0], stats[1], stats[2]
    mean = total / n
    # Sum of squared deviations; clamped at 0 against cancellation.
    ssd = (total_sq - total * mean).clamp_min(0.0)
    std = (ssd / (n - 1.0 if unbiased else n)).sqrt()
    return (advantages - mean.to(advantages.dtype)) / (std.to(advantages.dtype) + eps)
