"""What the on-policy and off-policy runners share: env, learner, budget, sync, logs, checkpoints.

A runner lives in one worker process (one rank). Collectives (all through unilab_dist, so the
accounting sees them) happen at: the state broadcast at start and after a load; inside the
learner's update (gradient sync, global normalizers and advantages); the curriculum sync
(`rank0`: one object broadcast, `global`: inside the metrics reduction; a per-world
curriculum such as terrain levels: `local` none, `global` one all-reduce of its per-slot
outcome counts, `rank0` one broadcast of rank 0's levels); and one metrics reduction per
iteration (`reduce_scalars`, float64). A checkpoint gathers every rank's RNG,
env and curriculum state to rank 0.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from tensordict import TensorDict

import unilab_dist
from unilab_algos import Learner
from unilab_dist import DistContext

from .._algorithms import algorithm_spec
from .._checkpoint import (
    CheckpointError,
    capture_rng,
    check_compatible,
    load_checkpoint,
    plain_tensordict,
    prune_checkpoints,
    restore_rng,
    save_checkpoint,
    tensordict_from_plain,
)
from .._config import TrainConfig
from .._envs import make_env, success_threshold
from .._logger import MetricLogger
from .._rundir import LOCK, holder_alive
from ._budget import UNTIL_SOLVED_CAP, UNTIL_SOLVED_SOURCE, Budget, plan_budget
from ._eval import PolicyEvaluator, eval_means
from ._guards import NonFiniteError, ObservationGuard, check_losses, check_modules
from ._profile import PhaseTimer, update_captured
from ._startup import startup_line
from ._stats import EpisodeStats, curriculum_metrics, means_from_sums

__all__ = ["Runner", "RunResult"]


def _gather_to_main(obj: Any, ctx: DistContext) -> list[Any] | None:
    """Every rank's `obj` on rank 0 (None elsewhere). Plain torch gather_object: checkpoints only."""
    if not unilab_dist.is_distributed():
        return [obj]
    out = [None] * ctx.world_size if ctx.is_main else None
    dist.gather_object(obj, out, dst=0)
    return out


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
        self.threshold = success_threshold(self.env)
        # runner.profile: phase laps, the env's profiled step, the timed collectives
        self.timer = PhaseTimer(self.device, config.runner.profile, self.env)
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
            randomize = getattr(self.env, "randomize_episode_lengths", None)
            if randomize is None:
                raise ValueError(
                    f"runner.random_episode_start: the env of task '{config.task}' "
                    f"({type(self.env).__name__}) has no randomize_episode_lengths(); set "
                    "runner.random_episode_start=false"
                )
            randomize()
        self.stats = EpisodeStats(self.device)
        self.guard = ObservationGuard(self.obs_shapes, self.device)
        self.plan: Budget = plan_budget(config, ctx.world_size)
        self.budget = self.plan.iterations
        self.written: list[int] = []  # iterations of the checkpoints this session wrote
        self.logger: MetricLogger | None = None
        self.last_checkpoint: str | None = None
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
        """The shape fingerprint checked on resume: observations, actions, every module tensor."""
        shapes: dict[str, tuple[int, ...]] = {
            f"env.obs.{g}": tuple(s) for g, s in sorted(self.obs_shapes.items())
        }
        shapes["env.action_dim"] = (int(self.env.action_dim),)
        for i, module in enumerate(self.learner.replicated_modules()):
            for key, value in module.state_dict().items():
                if isinstance(value, torch.Tensor):
                    shapes[f"{type(module).__name__}[{i}].{key}"] = tuple(value.shape)
        return shapes

    @property
    def curriculum(self) -> Any:
        return getattr(self.env, "curriculum", None)

    def _sync_curriculum(self, global_means: dict[str, float], local_means: dict[str, float]):
        curriculum = self.curriculum
        if curriculum is None:
            return
        mode = self.config.runner.curriculum_sync
        if getattr(curriculum, "per_world", False):
            self._sync_world_curriculum(curriculum, mode)
            return
        global_means = curriculum_metrics(global_means, curriculum.metric_keys)
        local_means = curriculum_metrics(local_means, curriculum.metric_keys)
        if mode == "local":
            curriculum.update(local_means)
        elif mode == "global":
            curriculum.update(global_means)
        else:  # rank0
            if self.ctx.is_main:
                curriculum.update(local_means)
            with unilab_dist.accounting.phase("curriculum"):
                state = unilab_dist.broadcast_object(
                    curriculum.state_dict() if self.ctx.is_main else None
                )
            if not self.ctx.is_main:
                curriculum.load_state_dict(state)

    def _sync_world_curriculum(self, curriculum: Any, mode: str) -> None:
        """A per-world curriculum (terrain levels) at the iteration boundary: `local` keeps
        each rank's levels (no collective); `global` sums the per-slot outcome counts over
        ranks (one all-reduce) and every rank applies the same per-slot rule; `rank0`
        broadcasts rank 0's levels (one collective). docs/semantics.md, "Terrain levels"."""
        if mode == "local" or not unilab_dist.is_distributed():  # one rank: MJLab's rule
            curriculum.clear_outcomes()
            return
        with unilab_dist.accounting.phase("curriculum"):
            if mode == "global":
                total = unilab_dist.all_reduce(curriculum.outcome_counts(), "sum")
                curriculum.apply_outcomes(total)
            else:
                levels = curriculum.levels_tensor().clone()
                unilab_dist.broadcast_tensors([levels])
                curriculum.adopt_levels(levels)

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
            if self.iteration > start_iteration and self.iteration not in self.written:
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
            checkpoint=self.last_checkpoint,
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
        if self.timer.enabled:
            self.logger.write(
                "runner.profile: the device is synchronized between phases, so iterations are "
                "slower than unprofiled ones; profile/<phase>_s are rank 0's own seconds"
            )
        if self.timer.note:
            self.logger.write(self.timer.note)

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
        # eager update on >1 rank: its collectives are timed (a captured one hides them)
        self.timer.time_collectives = self.ctx.world_size > 1 and not update_captured(self.learner)
        start = self.timer.start()
        self.stats.reset()
        self.guard.reset()
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
        replicas_s = self._check_replicas()
        metrics = self._reduce(learner_metrics, evaluation)
        # the curriculum sync runs inside `_reduce`: its collectives count in this iteration
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
        metrics.update(self.timer.metrics(elapsed))  # this rank's own, not reduced
        if self.logger is not None:
            self.logger.log(self.iteration, metrics)
        return metrics

    def _check_replicas(self) -> float | None:
        """Every `runner.check_replicas_interval` iterations, on every rank: stop (the same
        error everywhere) unless the replicated state equals rank 0's; returns its seconds."""
        every = self.config.runner.check_replicas_interval
        if not every or self.iteration % every:
            return None
        start = time.perf_counter()
        try:
            with unilab_dist.accounting.phase("check"):
                unilab_dist.check_replicas(
                    replica_state(self.learner.replicated_modules()),
                    self.learner.optimizers(),
                )
        except unilab_dist.ReplicaMismatchError as e:
            raise unilab_dist.ReplicaMismatchError(
                f"replicas differ at iteration {self.iteration} (runner.check_replicas_interval="
                f"{every}): {e}; a rank-dependent update or a missing sync changed them"
            ) from e
        return time.perf_counter() - start

    def _reduce(
        self, learner_metrics: dict[str, float], evaluation: dict[str, float] | None = None
    ) -> dict[str, float]:
        """One float64 collective: episode sums (summed), learner metrics (averaged) and, in an
        evaluation iteration (the same on every rank), the evaluation's sums."""
        local = self.stats.local_sums()
        learner_keys = sorted(k for k, v in learner_metrics.items() if isinstance(v, int | float))
        payload = dict(local)
        if evaluation is not None:
            payload.update(evaluation)
        for key in learner_keys:
            payload[f"learner/{key}"] = float(learner_metrics[key])
        curriculum = self.curriculum
        world_sums = {}
        if getattr(curriculum, "per_world", False):  # terrain levels: (sum, count) per name
            for name, (total, count) in curriculum.metric_sums().items():
                world_sums[name] = (f"curriculum/{name}_sum", f"curriculum/{name}_count")
                payload[world_sums[name][0]], payload[world_sums[name][1]] = total, count
        if curriculum is not None:  # the level this iteration's episodes were collected under
            payload["curriculum/level"] = float(curriculum.level)
        with unilab_dist.accounting.phase("log"):
            summed = unilab_dist.reduce_scalars(payload, op="sum")
        global_means = means_from_sums({k: summed[k] for k in local})
        w = self.ctx.world_size
        metrics = dict(global_means)
        for key in learner_keys:
            metrics[_learner_key(key)] = summed[f"learner/{key}"] / w
        if curriculum is not None:  # mean over ranks (they differ only with curriculum_sync=local)
            metrics["curriculum/level"] = summed["curriculum/level"] / w
        for name, (total, count) in world_sums.items():  # count-weighted over ranks
            metrics[f"curriculum/{name}"] = summed[total] / max(summed[count], 1.0)
        if evaluation is not None:
            metrics.update(eval_means({k: summed[k] for k in evaluation}))
            metrics["perf/eval_s"] = summed["perf/eval_s"] / w  # mean over ranks
        # host seconds: `global` and `rank0` wait for their collective's result there
        if curriculum is not None:
            sync_start = time.perf_counter()
            self._sync_curriculum(global_means, means_from_sums(local))
            metrics["perf/curriculum_sync_s"] = time.perf_counter() - sync_start
        return metrics

    # --- checkpoints -------------------------------------------------------------------------
    def learner_state(self) -> dict[str, Any]:
        """The learner's state as checkpoints hold it (runners add what their learner offers)."""
        return self.learner.state_dict()

    def save(self) -> str | None:
        """Write a checkpoint (all ranks call this; rank 0 writes)."""
        # an env without state_dict (not a unilab_envs VecEnv) restarts its episodes on resume
        env_state = self.env.state_dict() if hasattr(self.env, "load_state_dict") else None
        curriculum = self.curriculum
        local = {
            "rng": capture_rng(self.device),
            "env_state": env_state,
            # a clone: the step's outputs are views of one byte buffer, whose size need not be
            # a multiple of 4, and torch.save of such a float view writes an unreadable file
            "obs": plain_tensordict(self.obs),
            "curriculum": curriculum.state_dict() if curriculum is not None else None,
            "learner": _to_cpu(self.learner_state()),
        }
        gathered = _gather_to_main(local, self.ctx)
        self.written.append(self.iteration)  # on every rank: run() decides the last save by it
        if not self.ctx.is_main:
            return None
        assert gathered is not None
        if not holder_alive(self.run_dir):
            raise RuntimeError(
                f"the trainer holding {self.run_dir / LOCK} is gone: checkpoint "
                f"{self.iteration} is not written"
            )
        payload = {
            "task": self.config.task,
            "algo_name": self.config.algo_name,
            "config": self.config.to_dict(),
            "world_size": self.ctx.world_size,
            "num_envs_per_rank": self.num_envs,
            "counters": {
                "env_steps_per_rank": self.env_steps_rank,
                "env_steps_global": self.env_steps_global,
                "solved_streak": self.solved_streak,
            },
            "shapes": self.network_shapes(),
            **{key: [g[key] for g in gathered] for key in local},
        }
        path = save_checkpoint(self.run_dir / "checkpoints", self.iteration, payload)
        self.last_checkpoint = str(path)
        if self.logger is not None:
            self.logger.checkpoint(self.iteration, self.last_checkpoint)
        saving = self.config.runner.checkpoints
        prune_checkpoints(path.parent, keep=saving.keep, every=saving.keep_every * saving.interval)
        return self.last_checkpoint

    def load(self, path: str | Path) -> None:
        """Resume from a checkpoint: same world size continues exactly; another one is logged."""
        ckpt = load_checkpoint(path)
        check_compatible(
            ckpt,
            task=self.config.task,
            algo_name=self.config.algo_name,
            shapes=self.network_shapes(),
        )
        rank, w = self.ctx.rank, self.ctx.world_size
        saved_w = int(ckpt["world_size"])
        same = saved_w == w and ckpt["num_envs_per_rank"] == self.num_envs
        src = rank if same else 0
        learner_state = dict(ckpt["learner"][src])
        notes = []
        if not same and learner_state.pop("replay", None) is not None:
            notes.append("the saved replay shards do not fit this layout: replay starts empty")
        elif (
            same and algorithm_spec(self.config.algo_name).replay and "replay" not in learner_state
        ):
            notes.append(
                "the checkpoint has no replay (runner.checkpoints.replay=false): replay starts empty "
                "(not bit-for-bit)"
            )
        self.learner.load_state_dict(_to_device(learner_state, self.device))
        self.broadcast_state()
        self.iteration = int(ckpt["iteration"])
        counters = ckpt["counters"]
        self.env_steps_global = int(counters["env_steps_global"])
        self.env_steps_rank = int(counters["env_steps_per_rank"])
        self.solved_streak = int(counters.get("solved_streak", 0))
        self.plan = plan_budget(
            self.config, w, iteration=self.iteration, env_steps_global=self.env_steps_global
        )
        self.budget = self.plan.iterations
        curriculum = self.curriculum
        per_world = getattr(curriculum, "per_world", False)
        if per_world and not same:
            # re-split by slot: this rank takes saved rank (rank mod saved world size)'s levels
            curriculum.load_rank_states(ckpt["curriculum"], rank)
            self.obs = self.env.reset().select("obs")  # spawn every world on its tile
        elif curriculum is not None and ckpt["curriculum"][src] is not None:
            curriculum.load_state_dict(ckpt["curriculum"][src])
        env_ok = False
        if same:
            restore_rng(ckpt["rng"][rank], self.device)
            env_state = ckpt["env_state"][rank]
            if env_state is not None:
                self.env.load_state_dict(env_state)
                self.obs = tensordict_from_plain(ckpt["obs"][rank], self.device)
                self.random_start = False
                env_ok = True
        self._resume_message(ckpt, saved_w, same, env_ok, notes)

    def _resume_message(
        self, ckpt: dict, saved_w: int, same: bool, env_ok: bool, notes: list[str]
    ) -> None:
        if not self.ctx.is_main:
            return
        lines = [f"resumed {ckpt['path']} at iteration {self.iteration}"]
        if not same:
            lines.append(
                f"world size {saved_w} -> {self.ctx.world_size}, envs per rank "
                f"{ckpt['num_envs_per_rank']} -> {self.num_envs}, global envs "
                f"{saved_w * ckpt['num_envs_per_rank']} -> {self.ctx.world_size * self.num_envs}: "
                "models, optimizer and counters come from rank 0; every rank restarts its "
                "episodes with fresh RNG streams; rank-local state (local normalizers, local "
                "curriculum) is rank 0's"
            )
        elif not env_ok:
            lines.append("the env has no saved state: episodes restart (not bit-for-bit)")
        lines += notes
        text = "; ".join(lines)
        print(text, flush=True)
        with (self.run_dir / "resume.log").open("a") as f:
            f.write(text + "\n")


def replica_state(modules: list[torch.nn.Module]) -> dict[str, TensorDict]:
    """What must be equal on every rank: each replicated module's parameters and buffers,
    except the statistics of rank-local normalizers (a submodule with `is_global` False, as
    the `rsl_rl` preset's), named `Class[index].path` like `Runner.network_shapes`."""
    out = {}
    for i, module in enumerate(modules):
        local = {n for n, sub in module.named_modules() if getattr(sub, "is_global", True) is False}
        tensors = dict(module.named_parameters())
        for name, buf in module.named_buffers():
            if name.rpartition(".")[0] not in local:
                tensors[name] = buf
        out[f"{type(module).__name__}[{i}]"] = TensorDict(tensors, batch_size=[])
    return out


def _learner_key(key: str) -> str:
    """Learner metric names in the log: `lr` and `kl` top level, the rest under `learner/`."""
    if key in ("lr", "kl"):
        return key
    if key == "learning_rate":
        return "lr"
    return key if key.startswith("learner/") else f"learner/{key}"


def _to_cpu(obj: Any) -> Any:
    return _map_tensors(obj, lambda t: t.detach().to("cpu"))


def _to_device(obj: Any, device: torch.device) -> Any:
    return _map_tensors(obj, lambda t: t.to(device))


def _map_tensors(obj: Any, fn: Any) -> Any:
    if isinstance(obj, torch.Tensor | TensorDict):
        return fn(obj)
    if isinstance(obj, dict):
        return {k: _map_tensors(v, fn) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_map_tensors(v, fn) for v in obj)
    return obj


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
