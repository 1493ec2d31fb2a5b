"""Per-rank seeding.

Rank r of a run with base seed s uses seed `s + r` (its *global* rank, so two hosts never share a
stream). Environments, exploration noise and minibatch shuffles therefore differ across ranks,
while parameters stay identical because rank 0's state is broadcast at start.
"""

from __future__ import annotations

import random

import torch

__all__ = ["seed_everything", "seed_for_rank"]

_MAX_SEED = 2**32 - 1  # numpy's limit


def seed_for_rank(base_seed: int, rank: int) -> int:
    """The seed of global rank `rank`: `base_seed + rank`.

    Raises ValueError if the result leaves [0, 2**32 - 1] (numpy's seed range) or rank < 0.
    """
    for name, value in (("base_seed", base_seed), ("rank", rank)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if rank < 0:
        raise ValueError(f"rank must be >= 0, got {rank}")
    seed = base_seed + rank
    if not 0 <= seed <= _MAX_SEED:
        raise ValueError(f"seed {base_seed} + rank {rank} = {seed} is outside [0, 2**32 - 1]")
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
