"""Built-in tasks, registered by name.

`BUILTIN_TASKS` maps a task name to "module:factory" (imported on first use, so a task's
kernels are only compiled when it is made). A factory takes keyword overrides and returns a
`unilab_envs.Task`. To add a built-in task, add one line here; third parties call
`unilab_envs.register_task(name, factory)` instead.
"""

from __future__ import annotations

BUILTIN_TASKS: dict[str, str] = {
    "cartpole-balance": "unilab_envs.tasks.cartpole:make_cartpole_balance",
    "cartpole-swingup": "unilab_envs.tasks.cartpole:make_cartpole_swingup",
    "quadruped-velocity": "unilab_envs.tasks.velocity:make_quadruped_velocity",
    "humanoid-velocity": "unilab_envs.tasks.velocity:make_humanoid_velocity",
    "go1-velocity-flat": "unilab_envs.tasks.mjlab_velocity:make_go1_velocity_flat",
    "g1-velocity-flat": "unilab_envs.tasks.mjlab_velocity:make_g1_velocity_flat",
    "go1-velocity-rough": "unilab_envs.tasks.mjlab_velocity:make_go1_velocity_rough",
    "g1-velocity-rough": "unilab_envs.tasks.mjlab_velocity:make_g1_velocity_rough",
}

__all__ = ["BUILTIN_TASKS"]
