"""Imported through `runner.imports` in the user-task tests: the cart-pole registered under two
user names, `user-cartpole` without defaults and `user-cartpole-small` with its own."""

import attrs

import unilab_envs
from unilab_envs.tasks.cartpole import make_cartpole_balance
from unilab_integration import TrainConfig, register_task_defaults

unilab_envs.register_task("user-cartpole", make_cartpole_balance, overwrite=True)
unilab_envs.register_task("user-cartpole-small", make_cartpole_balance, overwrite=True)


def small(cfg: TrainConfig) -> TrainConfig:
    return attrs.evolve(
        cfg,
        env=attrs.evolve(cfg.env, num_envs=8),
        runner=attrs.evolve(cfg.runner, num_steps_per_env=4),
    )


register_task_defaults("user-cartpole-small", small, overwrite=True)
