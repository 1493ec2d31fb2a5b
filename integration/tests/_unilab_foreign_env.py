"""Imported by every worker through `runner.imports` in the foreign-env test: the runner's env
becomes `ForeignEnv`, a plain object with the step contract alone (no `features`, none of the
optional methods) around a cart-pole `VecEnv`.

The launcher process imports it too (to validate tasks); there RANK is unset and nothing
happens. It is a test fixture, not part of the package.
"""

import os


class ForeignEnv:
    """The step contract only: `num_envs`, `device`, `action_dim`, `observation_shapes`,
    `max_episode_steps`, `step_dt`, `reset()`, `step(action)`."""

    def __init__(self, env):
        self._env = env
        self.num_envs = env.num_envs
        self.device = env.device
        self.action_dim = env.action_dim
        self.observation_shapes = dict(env.observation_shapes)
        self.max_episode_steps = env.max_episode_steps
        self.step_dt = env.step_dt

    def reset(self):
        return self._env.reset()

    def step(self, action):
        return self._env.step(action)


if os.environ.get("RANK") is not None:
    import unilab_integration._runners._base as base

    _make_env = base.make_env
    base.make_env = lambda *args, **kwargs: ForeignEnv(_make_env(*args, **kwargs))
