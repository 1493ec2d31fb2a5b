"""Splitting a global budget (replay capacity, batch size, env count) across ranks."""

from __future__ import annotations

from typing import Literal

from ._checks import positive_int

__all__ = ["split_global"]


def split_global(
    total: int,
    world_size: int,
    what: str,
    remainder: Literal["error", "floor"] = "error",
) -> int:
    """The per-rank share of a global `total` over `world_size` ranks.

    `remainder="error"` (default): a `total` not divisible by `world_size` raises ValueError
    naming `what`. `"floor"`: returns ``total // world_size``; the global total actually used
    is then ``world_size * (total // world_size)`` and the last ``total % world_size`` units
    are not allocated. A share of zero is always an error.
    """
    positive_int(total, what)
    positive_int(world_size, "world_size")
    if remainder not in ("error", "floor"):
        raise ValueError(f"remainder must be 'error' or 'floor', got {remainder!r}")
    share, rest = divmod(total, world_size)
    if rest and remainder == "error":
        raise ValueError(
            f"{what}={total} is not divisible by world_size={world_size} "
            f"({total} = {world_size} x {share} + {rest}); choose a multiple of {world_size} "
            "or remainder='floor'"
        )
    if share == 0:
        raise ValueError(f"{what}={total} is smaller than world_size={world_size}")
    return share
