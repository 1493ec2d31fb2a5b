"""Task registry: `make(name, num_envs=..., ...)`, `list_tasks()`, `register_task(...)`.

Listing and registering import no torch, warp or MuJoCo (`unilab list` answers at once); the
env layer is imported by `make`, `make_task` and `check_overrides`.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from unilab_envs.tasks import BUILTIN_TASKS

if TYPE_CHECKING:
    from unilab_envs._core.env import VecEnv
    from unilab_envs._core.task import Task

__all__ = [
    "TERM_OVERRIDES",
    "check_overrides",
    "list_tasks",
    "make",
    "make_task",
    "register_task",
    "task_mirror_maps",
    "term_tasks",
]

TaskFactory = Callable[..., "Task"]
_REGISTERED: dict[str, TaskFactory] = {}

TERM_OVERRIDES = ("observations", "rewards", "terminations", "commands", "events", "curricula")
"""The overrides that change a task's terms (`unilab_envs.terms.overrides`): only the tasks
composed of terms take them, those whose factory names them as parameters."""


def register_task(name: str, factory: TaskFactory, *, overwrite: bool = False) -> None:
    """Register `factory(**overrides) -> Task` under `name` (ValueError if taken). A task
    composed of terms takes term overrides when its factory names the parameters
    `observations`, `rewards`, `terminations` (and, where it has them, `commands`, `events`,
    `curricula`; `TERM_OVERRIDES`)."""
    if not callable(factory):
        raise TypeError(f"factory for {name!r} is not callable: {factory!r}")
    if not overwrite and (name in _REGISTERED or name in BUILTIN_TASKS):
        raise ValueError(f"task {name!r} is already registered (pass overwrite=True)")
    _REGISTERED[name] = factory


def list_tasks() -> list[str]:
    """Names of every task `make` accepts, sorted."""
    return sorted({*BUILTIN_TASKS, *_REGISTERED})


def _factory(name: str) -> TaskFactory:
    if name in _REGISTERED:
        return _REGISTERED[name]
    if name not in BUILTIN_TASKS:
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(list_tasks())}")
    module, attr = BUILTIN_TASKS[name].split(":")
    return getattr(importlib.import_module(module), attr)


def _takes_terms(factory: TaskFactory) -> bool:
    return set(TERM_OVERRIDES[:3]) <= set(inspect.signature(factory).parameters)


def term_tasks() -> list[str]:
    """The tasks that take term overrides (`TERM_OVERRIDES`): those composed of terms."""
    return [name for name in list_tasks() if _takes_terms(_factory(name))]


def make_task(name: str, **overrides: Any) -> Task:
    """Build the task `name` alone (no env) with keyword overrides for its factory."""
    factory = _factory(name)
    given = [k for k in TERM_OVERRIDES if k in overrides]
    if given and not _takes_terms(factory):
        raise ValueError(
            f"task {name!r} is not composed of terms: it takes no {given[0]} overrides (the "
            f"tasks that do: {', '.join(term_tasks())})"
        )
    kinds = set(inspect.signature(factory).parameters)
    for kind in given:
        if kind not in kinds:
            raise ValueError(f"task {name!r} has no {kind} terms: it takes no {kind} overrides")
    params = inspect.signature(factory).parameters.values()
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        known = {p.name for p in params}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"task {name!r} has no option(s) {unknown}; options: {sorted(known)}")
    return factory(**overrides)


def make(
    name: str, *, num_envs: int, device: str = "cpu", seed: int = 0, **overrides: Any
) -> VecEnv:
    """Make a `VecEnv` running task `name` in `num_envs` worlds on `device`.

    `overrides` that name an `EnvConfig` field (randomization, check_actions, cuda_graph,
    copy_outputs, on_overflow, overflow_check_interval) configure the env; the rest go to the
    task factory (e.g. `max_episode_steps=200`). Unknown names raise ValueError.
    """
    from unilab_envs._core.env import EnvConfig, VecEnv

    env_kw, task_kw = _split(overrides)
    task = make_task(name, **task_kw)
    cfg = EnvConfig(num_envs=num_envs, device=str(device), seed=seed, **env_kw)
    return VecEnv(task, cfg)


def check_overrides(name: str, **overrides: Any) -> None:
    """Raise what `make(name, ..., **overrides)` would raise about `overrides` (an unknown name,
    a value its task config or `EnvConfig` refuses) without building the model or an env: the
    task is made alone (`make_task`, which also looks for a robot's MJCF) and the env options
    go through `EnvConfig`'s own checks."""
    from unilab_envs._core.env import EnvConfig

    env_kw, task_kw = _split(overrides)
    EnvConfig(num_envs=1, **env_kw)
    make_task(name, **task_kw)


def task_mirror_maps(name: str, **overrides: Any) -> Any:
    """The left/right mirror maps (`unilab_envs.terms.mirror.MirrorMaps`) of task `name` as
    `make(name, ..., **overrides)` would build it (its term overrides included), without
    building an env: a ValueError naming the task, or the term without a mirror rule, when it
    has none. What a learner's symmetry option needs, checkable before any worker starts."""
    return make_task(name, **_split(overrides)[1]).mirror_maps()


def _split(overrides: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(`EnvConfig` options, task factory options) of `make`'s overrides."""
    import attrs

    from unilab_envs._core.env import EnvConfig

    options = {f.name for f in attrs.fields(EnvConfig)} - {"num_envs", "device", "seed"}
    env_kw = {k: v for k, v in overrides.items() if k in options}
    return env_kw, {k: v for k, v in overrides.items() if k not in options}
