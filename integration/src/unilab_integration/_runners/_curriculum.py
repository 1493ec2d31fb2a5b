"""`CurriculumSync`: the env's curriculum across ranks at the iteration boundary.

`runner.curriculum_sync` picks how (docs/semantics.md). A scalar curriculum
(`features.curriculum_mode == "scalar"`, one `level` moved by `update(metrics)`):

- `local`: every rank updates from its own episode means (no collective);
- `global`: every rank updates from the reduced means (the collective is the metrics
  reduction itself);
- `rank0`: rank 0 updates from its own means and broadcasts `state_dict()` (one object
  broadcast: its length, then its bytes); the others `load_state_dict` it.

A per-world curriculum (`"per_world"`, terrain levels moved inside the env step): `local`
keeps each rank's levels (no collective, MJLab's rule on one rank); `global` sums the per-slot
outcome counts over ranks (one all-reduce) and every rank applies the same per-slot rule;
`rank0` broadcasts rank 0's levels (one collective).

The runner calls, per iteration: `payload()` (what rides on the metrics reduction: the level
the episodes were collected under and, per world, each metric's (sum, count)), `metrics(summed)`
(their means over ranks) and `sync(global_means, local_means)`. Checkpoints take `state()` and
give back `load(states, rank, src, same)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import unilab_dist
from unilab_dist import DistContext
from unilab_envs.features import EnvFeatures

from ._stats import curriculum_metrics

__all__ = ["CurriculumSync"]


class CurriculumSync:
    """One rank's side of the curriculum sync (see the module docstring); inactive (every
    method a no-op) for an env without a curriculum."""

    def __init__(self, features: EnvFeatures, mode: str, ctx: DistContext) -> None:
        """`mode`: `runner.curriculum_sync` (`local`, `global` or `rank0`, checked by the
        config)."""
        self.curriculum: Any = features.curriculum
        self.per_world = features.curriculum_mode == "per_world"
        self.mode = mode
        self.ctx = ctx
        self._world_keys: dict[str, tuple[str, str]] = {}

    @property
    def active(self) -> bool:
        return self.curriculum is not None

    def payload(self) -> dict[str, float]:
        """This rank's curriculum entries of the metrics reduction (summed over ranks)."""
        out: dict[str, float] = {}
        self._world_keys = {}
        if self.curriculum is None:
            return out
        if self.per_world:  # terrain levels: (sum, count) per name
            for name, (total, count) in self.curriculum.metric_sums().items():
                keys = (f"curriculum/{name}_sum", f"curriculum/{name}_count")
                self._world_keys[name] = keys
                out[keys[0]], out[keys[1]] = total, count
        # the level this iteration's episodes were collected under
        out["curriculum/level"] = float(self.curriculum.level)
        return out

    def metrics(self, summed: dict[str, float]) -> dict[str, float]:
        """`curriculum/level` (mean over ranks: they differ only with `local`) and, per world,
        `curriculum/<name>` (count-weighted over ranks), from the reduced `payload()`."""
        if self.curriculum is None:
            return {}
        out = {"curriculum/level": summed["curriculum/level"] / self.ctx.world_size}
        for name, (total, count) in self._world_keys.items():
            out[f"curriculum/{name}"] = summed[total] / max(summed[count], 1.0)
        return out

    def sync(self, global_means: dict[str, float], local_means: dict[str, float]) -> None:
        """Move the curriculum at the iteration boundary, the same way on every rank's call."""
        curriculum = self.curriculum
        if curriculum is None:
            return
        if self.per_world:
            self._sync_per_world()
            return
        global_means = curriculum_metrics(global_means, curriculum.metric_keys)
        local_means = curriculum_metrics(local_means, curriculum.metric_keys)
        if self.mode == "local":
            curriculum.update(local_means)
        elif self.mode == "global":
            curriculum.update(global_means)
        else:  # rank0
            if self.ctx.is_main:
                curriculum.update(local_means)
            with unilab_dist.accounting.phase("curriculum"):
                state = unilab_dist.broadcast_object(
                    curriculum.state_dict() if self.ctx.is_main else None
                )
            if not self.ctx.is_main:
                curriculum.load_state_dict(state)

    def _sync_per_world(self) -> None:
        """docs/semantics.md, "Terrain levels"."""
        curriculum = self.curriculum
        if self.mode == "local" or not unilab_dist.is_distributed():  # one rank: MJLab's rule
            curriculum.clear_outcomes()
            return
        with unilab_dist.accounting.phase("curriculum"):
            if self.mode == "global":
                total = unilab_dist.all_reduce(curriculum.outcome_counts(), "sum")
                curriculum.apply_outcomes(total)
            else:
                levels = curriculum.levels_tensor().clone()
                unilab_dist.broadcast_tensors([levels])
                curriculum.adopt_levels(levels)

    # --- checkpoints ---------------------------------------------------------------------------
    def state(self) -> dict[str, Any] | None:
        """This rank's curriculum state for a checkpoint (None without a curriculum)."""
        return None if self.curriculum is None else self.curriculum.state_dict()

    def load(self, states: Sequence[Any], rank: int, src: int, same: bool) -> bool:
        """Restore from a checkpoint's per-rank `states`: saved rank `src`'s state, or, for a
        per-world curriculum on another layout (`same` False), re-split by slot (this rank
        takes saved rank (rank mod saved world size)'s levels). True when the env must be reset
        (every world spawned on its tile)."""
        curriculum = self.curriculum
        if self.per_world and not same:
            curriculum.load_rank_states(states, rank)
            return True
        if curriculum is not None and states[src] is not None:
            curriculum.load_state_dict(states[src])
        return False
