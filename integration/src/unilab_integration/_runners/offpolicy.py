"""Off-policy runner (FastSAC): act, store in the rank's replay shard, update, repeat.

One iteration is `runner.num_steps_per_env` env steps; after each step `learner.update()`
runs the configured number of critic updates (none before the config's `learning_starts`) (actor and temperature every k-th), each syncing its gradients
through the injected `unilab_dist.GradAllReduce`. Replay shards are rank-local: no transition
crosses ranks. The logged learner metrics are the mean over the iteration's updates.
"""

from __future__ import annotations

from typing import Any

import torch

import unilab_dist
from unilab_algos import Learner

from .._algorithms import algorithm_spec
from ._base import Runner
from .onpolicy import injected_sync

__all__ = ["OffPolicyRunner"]


class OffPolicyRunner(Runner):
    """Runs FastSAC on this rank's env (see the module docstring)."""

    def _make_learner(self) -> Learner:
        grad_sync, reduce_sum = injected_sync(self.ctx)
        return algorithm_spec(self.config.algo_name).build_learner(
            self.obs_shapes,
            int(self.env.action_dim),
            self.config.algo,
            device=self.device,
            num_envs=self.num_envs,
            world_size=self.ctx.world_size,
            grad_sync=grad_sync,
            reduce_sum=reduce_sum,
            env=self.env,
        )

    def learner_state(self) -> dict[str, Any]:
        """FastSAC's state; with `runner.checkpoints.replay` also this rank's replay shard."""
        return self.learner.state_dict(include_replay=self.config.runner.checkpoints.replay)

    def _iterate(self) -> dict[str, float]:
        learner, clock, env = self.learner, self.clock, self.env
        check = self.config.runner.check_finite
        learner.train_mode()
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}
        for _ in range(self.config.runner.num_steps_per_env):
            with unilab_dist.accounting.phase("collect"), torch.no_grad():
                obs = self.obs
                actions = learner.act(obs)
                clock.lap("inference")
                step = env.step(actions)
                clock.lap("env")
                if check:
                    self.guard_step(step)
                learner.observe(obs, actions, step)
                self.stats.add(step)
                self.obs = step.select("obs")
                clock.lap("storage")
            with unilab_dist.accounting.phase("update"):
                metrics = learner.update()
            clock.lap("update")
            for key, value in metrics.items():
                if isinstance(value, int | float):
                    sums[key] = sums.get(key, 0.0) + float(value)
                    counts[key] = counts.get(key, 0) + 1
        # counts add up over the iteration; losses are averaged over the calls that made them
        totals = ("updates", "actor_updates", "collectives")
        return {k: (v if k in totals else v / counts[k]) for k, v in sums.items()}
