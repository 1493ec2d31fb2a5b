"""Fault guards: NaN/inf in observations, losses, gradients and parameters stop the run, and so
do replicas that differ from rank 0's (`check_replicas`).

Observation checks stay on the device during a rollout (a running flag and the first bad step
per group, no host sync per step) and are read once per iteration; losses, gradients and
parameters are checked after each update with one host read.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping

import torch
from tensordict import TensorDict, TensorDictBase

import unilab_dist
from unilab_algos import Learner

__all__ = [
    "NonFiniteError",
    "ObservationGuard",
    "check_losses",
    "check_modules",
    "check_replicas",
    "replica_state",
]


class NonFiniteError(FloatingPointError):
    """A NaN or inf appeared; the message names the rank, the iteration and the term."""


class ObservationGuard:
    """Tracks, per observation group, the first rollout step where a value was not finite."""

    def __init__(self, groups: Iterable[str], device: torch.device) -> None:
        self.groups = tuple(groups)
        self._first_bad = torch.full((len(self.groups),), -1, dtype=torch.int64, device=device)
        self._step = 0

    def reset(self) -> None:
        self._first_bad.fill_(-1)
        self._step = 0

    def observe(self, obs: TensorDictBase) -> None:
        """Record one step's observations (TensorDict of groups, each [N, D])."""
        bad = torch.stack([~torch.isfinite(obs[g]).all() for g in self.groups])
        fresh = bad & (self._first_bad < 0)
        self._first_bad.masked_fill_(fresh, self._step)
        self._step += 1

    def check(self, *, rank: int, iteration: int) -> None:
        """Raise NonFiniteError naming the first bad group and its step, if any."""
        first = self._first_bad.tolist()
        for group, step in zip(self.groups, first):
            if step >= 0:
                raise NonFiniteError(
                    f"non-finite observation in group '{group}' on rank {rank} at iteration "
                    f"{iteration} (rollout step {step})"
                )


def check_losses(metrics: Mapping[str, float], *, rank: int, iteration: int) -> None:
    """Raise NonFiniteError for the first metric that is NaN or inf."""
    for key, value in metrics.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise NonFiniteError(
                f"non-finite loss term '{key}' = {value} on rank {rank} at iteration {iteration}"
            )


def check_modules(
    modules: Iterable[torch.nn.Module], *, rank: int, iteration: int, names: Iterable[str]
) -> None:
    """Raise NonFiniteError naming the first parameter whose gradient or value is not finite."""
    entries: list[tuple[str, str, torch.Tensor]] = []
    for module, module_name in zip(modules, names):
        for pname, param in module.named_parameters():
            if param.grad is not None:
                entries.append(("gradient", f"{module_name}.{pname}", param.grad))
            entries.append(("parameter", f"{module_name}.{pname}", param))
    if not entries:
        return
    flags = torch.stack([torch.isfinite(t.detach()).all() for _, _, t in entries]).tolist()
    for (kind, name, _), ok in zip(entries, flags):
        if not ok:
            raise NonFiniteError(
                f"non-finite {kind} of '{name}' on rank {rank} at iteration {iteration}"
            )


def check_replicas(learner: Learner, iteration: int, every: int) -> float | None:
    """Every `every` iterations (`runner.check_replicas_interval`; 0: never), on every rank:
    stop (the same error everywhere) unless the replicated state equals rank 0's; returns its
    seconds."""
    if not every or iteration % every:
        return None
    start = time.perf_counter()
    try:
        with unilab_dist.accounting.phase("check"):
            unilab_dist.check_replicas(
                replica_state(learner.replicated_modules()), learner.optimizers()
            )
    except unilab_dist.ReplicaMismatchError as e:
        raise unilab_dist.ReplicaMismatchError(
            f"replicas differ at iteration {iteration} (runner.check_replicas_interval="
            f"{every}): {e}; a rank-dependent update or a missing sync changed them"
        ) from e
    return time.perf_counter() - start


def replica_state(modules: list[torch.nn.Module]) -> dict[str, TensorDict]:
    """What must be equal on every rank: each replicated module's parameters and buffers,
    except the statistics of rank-local normalizers (a submodule with `is_global` False, as
    the `rsl_rl` preset's), named `Class[index].path` like the checkpoints' `network_shapes`."""
    out = {}
    for i, module in enumerate(modules):
        local = {n for n, sub in module.named_modules() if getattr(sub, "is_global", True) is False}
        tensors = dict(module.named_parameters())
        for name, buf in module.named_buffers():
            if name.rpartition(".")[0] not in local:
                tensors[name] = buf
        out[f"{type(module).__name__}[{i}]"] = TensorDict(tensors, batch_size=[])
    return out
