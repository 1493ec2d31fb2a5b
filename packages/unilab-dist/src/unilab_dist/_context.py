"""Who this process is (`DistContext`) and the process group's life (`init_distributed`,
`shutdown`).

A run is described by the variables every launcher sets (torchrun, torchrunx, unilab-launch):
`WORLD_SIZE`, `RANK`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE`. Without them the process is a run of
one. Nothing here touches CUDA or the network until `init_distributed` is called.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import timedelta

import attrs
import torch
import torch.distributed as dist

__all__ = ["DistContext", "init_distributed", "is_distributed", "shutdown"]

_BACKENDS = ("nccl", "gloo")
_OWNED = {"pg": False}  # whether init_distributed created the default process group


def _env_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not an integer") from None


def _non_negative(instance: object, attribute: attrs.Attribute, value: int) -> None:
    if value < 0:
        raise ValueError(f"{attribute.name} must be >= 0, got {value}")


def _positive(instance: object, attribute: attrs.Attribute, value: int) -> None:
    if value < 1:
        raise ValueError(f"{attribute.name} must be >= 1, got {value}")


def _to_device(value: torch.device | str) -> torch.device:
    return torch.device(value)


def _default_device(local_rank: int) -> torch.device:
    if torch.cuda.is_available():
        count = torch.cuda.device_count()
        # One GPU visible per process (CUDA_VISIBLE_DEVICES set by a launcher) -> cuda:0.
        return torch.device("cuda", local_rank if count > 1 else 0)
    return torch.device("cpu")


def _check_device(device: torch.device, local_rank: int, local_world_size: int) -> None:
    """Raise ValueError if a CUDA device does not belong to this local rank."""
    if device.type != "cuda":
        return
    if device.index is None:
        raise ValueError(f"give the CUDA device with its index (cuda:{local_rank}), got {device}")
    count = torch.cuda.device_count()
    if count == 0:
        raise ValueError(f"device {device} requested but CUDA has no device here")
    if device.index >= count:
        raise ValueError(f"device {device} does not exist: {count} CUDA device(s) visible")
    expected = local_rank if count > 1 else 0
    if count > 1 and local_world_size > count:
        raise ValueError(
            f"{local_world_size} local ranks but only {count} CUDA devices visible on this host"
        )
    if device.index != expected:
        raise ValueError(
            f"local rank {local_rank} must use cuda:{expected} ({count} device(s) visible), "
            f"got {device}; two ranks on one GPU would deadlock NCCL"
        )


@attrs.frozen(kw_only=True)
class DistContext:
    """This process's place in a data-parallel run.

    Attributes:
        world_size: number of processes in the run (>= 1).
        rank: global rank in [0, world_size).
        local_rank: rank on this host in [0, local_world_size).
        local_world_size: number of processes on this host.
        device: the torch device this rank computes on (cuda:local_rank or cpu).
        backend: "nccl" for CUDA devices, "gloo" for CPU.
    """

    world_size: int = attrs.field(
        default=1, validator=[attrs.validators.instance_of(int), _positive]
    )
    rank: int = attrs.field(default=0, validator=[attrs.validators.instance_of(int), _non_negative])
    local_rank: int = attrs.field(
        default=0, validator=[attrs.validators.instance_of(int), _non_negative]
    )
    local_world_size: int = attrs.field(
        default=1, validator=[attrs.validators.instance_of(int), _positive]
    )
    device: torch.device = attrs.field(
        factory=lambda: torch.device("cpu"),
        converter=_to_device,
        validator=attrs.validators.instance_of(torch.device),
    )
    backend: str = attrs.field(default="gloo", validator=attrs.validators.in_(_BACKENDS))

    def __attrs_post_init__(self) -> None:
        if self.rank >= self.world_size:
            raise ValueError(f"rank {self.rank} must be < world_size {self.world_size}")
        if self.local_rank >= self.local_world_size:
            raise ValueError(
                f"local_rank {self.local_rank} must be < local_world_size {self.local_world_size}"
            )
        if self.local_world_size > self.world_size:
            raise ValueError(
                f"local_world_size {self.local_world_size} > world_size {self.world_size}"
            )
        if self.backend == "nccl" and self.device.type != "cuda":
            raise ValueError(f"backend 'nccl' needs a CUDA device, got {self.device}")

    @property
    def is_distributed(self) -> bool:
        """True when the run has more than one process."""
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        """True on global rank 0 (the rank that logs, saves and broadcasts)."""
        return self.rank == 0

    @classmethod
    def from_env(
        cls,
        device: torch.device | str | None = None,
        *,
        env: Mapping[str, str] | None = None,
    ) -> DistContext:
        """Build the context from `WORLD_SIZE`, `RANK`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE`.

        Missing variables mean a run of one. If a process group is already initialized, its
        world size and rank win (and must agree with the variables that are set). `device`
        defaults to cuda:local_rank when CUDA is available (cuda:0 when one GPU is visible),
        else cpu; a CUDA device that does not match the local rank raises ValueError.
        """
        env = os.environ if env is None else env
        world_size = _env_int(env, "WORLD_SIZE", 1)
        rank = _env_int(env, "RANK", 0)
        local_rank = _env_int(env, "LOCAL_RANK", rank if "RANK" in env else 0)
        local_world_size = _env_int(env, "LOCAL_WORLD_SIZE", world_size)
        if dist.is_available() and dist.is_initialized():
            pg_world, pg_rank = dist.get_world_size(), dist.get_rank()
            if ("WORLD_SIZE" in env and pg_world != world_size) or (
                "RANK" in env and pg_rank != rank
            ):
                raise ValueError(
                    f"process group (world {pg_world}, rank {pg_rank}) disagrees with the "
                    f"environment (WORLD_SIZE={world_size}, RANK={rank})"
                )
            world_size, rank = pg_world, pg_rank
            local_world_size = min(local_world_size, world_size)
        dev = _default_device(local_rank) if device is None else torch.device(device)
        _check_device(dev, local_rank, local_world_size)
        return cls(
            world_size=world_size,
            rank=rank,
            local_rank=local_rank,
            local_world_size=local_world_size,
            device=dev,
            backend="nccl" if dev.type == "cuda" else "gloo",
        )


def is_distributed(group: dist.ProcessGroup | None = None) -> bool:
    """True when a process group is initialized and has more than one rank."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size(group) > 1


def init_distributed(
    device: torch.device | str | None = None,
    *,
    timeout_s: float = 1800.0,
    backend: str | None = None,
) -> DistContext:
    """Create (or adopt) the default process group and return this process's `DistContext`.

    - A process group that already exists (a launcher such as torchrunx made it) is adopted: its
      backend is kept and checked against `backend` if given.
    - Otherwise, with `WORLD_SIZE` > 1, one is created from the `env://` variables
      (`MASTER_ADDR`, `MASTER_PORT`): NCCL for a CUDA device, gloo for CPU, collective timeout
      `timeout_s` seconds. A CUDA device is made current first.
    - With `WORLD_SIZE` unset or 1 nothing is created; every unilab_dist function is then the
      identity.
    """
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
    if backend is not None and backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {_BACKENDS}, got {backend!r}")
    ctx = DistContext.from_env(device)
    if backend is not None and backend != ctx.backend:
        if not (backend == "gloo" and ctx.device.type == "cuda"):
            raise ValueError(f"backend {backend!r} cannot serve device {ctx.device}")
        ctx = attrs.evolve(ctx, backend=backend)
    if ctx.device.type == "cuda":
        torch.cuda.set_device(ctx.device)
    if dist.is_available() and dist.is_initialized():
        pg_backend = str(dist.get_backend())
        if backend is not None and backend not in pg_backend:
            raise ValueError(
                f"the existing process group uses backend {pg_backend!r}, not {backend!r}"
            )
        chosen = "nccl" if "nccl" in pg_backend and ctx.device.type == "cuda" else "gloo"
        return attrs.evolve(ctx, backend=chosen)
    if ctx.world_size == 1:
        return ctx
    kwargs = {}
    if ctx.backend == "nccl":
        kwargs["device_id"] = ctx.device
    dist.init_process_group(
        ctx.backend,
        init_method="env://",
        world_size=ctx.world_size,
        rank=ctx.rank,
        timeout=timedelta(seconds=timeout_s),
        **kwargs,
    )
    _OWNED["pg"] = True
    return ctx


def shutdown(*, force: bool = False) -> None:
    """Destroy the default process group if `init_distributed` created it.

    A group adopted from a launcher is left to its owner unless `force=True`. Safe to call
    twice and without a process group.
    """
    if dist.is_available() and dist.is_initialized() and (_OWNED["pg"] or force):
        dist.destroy_process_group()
    _OWNED["pg"] = False
