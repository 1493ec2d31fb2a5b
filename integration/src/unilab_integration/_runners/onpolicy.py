"""On-policy runner (PPO, Distillation): collect T steps per env, compute returns, update.

Per iteration on each rank: `T = runner.num_steps_per_env` env steps (no collective, except
the observation normalizer's global merge inside `process_env_step` when the algorithm
config asks for global statistics), `compute_returns`, then `learner.update()` with the
gradient sync injected (`unilab_dist.GradAllReduce`, one flat all-reduce per mini-batch) and
`unilab_dist.sum_reducer` for global advantages/normalizers. The learner decides how many
collectives its settings cost; the runner logs the count from the accounting.
"""

from __future__ import annotations

from typing import Any

import attrs
import torch

import unilab_dist
from unilab_algos import Learner

from .._algorithms import algorithm_spec
from .._checkpoint import load_teacher_checkpoint
from .._config import TrainConfig
from ._base import Runner

__all__ = ["OnPolicyRunner"]


def injected_sync(ctx: unilab_dist.DistContext) -> tuple[Any, Any]:
    """(grad_sync, reduce_sum) for the learners: unilab_dist's, or None in a run of one."""
    if not ctx.is_distributed:
        return None, None
    return unilab_dist.GradAllReduce(), unilab_dist.sum_reducer()


class OnPolicyRunner(Runner):
    """Runs PPO or Distillation on this rank's env (see the module docstring)."""

    def _make_learner(self) -> Learner:
        grad_sync, reduce_sum = injected_sync(self.ctx)
        spec = algorithm_spec(self.config.algo_name)
        algo = self.config.algo
        teacher = None
        if spec.teacher:
            teacher = self._teacher_checkpoint()
            # the teacher network is the PPO actor it was trained as
            ppo = TrainConfig.from_dict(teacher["config"]).algo
            algo = attrs.evolve(algo, teacher=ppo.actor, teacher_obs=ppo.actor_obs)
            # checkpoints record the config the learner was built with (its teacher network)
            self.config = attrs.evolve(self.config, algo=algo)
        learner = spec.build_learner(
            self.obs_shapes,
            int(self.env.action_dim),
            algo,
            device=self.device,
            num_envs=self.num_envs,
            world_size=self.ctx.world_size,
            grad_sync=grad_sync,
            reduce_sum=reduce_sum,
            env=self.env,
        )
        if teacher is not None:
            learner.load_teacher(teacher["learner"][0])
        learner.init_storage(self.num_envs, self.config.runner.num_steps_per_env)
        return learner

    def _teacher_checkpoint(self) -> dict:
        return load_teacher_checkpoint(self.config.runner.teacher, self.config.task)

    def _iterate(self) -> dict[str, float]:
        learner, clock, env = self.learner, self.clock, self.env
        check = self.config.runner.check_finite
        learner.train_mode()
        with unilab_dist.accounting.phase("collect"), torch.no_grad():
            for _ in range(self.config.runner.num_steps_per_env):
                actions = learner.act(self.obs)
                clock.lap("inference")
                step = env.step(actions)
                clock.lap("env")
                if check:
                    self.guard_step(step)
                learner.process_env_step(step)
                self.stats.add(step)
                self.obs = step.select("obs")
                clock.lap("storage")
            learner.compute_returns(self.obs)
            clock.lap("returns")
        with unilab_dist.accounting.phase("update"):
            metrics = learner.update()
        clock.lap("update")
        return dict(metrics)
