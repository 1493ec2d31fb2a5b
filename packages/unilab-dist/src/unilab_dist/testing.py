"""Helpers for testing distributed code on CPU: run a function on W gloo ranks.

    from unilab_dist.testing import run_distributed

    def body(rank: int, world_size: int, scale: float) -> torch.Tensor:
        x = torch.full((3,), float(rank)) * scale
        torch.distributed.all_reduce(x)
        return x

    results = run_distributed(body, world_size=3, args=(2.0,))  # one result per rank

`body` must be defined at module level (it is pickled into spawned processes). Each worker
gets `RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE`, `MASTER_ADDR` and `MASTER_PORT`
in its environment and an initialized gloo process group (unless `init_process_group=False`).
A worker's exception is re-raised in the caller as `DistributedTestError` with that rank's
traceback; a worker that does not finish within `timeout` seconds fails the call.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import pickle
import queue
import socket
import traceback
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

__all__ = ["DistributedTestError", "free_port", "run_distributed"]


class DistributedTestError(RuntimeError):
    """A rank of `run_distributed` raised, crashed or timed out."""


def free_port() -> int:
    """A TCP port on localhost that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(
    fn: Callable[..., Any],
    rank: int,
    world_size: int,
    port: int,
    args: Sequence[Any],
    env: dict[str, str],
    init_process_group: bool,
    pg_timeout: float,
    backend: str,
    results: Any,
) -> None:
    os.environ.update(env)
    os.environ.update(
        RANK=str(rank),
        WORLD_SIZE=str(world_size),
        LOCAL_RANK=str(rank),
        LOCAL_WORLD_SIZE=str(world_size),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    try:
        kwargs: dict[str, Any] = {}
        if backend == "nccl":
            device = torch.device("cuda", rank)
            torch.cuda.set_device(device)
            kwargs["device_id"] = device
        if init_process_group:
            dist.init_process_group(
                backend,
                rank=rank,
                world_size=world_size,
                timeout=timedelta(seconds=pg_timeout),
                **kwargs,
            )
        out = fn(rank, world_size, *args)
        # Plain pickle copies tensor data; torch's fd-sharing reducers would need the worker
        # alive when the parent unpickles.
        results.put((rank, True, pickle.dumps(out)))
    except BaseException:  # reported to the parent, which raises
        results.put((rank, False, traceback.format_exc()))
    finally:
        if dist.is_initialized():
            with contextlib.suppress(Exception):
                dist.destroy_process_group()


def run_distributed(
    fn: Callable[..., Any],
    world_size: int,
    args: Sequence[Any] = (),
    *,
    timeout: float = 120.0,
    pg_timeout: float = 60.0,
    env: dict[str, str] | None = None,
    init_process_group: bool = True,
    backend: str = "gloo",
) -> list[Any]:
    """Run `fn(rank, world_size, *args)` on `world_size` spawned processes; return per rank.

    The return values must be picklable (tensors are; return CUDA tensors `.cpu()`).
    `pg_timeout` is the process group's collective timeout; `timeout` bounds the whole call.
    `backend="nccl"` gives rank r the current device cuda:r (needs `world_size` GPUs).
    """
    if backend not in ("gloo", "nccl"):
        raise ValueError(f"backend must be 'gloo' or 'nccl', got {backend!r}")
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = free_port()
    procs = [
        ctx.Process(
            target=_worker,
            args=(
                fn,
                r,
                world_size,
                port,
                tuple(args),
                dict(env or {}),
                init_process_group,
                pg_timeout,
                backend,
                results,
            ),
            daemon=True,
        )
        for r in range(world_size)
    ]
    for p in procs:
        p.start()
    out: dict[int, Any] = {}
    errors: dict[int, str] = {}
    try:
        for _ in range(world_size):
            try:
                rank, ok, value = results.get(timeout=timeout)
            except queue.Empty:
                missing = sorted(set(range(world_size)) - set(out) - set(errors))
                raise DistributedTestError(
                    f"ranks {missing} did not finish within {timeout:.0f} s"
                    + "".join(f"\n--- rank {r} ---\n{e}" for r, e in errors.items())
                ) from None
            if ok:
                out[rank] = pickle.loads(value)
            else:
                errors[rank] = value
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    if errors:
        text = "".join(f"\n--- rank {r} ---\n{e}" for r, e in sorted(errors.items()))
        raise DistributedTestError(f"{len(errors)} of {world_size} ranks failed:{text}")
    return [out[r] for r in range(world_size)]
