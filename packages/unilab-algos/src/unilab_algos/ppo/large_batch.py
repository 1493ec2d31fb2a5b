"""Large-batch PPO recipe: mini-batch count and KL target that follow the env count.

Rule, relative to a reference env count `R` at which `cfg` is tuned (k = envs / R, envs per
rank or over all ranks by `scope`):

- `num_mini_batches` becomes `k * num_mini_batches`, so a mini-batch keeps its sample count
  and the number of gradient steps per env step stays the same as at `R`;
- `desired_kl` becomes `k * desired_kl`. RSL-RL's adaptive rule compares the KL between the
  rollout policy and the current one, measured before each mini-batch step; with k times as
  many equal-sized steps per epoch that KL accumulates over k times as many steps, and with
  steps dominated by mini-batch noise it grows in proportion to the step count. Scaling the
  target by k keeps the KL per update at the reference value, instead of the rule cutting the
  learning rate (at 16384 envs with 16 mini-batches it halved it);
- `learning_rate` and `lr_bounds` are unchanged: each step sees a mini-batch of the reference
  size, so the reference step size stays right.

At `envs == R` the config comes back unchanged (equal field for field). `PPOConfig.large_batch`
set, `PPO` applies this rule itself when it is built for a known env count (`num_envs`,
`world_size`).
"""

from __future__ import annotations

from fractions import Fraction

import attrs

from .config import LargeBatch, PPOConfig

__all__ = ["LargeBatch", "scale_for_envs"]


def scale_for_envs(
    cfg: PPOConfig, recipe: LargeBatch, *, num_envs: int, world_size: int = 1
) -> PPOConfig:
    """`cfg` with the mini-batch count and KL target scaled for `num_envs` envs per rank on
    `world_size` ranks (module docstring gives the rule)."""
    if num_envs <= 0 or world_size <= 0:
        raise ValueError(f"num_envs and world_size must be > 0, got {num_envs}, {world_size}")
    envs = num_envs if recipe.scope == "rank" else num_envs * world_size
    k = Fraction(envs, recipe.reference_envs)
    mini_batches = k * cfg.num_mini_batches
    if mini_batches.denominator != 1:
        raise ValueError(
            f"{envs} envs ({recipe.scope}) over reference {recipe.reference_envs} gives "
            f"{mini_batches} mini-batches; pick an env count that makes it a whole number"
        )
    if k == 1:
        return cfg
    return attrs.evolve(
        cfg,
        num_mini_batches=int(mini_batches),
        desired_kl=cfg.desired_kl * float(k),
    )
