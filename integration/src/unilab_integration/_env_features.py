"""`env_features(env)`: the one place that reads what an env offers beyond the step contract.

Runners, the evaluator, play and the startup line ask this function, never the env object.
An env that reports `features` (a unilab_envs `VecEnv`: a `unilab_envs.EnvFeatures`) gets them
as reported. A foreign env (an object with the step contract alone: `num_envs`, `device`,
`action_dim`, `observation_shapes`, `max_episode_steps`, `step_dt`, `reset()`, `step(action)`)
gets conservative defaults: a feature is on only where the env has the member that
docs/envs.md names for it (`curriculum`, `state_dict` and `load_state_dict`,
`randomize_episode_lengths`, `success_threshold`, `task.spec.action_bound`); everything else
is off (no curriculum, no saved state: a resume restarts its episodes, no random episode start,
an eager step, no success threshold, actions bounded to the contract's [-1, 1]).
docs/envs.md, "Optional features".
"""

from __future__ import annotations

from typing import Any

from unilab_envs.features import EnvFeatures

__all__ = ["FOREIGN_REASON", "env_features"]

FOREIGN_REASON = "not a unilab_envs VecEnv: it reports no features"
"""Why a foreign env's step counts as eager (the startup line prints it)."""


def env_features(env: Any) -> EnvFeatures:
    """`env.features`, or the conservative defaults of a foreign env (see the module
    docstring); TypeError for a `features` that is not an `EnvFeatures`."""
    features = getattr(env, "features", None)
    if features is None:
        return _foreign(env)
    if not isinstance(features, EnvFeatures):
        raise TypeError(
            f"{type(env).__name__}.features is a {type(features).__name__}, not a "
            "unilab_envs.EnvFeatures: report the env's optional features as one "
            "(docs/envs.md, 'Optional features'), or remove the attribute"
        )
    return features


def _foreign(env: Any) -> EnvFeatures:
    curriculum = getattr(env, "curriculum", None)
    mode = None
    if curriculum is not None:
        mode = "per_world" if getattr(curriculum, "per_world", False) else "scalar"
    spec = getattr(getattr(env, "task", None), "spec", None)
    return EnvFeatures(
        curriculum=curriculum,
        curriculum_mode=mode,
        state=_has(env, "state_dict") and _has(env, "load_state_dict"),
        random_episode_start=_has(env, "randomize_episode_lengths"),
        eager_reason=FOREIGN_REASON,
        success_threshold=_success_threshold(env, spec),
        action_bound=getattr(spec, "action_bound", 1.0) if spec is not None else 1.0,
    )


def _has(env: Any, method: str) -> bool:
    return callable(getattr(env, method, None))


def _success_threshold(env: Any, spec: Any) -> float | None:
    """The env's (or its spec's, task's or task spec's) success threshold, if any."""
    for owner in (env, getattr(env, "spec", None), getattr(env, "task", None), spec):
        value = getattr(owner, "success_threshold", None)
        if value is not None:
            return float(value)
    return None
