"""Curricula: host-side state machines that a trainer drives with episode metrics.

A curriculum never performs a collective. The trainer picks the scope (docs/semantics.md):

- `local`: every rank calls `update(metrics)` with its own metrics;
- `rank0`: rank 0 calls `update(metrics)`, then broadcasts `state_dict()` (a small dict of
  Python numbers) and the other ranks call `load_state_dict(state)`;
- `global`: the trainer reduces the metrics across ranks (count-weighted means) and every rank
  calls `update(reduced)`, so every rank takes the same decision.

Metrics are means over the episodes that finished since the last update, keyed by the names in
`metric_keys`; the values come from the env's `("episode", name)` outputs (episode sums of the
task's log terms, or "return" / "length"). A NaN value means "no finished episode": no change.
The env mirrors `level` (a float in [0, 1]) into the task's device array before every step.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["Curriculum", "LevelCurriculum"]


class Curriculum(abc.ABC):
    """Base class: `level` in [0, 1], `update(metrics)`, `state_dict()` / `load_state_dict()`."""

    metric_keys: tuple[str, ...] = ()
    per_world: bool = False
    """True for a curriculum with a level per world, moved inside the env step and synced by the
    trainer with the per-world protocol (`unilab_envs.terrain.TerrainLevels`); False for one
    `level` that `update(metrics)` moves. The env's `features.curriculum_mode` states it."""

    @property
    @abc.abstractmethod
    def level(self) -> float:
        """Progress in [0, 1] that the task maps to its parameters (e.g. command range)."""

    @abc.abstractmethod
    def update(self, metrics: Mapping[str, float]) -> bool:
        """Advance from metrics (means over finished episodes); return True if `level` changed."""

    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to restore the curriculum: Python numbers only."""

    @abc.abstractmethod
    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore from `state_dict()` output; ValueError on a malformed state."""


class LevelCurriculum(Curriculum):
    """Discrete levels 0..num_levels-1, moved by one metric against thresholds.

    `update` raises the level by one when `metrics[metric] >= up_threshold` and lowers it by one
    when `down_threshold` is set and `metrics[metric] < down_threshold`. `level` is
    `index / (num_levels - 1)` (0 when there is one level).
    """

    def __init__(
        self,
        *,
        metric: str,
        num_levels: int,
        up_threshold: float,
        down_threshold: float | None = None,
        initial_index: int = 0,
    ) -> None:
        if num_levels < 1:
            raise ValueError(f"num_levels must be >= 1, got {num_levels}")
        if down_threshold is not None and down_threshold > up_threshold:
            raise ValueError(
                f"down_threshold ({down_threshold}) must be <= up_threshold ({up_threshold})"
            )
        if not 0 <= initial_index < num_levels:
            raise ValueError(f"initial_index must be in [0, {num_levels}), got {initial_index}")
        self.metric = metric
        self.metric_keys = (metric,)
        self.num_levels = num_levels
        self.up_threshold = up_threshold
        self.down_threshold = down_threshold
        self.index = initial_index

    @property
    def level(self) -> float:
        return 0.0 if self.num_levels == 1 else self.index / (self.num_levels - 1)

    def update(self, metrics: Mapping[str, float]) -> bool:
        if self.metric not in metrics:
            raise KeyError(f"curriculum needs metric {self.metric!r}; got {sorted(metrics)}")
        value = float(metrics[self.metric])
        if math.isnan(value):
            return False
        old = self.index
        if value >= self.up_threshold:
            self.index = min(self.index + 1, self.num_levels - 1)
        elif self.down_threshold is not None and value < self.down_threshold:
            self.index = max(self.index - 1, 0)
        return self.index != old

    def state_dict(self) -> dict[str, Any]:
        return {"index": self.index, "num_levels": self.num_levels}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state.get("num_levels") != self.num_levels or "index" not in state:
            raise ValueError(
                f"curriculum state {dict(state)} does not match a {self.num_levels}-level curriculum"
            )
        index = int(state["index"])
        if not 0 <= index < self.num_levels:
            raise ValueError(f"curriculum index {index} out of range [0, {self.num_levels})")
        self.index = index
