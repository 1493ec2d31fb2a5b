"""Periodic evaluation of the deterministic policy (`runner.eval.interval`).

Training episodes are played by the exploring policy (PPO and FastSAC sample their actions),
so their returns understate what the learned policy does: on UniLab's humanoid, FastSAC's
training return stays near 17 while its deterministic policy earns over 30
(docs/benchmarks/time-to-threshold.md). Every `runner.eval.interval` iterations each rank plays the
learner's `policy_module()` (the action mean, clamped to the task's `action_bound` unless that
is None: what `unilab play` runs) in an env of its own for one full episode length from a
reset (new initial states each time, drawn from the eval env's own random stream), at the
training env's curriculum level, and
counts the first episode of every world. The sums ride on the iteration's metrics
reduction (no extra collective); the runner logs `eval/return`, `eval/length`, `eval/count`,
`eval_term/<term>` and `perf/eval_s`.

The evaluation touches nothing the training uses: its own env (own seed, own worlds), no
random numbers from torch, no normalizer update; a run with evaluations trains exactly as one
without.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from .._env_features import env_features
from .._envs import make_env
from .._episodes import EpisodeStats, means_from_sums
from .._rollout import PolicyStepper, actor_groups, rollout

__all__ = ["EVAL_SEED_OFFSET", "PolicyEvaluator", "eval_means"]

EVAL_SEED_OFFSET = 7_919
"""Added to `runner.seed` for the evaluation envs (their worlds differ from training's)."""


class PolicyEvaluator:
    """One rank's evaluation env and the learner's deterministic policy."""

    def __init__(self, config: Any, ctx: Any, learner: Any, train_env: Any) -> None:
        per_rank = config.env.per_rank(ctx.world_size)
        self.num_envs = config.runner.eval.envs or min(per_rank, 1024)
        self.env = make_env(config, self.num_envs, ctx, seed_offset=EVAL_SEED_OFFSET)
        self.learner = learner
        self.groups = actor_groups(config.algo)
        # the training env's curriculum level, copied before every evaluation
        self.source = env_features(train_env).curriculum
        self.target = env_features(self.env).curriculum
        self.steps = int(self.env.max_episode_steps)
        self.device = ctx.device

    def _sync_curriculum(self) -> None:
        if self.source is not None and self.target is not None:
            self.target.load_state_dict(self.source.state_dict())

    @torch.no_grad()
    def run(self) -> dict[str, float]:
        """Play one episode length; this rank's sums over the first episode of every world."""
        start = time.perf_counter()
        self._sync_curriculum()
        # built anew each time: PPO's policy module holds copies of the current parameters
        policy = PolicyStepper(self.learner.policy_module(), self.num_envs, self.device)
        episodes = EpisodeStats(self.device, num_envs=self.num_envs, first_only=True)
        for _, step in rollout(self.env, policy, self.groups, self.env.reset(), self.steps):
            episodes.add(step)
        out = episodes.local_sums("eval")  # the one host sync of the evaluation
        out["perf/eval_s"] = time.perf_counter() - start
        return out


def eval_means(summed: dict[str, float]) -> dict[str, float]:
    """Reduced evaluation sums -> `eval/count`, `eval/return`, `eval/length`, `eval_term/<t>`."""
    return means_from_sums(summed, prefix="eval")
