"""FastSAC loss pieces as pure functions (no module state), each testable by hand.

Conventions: `B` batch, `Q` ensemble size, `K` atoms. `discount` is the replay shard's bootstrap
factor of an n-step transition, `gamma**n_effective` where the episode continues (or was
truncated) and 0 where it terminated, so a target is always `reward + discount * next_value`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = [
    "actor_loss",
    "categorical_projection",
    "distributional_critic_loss",
    "polyak_update",
    "scalar_critic_loss",
    "soft_scalar_target",
    "temperature_loss",
]


def categorical_projection(
    next_probs: torch.Tensor,
    reward: torch.Tensor,
    discount: torch.Tensor,
    support: torch.Tensor,
) -> torch.Tensor:
    """Project the distribution of `reward + discount * Z` back onto `support` (C51).

    Args:
        next_probs: `(..., B, K)` probabilities of the next-state return on `support`.
        reward: `(B,)` n-step reward, already including any entropy bonus.
        discount: `(B,)` bootstrap factor (0 at terminal transitions).
        support: `(K,)` evenly spaced atoms from `v_min` to `v_max`.

    Returns:
        `(..., B, K)` projected probabilities. Atoms shifted outside the support are clamped to
    its edges; an atom landing exactly on a support point gives it all of its mass (the
    `lower == upper` case that a plain floor/ceil split would drop).
    """
    k = support.shape[0]
    v_min, v_max = support[0], support[-1]
    delta = (v_max - v_min) / (k - 1)
    tz = reward.unsqueeze(-1) + discount.unsqueeze(-1) * support  # (B, K)
    tz = torch.minimum(torch.maximum(tz, v_min), v_max)
    b = ((tz - v_min) / delta).clamp(0, k - 1)
    lower = b.floor().long()
    upper = b.ceil().long()
    on_atom = lower == upper
    # Exactly on an atom: move one bound so that the weight (b - lower) or (upper - b) is 1.
    lower_fixed = torch.where(on_atom & (lower > 0), lower - 1, lower)
    upper_fixed = torch.where(on_atom & (lower == 0), upper + 1, upper)
    w_lower = upper_fixed.to(b.dtype) - b
    w_upper = b - lower_fixed.to(b.dtype)
    shape = next_probs.shape
    lower_i = lower_fixed.expand(shape)
    upper_i = upper_fixed.expand(shape)
    proj = torch.zeros_like(next_probs)
    proj.scatter_add_(-1, lower_i, next_probs * w_lower)
    proj.scatter_add_(-1, upper_i, next_probs * w_upper)
    return proj


def distributional_critic_loss(logits: torch.Tensor, target_probs: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of each critic's categorical prediction to its projected target.

    `logits`, `target_probs`: `(Q, B, K)`. Returns the mean over the batch, summed over the `Q`
    networks (Holosoma: `-sum(p * log_softmax(logits)).mean(1).sum(0)`), a 0-d tensor.
    """
    log_p = torch.log_softmax(logits.float(), dim=-1)
    return -(target_probs * log_p).sum(-1).mean(-1).sum(0)


def soft_scalar_target(
    reward: torch.Tensor,
    discount: torch.Tensor,
    next_q: torch.Tensor,
    next_log_prob: torch.Tensor,
    alpha: torch.Tensor | float,
) -> torch.Tensor:
    """Scalar soft Bellman target `r + d * (min_q Q'(s', a') - alpha * log pi(a'|s'))`.

    `reward`, `discount`, `next_log_prob`: `(B,)`; `next_q`: `(Q, B)` target-critic values.
    Returns `(B,)`.
    """
    return reward + discount * (next_q.min(0).values - alpha * next_log_prob)


def scalar_critic_loss(q: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean squared error of each of the `(Q, B)` predictions to `target` `(B,)`, summed over Q."""
    return (q.float() - target).pow(2).mean(-1).sum(0)


def actor_loss(
    log_prob: torch.Tensor, q: torch.Tensor, alpha: torch.Tensor | float
) -> torch.Tensor:
    """`mean(alpha * log pi(a|s) - Q(s, a))`; `log_prob`, `q`: `(B,)`; alpha is not trained here."""
    return (alpha * log_prob - q).mean()


def temperature_loss(
    log_alpha: torch.Tensor, log_prob: torch.Tensor, target_entropy: float
) -> torch.Tensor:
    """`mean(-exp(log_alpha) * (log pi(a|s) + target_entropy))`; only `log_alpha` gets a gradient.

    Its gradient w.r.t. `log_alpha` is `alpha * (entropy - target_entropy)` with
    `entropy = -mean(log_prob)`: the temperature falls while the entropy is above the target.
    """
    return (-log_alpha.exp() * (log_prob.detach() + target_entropy)).mean()


@torch.no_grad()
def polyak_update(
    target: Sequence[torch.Tensor], online: Sequence[torch.Tensor], tau: float
) -> None:
    """In place `target += tau * (online - target)` for every pair (one fused foreach kernel)."""
    torch._foreach_lerp_(list(target), list(online), tau)
