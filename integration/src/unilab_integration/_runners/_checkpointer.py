"""`Checkpointer`: a runner's checkpoints: save, load, reshard and the resume message.

A checkpoint gathers every rank's RNG, env state (where the env's features say `state`),
observations, curriculum state and learner state to rank 0, which writes it with the run's
counters, config and shape fingerprint. A resume at the same world size and envs per rank
continues bit for bit (each rank takes its own saved part); at another layout it reshards:
models, optimizer and counters come from rank 0, every rank restarts its episodes with fresh
RNG streams, a per-world curriculum is re-split by slot, and replay shards are dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import torch
import torch.distributed as dist
from tensordict import TensorDict

import unilab_dist
from unilab_algos import Learner
from unilab_dist import DistContext
from unilab_envs.features import EnvFeatures

from .._algorithms import algorithm_spec
from .._checkpoint import (
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
from .._logger import MetricLogger
from .._runlock import LOCK, holder_alive
from ._curriculum import CurriculumSync

__all__ = ["Checkpointer", "Resumed", "network_shapes"]


@attrs.frozen(kw_only=True)
class Resumed:
    """Where a loaded checkpoint puts the run: its `iteration`, `counters` (`env_steps_per_rank`, `env_steps_global`, `solved_streak`), and
    the observations to continue from (`obs`; None: keep the runner's); `env_restored`: the
    env continues from its saved state (its counters included)."""

    iteration: int
    counters: dict[str, int]
    obs: TensorDict | None
    env_restored: bool


class Checkpointer:
    """One rank's checkpoints (see the module docstring). `written` lists the iterations this
    session saved (on every rank); `last` is the path of rank 0's last one."""

    def __init__(
        self,
        config: TrainConfig,
        ctx: DistContext,
        run_dir: Path,
        env: Any,
        features: EnvFeatures,
        curriculum: CurriculumSync,
        num_envs: int,
    ) -> None:
        self.config = config
        self.ctx = ctx
        self.run_dir = run_dir
        self.env = env
        self.features = features
        self.curriculum = curriculum
        self.num_envs = num_envs
        self.written: list[int] = []
        self.last: str | None = None

    def save(
        self,
        iteration: int,
        counters: dict[str, int],
        obs: TensorDict,
        learner_state: dict[str, Any],
        shapes: dict[str, tuple[int, ...]],
        logger: MetricLogger | None,
    ) -> str | None:
        """Write checkpoint `iteration` (all ranks call this; rank 0 writes); its path on rank 0."""
        # an env whose features say no state (a foreign env) restarts its episodes on resume
        env_state = self.env.state_dict() if self.features.state else None
        local = {
            "rng": capture_rng(self.ctx.device),
            "env_state": env_state,
            # a clone: the step's outputs are views of one byte buffer, whose size need not be
            # a multiple of 4, and torch.save of such a float view writes an unreadable file
            "obs": plain_tensordict(obs),
            "curriculum": self.curriculum.state(),
            "learner": _to_cpu(learner_state),
        }
        gathered = _gather_to_main(local, self.ctx)
        self.written.append(iteration)  # on every rank: the runner decides the last save by it
        if not self.ctx.is_main:
            return None
        assert gathered is not None
        if not holder_alive(self.run_dir):
            raise RuntimeError(
                f"the trainer holding {self.run_dir / LOCK} is gone: checkpoint "
                f"{iteration} is not written"
            )
        payload = {
            "task": self.config.task,
            "algo_name": self.config.algo_name,
            "config": self.config.to_dict(),
            "world_size": self.ctx.world_size,
            "num_envs_per_rank": self.num_envs,
            "counters": dict(counters),
            "shapes": shapes,
            **{key: [g[key] for g in gathered] for key in local},
        }
        path = save_checkpoint(self.run_dir / "checkpoints", iteration, payload)
        self.last = str(path)
        if logger is not None:
            logger.checkpoint(iteration, self.last)
        saving = self.config.runner.checkpoints
        prune_checkpoints(path.parent, keep=saving.keep, every=saving.keep_every * saving.interval)
        return self.last

    def load(
        self,
        path: str | Path,
        learner: Learner,
        shapes: dict[str, tuple[int, ...]],
        broadcast: Callable[[], None],
    ) -> Resumed:
        """Resume from a checkpoint: the same layout continues exactly, another one reshards
        (the module docstring). `broadcast` copies rank 0's modules to every rank after the
        learner's load."""
        ckpt = load_checkpoint(path)
        check_compatible(
            ckpt, task=self.config.task, algo_name=self.config.algo_name, shapes=shapes
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
        learner.load_state_dict(_to_device(learner_state, self.ctx.device))
        broadcast()
        iteration = int(ckpt["iteration"])
        saved = ckpt["counters"]
        counters = {
            "env_steps_per_rank": int(saved["env_steps_per_rank"]),
            "env_steps_global": int(saved["env_steps_global"]),
            "solved_streak": int(saved.get("solved_streak", 0)),
        }
        obs = None
        if self.curriculum.load(ckpt["curriculum"], rank, src, same):
            obs = self.env.reset().select("obs")  # spawn every world on its tile
        env_ok = False
        if same:
            restore_rng(ckpt["rng"][rank], self.ctx.device)
            env_state = ckpt["env_state"][rank]
            if env_state is not None:
                self.env.load_state_dict(env_state)
                obs = tensordict_from_plain(ckpt["obs"][rank], self.ctx.device)
                env_ok = True
        self._resume_message(ckpt, iteration, saved_w, same, env_ok, notes)
        return Resumed(iteration=iteration, counters=counters, obs=obs, env_restored=env_ok)

    def _resume_message(
        self, ckpt: dict, iteration: int, saved_w: int, same: bool, env_ok: bool, notes: list[str]
    ) -> None:
        if not self.ctx.is_main:
            return
        lines = [f"resumed {ckpt['path']} at iteration {iteration}"]
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


def network_shapes(
    obs_shapes: dict[str, tuple[int, ...]], action_dim: int, modules: list[torch.nn.Module]
) -> dict[str, tuple[int, ...]]:
    """The shape fingerprint a checkpoint holds and a resume checks: observations, actions,
    every tensor of the replicated `modules` (named `Class[index].key`)."""
    shapes: dict[str, tuple[int, ...]] = {
        f"env.obs.{g}": tuple(s) for g, s in sorted(obs_shapes.items())
    }
    shapes["env.action_dim"] = (action_dim,)
    for i, module in enumerate(modules):
        for key, value in module.state_dict().items():
            if isinstance(value, torch.Tensor):
                shapes[f"{type(module).__name__}[{i}].{key}"] = tuple(value.shape)
    return shapes


def _gather_to_main(obj: Any, ctx: DistContext) -> list[Any] | None:
    """Every rank's `obj` on rank 0 (None elsewhere). Plain torch gather_object: checkpoints only."""
    if not unilab_dist.is_distributed():
        return [obj]
    out = [None] * ctx.world_size if ctx.is_main else None
    dist.gather_object(obj, out, dst=0)
    return out


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
