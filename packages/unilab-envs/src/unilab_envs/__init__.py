"""Vectorized MuJoCo Warp environments and tasks with TensorDict input and output.

import torch, unilab_envs
env = unilab_envs.make("cartpole-balance", num_envs=64, device="cpu", seed=0)
td = env.reset()                       # td["obs", "policy"]: float32 [64, 5]
td = env.step(torch.zeros(64, env.action_dim))

Importing `unilab_envs` loads nothing heavy: each public name below is imported from its module
on first use (`unilab_envs.make` loads torch, warp and MuJoCo Warp), so a light submodule such
as `unilab_envs.robot_files` answers without them.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from unilab_envs._core.env import EnvConfig as EnvConfig
    from unilab_envs._core.env import VecEnv as VecEnv
    from unilab_envs._core.rng import world_rng as world_rng
    from unilab_envs._core.task import Capacity as Capacity
    from unilab_envs._core.task import Task as Task
    from unilab_envs._core.task import TaskContext as TaskContext
    from unilab_envs._core.task import TaskSpec as TaskSpec
    from unilab_envs._core.task import observation_term as observation_term
    from unilab_envs.curriculum import Curriculum as Curriculum
    from unilab_envs.curriculum import LevelCurriculum as LevelCurriculum
    from unilab_envs.features import EnvFeatures as EnvFeatures
    from unilab_envs.randomization import DomainRandomization as DomainRandomization
    from unilab_envs.registry import check_overrides as check_overrides
    from unilab_envs.registry import list_tasks as list_tasks
    from unilab_envs.registry import make as make
    from unilab_envs.registry import make_task as make_task
    from unilab_envs.registry import register_task as register_task
    from unilab_envs.registry import task_mirror_maps as task_mirror_maps
    from unilab_envs.render import Renderer as Renderer
    from unilab_envs.render import RendererUnavailableError as RendererUnavailableError
    from unilab_envs.tasks.robots import RobotConfig as RobotConfig
    from unilab_envs.tasks.velocity import VelocityConfig as VelocityConfig
    from unilab_envs.tasks.velocity import VelocityTask as VelocityTask

# public name -> the module that defines it
_EXPORTS = {
    "EnvConfig": "unilab_envs._core.env",
    "VecEnv": "unilab_envs._core.env",
    "world_rng": "unilab_envs._core.rng",
    "Capacity": "unilab_envs._core.task",
    "Task": "unilab_envs._core.task",
    "TaskContext": "unilab_envs._core.task",
    "TaskSpec": "unilab_envs._core.task",
    "observation_term": "unilab_envs._core.task",
    "Curriculum": "unilab_envs.curriculum",
    "LevelCurriculum": "unilab_envs.curriculum",
    "EnvFeatures": "unilab_envs.features",
    "DomainRandomization": "unilab_envs.randomization",
    "check_overrides": "unilab_envs.registry",
    "list_tasks": "unilab_envs.registry",
    "make": "unilab_envs.registry",
    "make_task": "unilab_envs.registry",
    "register_task": "unilab_envs.registry",
    "task_mirror_maps": "unilab_envs.registry",
    "Renderer": "unilab_envs.render",
    "RendererUnavailableError": "unilab_envs.render",
    "RobotConfig": "unilab_envs.tasks.robots",
    "VelocityConfig": "unilab_envs.tasks.velocity",
    "VelocityTask": "unilab_envs.tasks.velocity",
}

__version__ = "0.1.0"

__all__ = [
    "Capacity",
    "Curriculum",
    "DomainRandomization",
    "EnvConfig",
    "EnvFeatures",
    "LevelCurriculum",
    "Renderer",
    "RendererUnavailableError",
    "RobotConfig",
    "Task",
    "TaskContext",
    "TaskSpec",
    "VecEnv",
    "VelocityConfig",
    "VelocityTask",
    "__version__",
    "check_overrides",
    "list_tasks",
    "make",
    "make_task",
    "observation_term",
    "register_task",
    "task_mirror_maps",
    "world_rng",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:  # a submodule
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
