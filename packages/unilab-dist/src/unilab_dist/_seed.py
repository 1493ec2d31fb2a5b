"""Per-rank seeding.

Rank r of a run with base seed s uses seed `s + r` (its *global* rank, so two hosts never share a
stream). Environments, exploration noise and minibatch shuffles therefore differ across ranks,
while parameters stay identical because rank 0's state is broadcast at start.

Vector environments often seed env i with `seed + i`. Then `s + r` collides: env 1 of rank 0 and
env 0 of rank 1 both get `s + 1`. Given the number of envs per rank n, rank r's seed is
`s + r * n` instead, so rank r's env seeds `s + r * n + i` (i < n) are disjoint across ranks.
"""

from __future__ import annotations

import random

import torch

__all__ = ["seed_everything", "seed_for_rank"]

_MAX_SEED = 2**32 - 1  # numpy's limit


def seed_for_rank(base_seed: int, rank: int, envs_per_rank: int | None = None) -> int:
    """The seed of global rank `rank`: `base_seed + rank`, or `base_seed + rank * envs_per_rank`.

    Pass `envs_per_rank` (the vector env size of each rank) when the env seeds env i with
    `seed + i`: rank r's env seeds then fill [base + r * n, base + (r + 1) * n), disjoint across
    ranks. Without it the result is `base_seed + rank`. Raises ValueError if the largest env
    seed leaves [0, 2**32 - 1] (numpy's seed range), rank < 0 or envs_per_rank < 1.
    """
    for name, value in (("base_seed", base_seed), ("rank", rank)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if rank < 0:
        raise ValueError(f"rank must be >= 0, got {rank}")
    if envs_per_rank is None:
        seed, last = base_seed + rank, base_seed + rank
        shown = f"seed {base_seed} + rank {rank} = {seed}"
    else:
        if isinstance(envs_per_rank, bool) or not isinstance(envs_per_rank, int):
            raise TypeError(f"envs_per_rank must be an int, got {type(envs_per_rank).__name__}")
        if envs_per_rank < 1:
            raise ValueError(f"envs_per_rank must be >= 1, got {envs_per_rank}")
        seed = base_seed + rank * envs_per_rank
        last = seed + envs_per_rank - 1
        shown = f"env seeds {seed}..{last} of rank {rank} ({envs_per_rank} per rank)"
    if seed < 0 or last > _MAX_SEED:
        raise ValueError(f"{shown}: outside [0, 2**32 - 1]; choose a smaller base seed")
    return seed


def seed_everything(seed: int) -> int:
    """Seed Python's `random`, numpy (when installed) and torch (CPU and all CUDA devices).

    Returns `seed`. Use `seed_everything(seed_for_rank(base, ctx.rank))` in each worker.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if not 0 <= seed <= _MAX_SEED:
        raise ValueError(f"seed must be in [0, 2**32 - 1], got {seed}")
    random.seed(seed)
    try:
        import numpy as np
    except ImportError:  # numpy is optional
        pass
    else:
        np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device, lazily
    return seed
