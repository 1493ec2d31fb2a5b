"""The runner loop the on-policy and off-policy runners share: iterate, reduce, log, save.

A runner lives in one worker process (one rank) and calls, per iteration: its `_iterate`
(collect and update), the guards, the evaluator, the replica check, one metrics reduction
(`reduce_scalars`, float64), the `CurriculumSync` (`_curriculum`) and, every
`runner.checkpoints.interval` iterations, the `Checkpointer` (`_checkpointer`). What the env offers
beyond the step contract comes from `env_features` alone. Collectives (all through
unilab_dist, so the accounting sees them) happen at: the state broadcast at start and after a
load; inside the learner's update (gradient sync, global normalizers and advantages); the
curriculum sync (see `_curriculum`); the metrics reduction; and a checkpoint, which gathers
every rank's RNG, env and curriculum state to rank 0.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDict

import unilab_dist
from unilab_algos import Learner
from unilab_dist import DistContext

from .._checkpoint import CheckpointError
from .._config import TrainConfig
from .._env_features import env_features
from .._envs import make_env
from .._logger import MetricLogger
from ._budget import UNTIL_SOLVED_CAP, UNTIL_SOLVED_SOURCE, Budget, plan_budget
from ._checkpointer import Checkpointer, network_shapes
from ._curriculum import CurriculumSync
from ._eval import PolicyEvaluator, eval_means
from ._guards import (
    NonFiniteError,
    ObservationGuard,
    check_losses,
    check_modules,
    check_replicas,
    replica_state,
)
from ._profile import PhaseClock
from ._startup import startup_line
from ._stats import EpisodeStats, learner_key, means_from_sums

__all__ = ["Runner", "RunResult", "replica_state"]


def iteration_budget(config: TrainConfig, world_size: int) -> int | None:
    """The iteration a new run stops at (see `plan_budget` for resumed runs)."""
    return plan_budget(config, world_size).iterations


class RunResult(dict):
    """What a worker returns: iterations, env steps, last metrics, solved flag, checkpoint path,
    and where this session started (`start_iteration`, `start_env_steps_global`)."""


class Runner:
    """Base of `OnPolicyRunner` and `OffPolicyRunner` (subclasses define `_make_learner` and
    `_iterate`)."""

    def __init__(self, config: TrainConfig, ctx: DistContext, run_dir: str | Path) -> None:
        self.config = config
        self.ctx = ctx
        self.run_dir = Path(run_dir)
        self.device = ctx.device
        self.num_envs = config.env.per_rank(ctx.world_size)
        self.env = make_env(config, self.num_envs, ctx)
        self.obs_shapes = {g: tuple(s) for g, s in self.env.observation_shapes.items()}
        self.features = env_features(self.env)  # what the env offers beyond the step contract
        self.threshold = self.features.success_threshold
        # runner.profile: phase laps, and the collectives timed by unilab_dist on >1 rank
        self.clock = PhaseClock(self.device, config.runner.profile, ctx.world_size > 1)
        self.learner: Learner = self._make_learner()
        self.iteration = 0
        self.env_steps_rank = 0
        self.env_steps_global = 0
        self.solved_streak = 0
        self.obs = self.env.reset().select("obs")
        # runner.random_episode_start: the worlds start at random steps (until a resume
        # restores the env's saved counters); the announce line says so
        self.random_start = config.runner.random_episode_start
        if self.random_start:
            if not self.features.random_episode_start:
                raise ValueError(
                    f"runner.random_episode_start: the env of task '{config.task}' "
                    f"({type(self.env).__name__}) has no randomize_episode_lengths() (its "
                    "features.random_episode_start is False); set "
                    "runner.random_episode_start=false"
                )
            self.env.randomize_episode_lengths()
        self.stats = EpisodeStats(self.device)
        self.guard = ObservationGuard(self.obs_shapes, self.device)
        self.plan: Budget = plan_budget(config, ctx.world_size)
        self.budget = self.plan.iterations
        self.logger: MetricLogger | None = None
        self.curriculum = CurriculumSync(self.features, config.runner.curriculum_sync, ctx)
        # after the learner: an on-policy runner records its teacher network in self.config
        self.checkpointer = Checkpointer(
            self.config, ctx, self.run_dir, self.env, self.features, self.curriculum, self.num_envs
        )
        self.evaluator = (
            PolicyEvaluator(config, ctx, self.learner, self.env)
            if config.runner.eval.interval
            else None
        )

    # --- to implement ------------------------------------------------------------------------
    def _make_learner(self) -> Learner:
        raise NotImplementedError

    def _iterate(self) -> dict[str, float]:
        """Collect and update once; return the learner's (local) metrics."""
        raise NotImplementedError

    def guard_step(self, step: TensorDict) -> None:
        """Record the step's observations; on CPU (no sync cost) stop at once on NaN/inf."""
        self.guard.observe(step["obs"])
        if self.device.type == "cpu":
            self.guard.check(rank=self.ctx.rank, iteration=self.iteration + 1)

    # --- state sync ------------------------------------------------------------------------
    def broadcast_state(self) -> None:
        """Copy rank 0's replicated modules (parameters and buffers) to every rank."""
        with unilab_dist.accounting.phase("broadcast"):
            unilab_dist.broadcast_module_state(self.learner.replicated_modules())

    def network_shapes(self) -> dict[str, tuple[int, ...]]:
        """The shape fingerprint checked on resume (`_checkpointer.network_shapes`)."""
        return network_shapes(
            self.obs_shapes, int(self.env.action_dim), self.learner.replicated_modules()
        )

    # --- the loop --------------------------------------------------------------------------
    def run(self) -> RunResult:
        """Train until the budget is spent or the task is solved; checkpoint at the end."""
        cfg = self.config.runner
        if self.ctx.is_main:
            self.logger = MetricLogger(
                self.run_dir,
                total=self.budget,
                initial=self.iteration,
                initial_env_steps=self.env_steps_global,
                sinks=cfg.logging.loggers,
                config=self.config,
                progress=cfg.logging.progress,
                eta=self.plan.source != UNTIL_SOLVED_SOURCE,
            )
            self._announce()
        metrics: dict[str, float] = {}
        solved = False
        start_iteration, start_steps = self.iteration, self.env_steps_global
        if cfg.check_finite:
            for group in self.obs_shapes:
                if not bool(torch.isfinite(self.obs["obs", group]).all()):
                    raise NonFiniteError(
                        f"non-finite observation in group '{group}' on rank {self.ctx.rank} "
                        f"at iteration {self.iteration} (before the first step)"
                    )
        failed = True
        try:
            while self.budget is None or self.iteration < self.budget:
                metrics = self._one_iteration()
                if cfg.until_solved and self._solved(metrics):
                    solved = True
                    break
                if self.iteration % cfg.checkpoints.interval == 0:
                    self.save()
            if self.iteration > start_iteration and self.iteration not in self.checkpointer.written:
                self.save()  # never a checkpoint that no new iteration produced
            failed = False
        finally:
            if self.logger is not None:
                if solved:
                    what = "evaluations" if self.evaluator is not None else "iterations"
                    self.logger.write(
                        f"solved: mean return {metrics[self.solved_metric]:.4g} >= "
                        f"{self.threshold} for {cfg.solved_patience} {what} "
                        f"(iteration {self.iteration})"
                    )
                self.logger.close(failed=failed)
        return RunResult(
            iterations=self.iteration,
            env_steps_global=self.env_steps_global,
            env_steps_per_rank=self.env_steps_rank,
            solved=solved,
            metrics=metrics,
            checkpoint=self.checkpointer.last,
            start_iteration=start_iteration,
            start_env_steps_global=start_steps,
        )

    def _announce(self) -> None:
        """Rank 0's first two lines: the run, and the system and how it runs (`startup_line`)."""
        assert self.logger is not None
        w = self.ctx.world_size
        start = (
            "worlds start at random steps of their first episode | " if self.random_start else ""
        )
        self.logger.write(
            f"task {self.config.task} | algo {self.config.algo_name} ({self.config.preset}) | "
            f"{w} rank(s) on {self.device.type} | envs {self.num_envs} per rank, "
            f"{self.num_envs * w} global (scope {self.config.env.scope}) | "
            f"{self.plan.describe(self.iteration)} | "
            f"{_precision(self.config.runner)}"
            f"{start}"
            f"{_evaluation(self.config.runner)}run dir {self.run_dir}"
        )
        self.logger.write(startup_line(self.device, self.env, self.learner))
        if self.clock.enabled:
            self.logger.write(
                "runner.profile: the device is synchronized between phases, so iterations are "
                "slower than unprofiled ones; profile/<phase>_s are rank 0's own seconds"
            )

    @property
    def solved_metric(self) -> str:
        """What `until_solved` judges: the evaluations when there are any, else training."""
        return "eval/return" if self.evaluator is not None else "episode/return"

    def _solved(self, metrics: dict[str, float]) -> bool:
        key = self.solved_metric
        if key not in metrics:  # no evaluation in this iteration: the streak stands
            return False
        ret = metrics[key]
        if self.threshold is not None and math.isfinite(ret) and ret >= self.threshold:
            self.solved_streak += 1
        else:
            self.solved_streak = 0
        return self.solved_streak >= self.config.runner.solved_patience

    def _one_iteration(self) -> dict[str, float]:
        before = unilab_dist.accounting.snapshot()
        start = self.clock.start()
        self.stats.reset()
        self.guard.reset()
        with self.clock.collectives():
            learner_metrics = self._iterate()
        self.iteration += 1
        if self.config.runner.check_finite:
            self.guard.check(rank=self.ctx.rank, iteration=self.iteration)
            check_losses(learner_metrics, rank=self.ctx.rank, iteration=self.iteration)
            modules = self.learner.replicated_modules()
            check_modules(
                modules,
                rank=self.ctx.rank,
                iteration=self.iteration,
                names=[type(m).__name__ for m in modules],
            )
        steps_rank = self.config.runner.num_steps_per_env * self.num_envs
        self.env_steps_rank += steps_rank
        self.env_steps_global += steps_rank * self.ctx.world_size
        elapsed = time.perf_counter() - start
        after = unilab_dist.accounting.snapshot()
        interval = self.config.runner.eval.interval
        evaluation = (
            self.evaluator.run()
            if self.evaluator is not None and self.iteration % interval == 0
            else None
        )
        replicas_s = check_replicas(
            self.learner, self.iteration, self.config.runner.check_replicas_interval
        )
        metrics, global_means, local_means = self._reduce(learner_metrics, evaluation)
        if self.curriculum.active:
            # host seconds: `global` and `rank0` wait for their collective's result there
            sync_start = time.perf_counter()
            self.curriculum.sync(global_means, local_means)
            metrics["perf/curriculum_sync_s"] = time.perf_counter() - sync_start
        # the curriculum sync's collectives count in this iteration
        synced = unilab_dist.accounting.snapshot()
        if "curriculum" in synced:
            after = {**after, "curriculum": synced["curriculum"]}
        phases = {
            name: (
                after[name]["collectives"] - before.get(name, {}).get("collectives", 0),
                after[name]["bytes"] - before.get(name, {}).get("bytes", 0),
            )
            for name in after
            if name != "log"
        }
        metrics["dist/collectives"] = float(sum(c for c, _ in phases.values()))
        metrics["dist/bytes"] = float(sum(b for _, b in phases.values()))
        for name, (count, nbytes) in phases.items():
            metrics[f"dist/{name}/collectives"] = float(count)
            metrics[f"dist/{name}/bytes"] = float(nbytes)
        metrics["env_steps/global"] = float(self.env_steps_global)
        metrics["env_steps/per_rank"] = float(self.env_steps_rank)
        metrics["perf/iteration_s"] = elapsed
        metrics["perf/steps_per_s"] = steps_rank * self.ctx.world_size / elapsed
        if replicas_s is not None:
            metrics["perf/check_replicas_s"] = replicas_s
        metrics.update(self.clock.metrics(elapsed))  # this rank's own, not reduced
        if self.logger is not None:
            self.logger.log(self.iteration, metrics)
        return metrics

    def _reduce(
        self, learner_metrics: dict[str, float], evaluation: dict[str, float] | None = None
    ) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
        """One float64 collective: episode sums (summed), learner metrics (averaged), the
        curriculum's entries and, in an evaluation iteration (the same on every rank), the
        evaluation's sums. Returns (metrics, global episode means, this rank's means)."""
        local = self.stats.local_sums()
        learner_keys = sorted(k for k, v in learner_metrics.items() if isinstance(v, int | float))
        payload = dict(local)
        if evaluation is not None:
            payload.update(evaluation)
        for key in learner_keys:
            payload[f"learner/{key}"] = float(learner_metrics[key])
        payload.update(self.curriculum.payload())
        with unilab_dist.accounting.phase("log"):
            summed = unilab_dist.reduce_scalars(payload, op="sum")
        global_means = means_from_sums({k: summed[k] for k in local})
        w = self.ctx.world_size
        metrics = dict(global_means)
        for key in learner_keys:
            metrics[learner_key(key)] = summed[f"learner/{key}"] / w
        metrics.update(self.curriculum.metrics(summed))
        if evaluation is not None:
            metrics.update(eval_means({k: summed[k] for k in evaluation}))
            metrics["perf/eval_s"] = summed["perf/eval_s"] / w  # mean over ranks
        return metrics, global_means, means_from_sums(local)

    # --- checkpoints -------------------------------------------------------------------------
    def learner_state(self) -> dict[str, Any]:
        """The learner's state as checkpoints hold it (runners add what their learner offers)."""
        return self.learner.state_dict()

    def save(self) -> str | None:
        """Write a checkpoint (all ranks call this; rank 0 writes); its path on rank 0."""
        counters = {
            "env_steps_per_rank": self.env_steps_rank,
            "env_steps_global": self.env_steps_global,
            "solved_streak": self.solved_streak,
        }
        return self.checkpointer.save(
            self.iteration,
            counters,
            self.obs,
            self.learner_state(),
            self.network_shapes(),
            self.logger,
        )

    @property
    def last_checkpoint(self) -> str | None:
        """The path of the last checkpoint rank 0 wrote in this session (None elsewhere)."""
        return self.checkpointer.last

    def load(self, path: str | Path) -> None:
        """Resume from a checkpoint: same world size continues exactly; another one is logged."""
        resumed = self.checkpointer.load(
            path, self.learner, self.network_shapes(), self.broadcast_state
        )
        self.iteration = resumed.iteration
        self.env_steps_global = resumed.counters["env_steps_global"]
        self.env_steps_rank = resumed.counters["env_steps_per_rank"]
        self.solved_streak = resumed.counters["solved_streak"]
        self.plan = plan_budget(
            self.config,
            self.ctx.world_size,
            iteration=self.iteration,
            env_steps_global=self.env_steps_global,
        )
        self.budget = self.plan.iterations
        if resumed.obs is not None:
            self.obs = resumed.obs
        if resumed.env_restored:
            self.random_start = False


def _precision(runner: Any) -> str:
    """The announce line's part on float32 matmuls, when they are not full float32."""
    precision = runner.matmul_precision
    if precision == "highest":
        return ""
    kind = "TF32" if precision == "high" else "bfloat16"
    return f"matmul precision {precision} ({kind} on GPUs) | "


def _evaluation(runner: Any) -> str:
    """The announce line's part on evaluations and on what `until_solved` judges."""
    if runner.eval.interval:
        judge = ", judged by --until-solved" if runner.until_solved else ""
        return f"deterministic policy evaluated every {runner.eval.interval} iterations{judge} | "
    if runner.until_solved:
        return "until solved: judged on the training episodes (--eval-interval for the policy's) | "
    return ""


__all__ += ["UNTIL_SOLVED_CAP", "CheckpointError", "iteration_budget"]
