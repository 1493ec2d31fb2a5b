"""`EnvFeatures`: what an env offers beyond the step contract, stated by the env itself.

The step contract (`num_envs`, `device`, `action_dim`, `observation_shapes`,
`max_episode_steps`, `step_dt`, `reset()`, `step(action)`) is all a trainer needs. Everything
else is optional, and an env reports which of it it has as one `EnvFeatures` value,
`env.features` (`VecEnv.features`), so that a trainer reads one record instead of probing
the env for methods. docs/envs.md, "Optional features", says what a trainer does with each
field; `EnvFeatures()` (every field at its default) is what an env that reports nothing gets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import attrs

if TYPE_CHECKING:
    from unilab_envs.curriculum import Curriculum

__all__ = ["CURRICULUM_MODES", "EnvFeatures"]

CURRICULUM_MODES = ("scalar", "per_world")
"""How a trainer synchronizes a curriculum across ranks: "scalar", one `level` moved by
`update(metrics)` (`Curriculum`); "per_world", per-world levels moved inside the env step and
synced with the per-world protocol (`per_world = True`, `unilab_envs.terrain.TerrainLevels`)."""


def _curriculum_mode(instance: EnvFeatures, attribute: attrs.Attribute, value: str | None) -> None:
    if value is not None and value not in CURRICULUM_MODES:
        raise ValueError(
            f"EnvFeatures.curriculum_mode {value!r}: give None or one of {CURRICULUM_MODES}"
        )
    if (value is None) != (instance.curriculum is None):
        raise ValueError(
            f"EnvFeatures: curriculum_mode {value!r} with curriculum {instance.curriculum!r}; "
            "give both (a curriculum and its mode) or neither"
        )


@attrs.frozen(kw_only=True)
class EnvFeatures:
    """The optional features of one env (docs/envs.md, "Optional features").

    Attributes:
        curriculum: the env's curriculum object (a `Curriculum`), or None.
        curriculum_mode: None (no curriculum), "scalar" or "per_world" (`CURRICULUM_MODES`).
        state: `state_dict()` / `load_state_dict(state)` save and restore everything that
            determines the env's future (a restored env continues bit for bit).
        random_episode_start: `randomize_episode_lengths()` moves each world to a random step of
            its current episode (after `reset()`).
        cuda_graph: the control step runs as a captured CUDA graph (captured on its first
            steps, replayed after).
        eager_reason: why the step is not captured (None when `cuda_graph`), for logs.
        success_threshold: the mean undiscounted episode return that counts as solved, or None.
        action_bound: the env clamps actions to [-action_bound, action_bound]; None: it does
            not clamp (the task's policies act unbounded).
    """

    curriculum: Curriculum | None = None
    curriculum_mode: Literal["scalar", "per_world"] | None = attrs.field(
        default=None, validator=_curriculum_mode
    )
    state: bool = False
    random_episode_start: bool = False
    cuda_graph: bool = False
    eager_reason: str | None = None
    success_threshold: float | None = None
    action_bound: float | None = 1.0

    @classmethod
    def of_curriculum(cls, curriculum: Curriculum | None, **fields: object) -> EnvFeatures:
        """Features with `curriculum` and the mode its class states (`Curriculum.per_world`)."""
        if curriculum is None:
            return cls(**fields)  # type: ignore[arg-type]
        mode = "per_world" if curriculum.per_world else "scalar"
        return cls(curriculum=curriculum, curriculum_mode=mode, **fields)  # type: ignore[arg-type]
