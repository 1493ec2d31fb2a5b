"""Worker bodies for the unilab-launch tests (module level: workers import them by name)."""

from __future__ import annotations

import os
import random
import sys
import time

import torch
import torch.distributed as dist

from unilab_dist import DistContext


def allreduce_report(scale: float) -> dict:
    """All-reduce (rank + 1) * scale and report what this worker saw."""
    torch_draw = torch.rand(1).item()  # first draws after the launcher seeded this rank
    python_draw = random.random()
    rank = dist.get_rank()
    x = torch.tensor([float(rank + 1)]) * scale
    dist.all_reduce(x)
    print(f"worker {rank} reduced {x.item()}")
    ctx = DistContext.from_env()
    return {
        "rank": rank,
        "world_size": dist.get_world_size(),
        "backend": str(dist.get_backend()),
        "sum": x.item(),
        "local_rank": ctx.local_rank,
        "local_world_size": ctx.local_world_size,
        "device": str(ctx.device),
        "seed": int(os.environ["UNILAB_SEED"]),
        "torch_draw": torch_draw,
        "python_draw": python_draw,
        "threads": torch.get_num_threads(),
        "custom_env": os.environ.get("UNILAB_TEST_VALUE"),
        "copied_env": os.environ.get("MUJOCO_TEST_FLAG"),
        "pid": os.getpid(),
        "ppid": os.getppid(),  # the host's agent (or its process starter)
        "socket_ifnames": [os.environ.get(k) for k in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")],
    }


def raise_while_others_wait(fail_rank: int | str) -> float:
    """Rank `fail_rank` raises after 1 s; every other rank waits in an all-reduce it never joins."""
    rank = dist.get_rank()
    if rank == int(fail_rank):
        time.sleep(1.0)
        raise ValueError(f"deliberate failure on rank {rank}")
    x = torch.ones(1)
    dist.all_reduce(x)
    return x.item()


def cli_body(value: str, fail_rank: str = "-1") -> None:
    """Sum float(value) * (rank + 1) over ranks and print it; then rank `fail_rank` raises
    while the others wait in a barrier (the CLI discards return values)."""
    rank = dist.get_rank()
    x = torch.tensor([float(value) * (rank + 1)])
    dist.all_reduce(x)
    print(f"rank {rank} of {dist.get_world_size()} total {x.item():.2f}")
    if rank == int(fail_rank):
        time.sleep(1.0)
        raise RuntimeError(f"cli failure on rank {rank}")
    dist.barrier()


def nccl_report() -> dict:
    """All-reduce (rank + 1) on this worker's GPU and report the device it was given."""
    rank = dist.get_rank()
    ctx = DistContext.from_env()
    x = torch.tensor([float(rank + 1)], device="cuda")
    dist.all_reduce(x)
    return {
        "rank": rank,
        "device": str(ctx.device),
        "current_device": torch.cuda.current_device(),
        "backend": str(dist.get_backend()),
        "sum": x.item(),
        "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }


def nccl_raise_while_others_wait(fail_rank: int) -> float:
    """Like `raise_while_others_wait`, with the waiting ranks inside an NCCL all-reduce."""
    rank = dist.get_rank()
    if rank == fail_rank:
        time.sleep(1.0)
        raise ValueError(f"deliberate failure on rank {rank}")
    x = torch.ones(1, device="cuda")
    dist.all_reduce(x)
    return x.item()


def allreduce_for(seconds: float | str) -> int:
    """All-reduce every 10 ms for `seconds` (a rank to kill while its peers are in collectives).
    The ranks stop together: each all-reduce carries whether the rank's own time is up (MIN),
    so no rank enters a collective that another has already left."""
    end = time.monotonic() + float(seconds)
    count = 0
    device = DistContext.from_env().device  # cuda:0 under NCCL
    while True:
        go = torch.tensor([1.0 if time.monotonic() < end else 0.0], device=device)
        dist.all_reduce(go, op=dist.ReduceOp.MIN)
        if go.item() == 0.0:
            return count
        count += 1
        time.sleep(0.01)


def exit_while_others_wait(exit_rank: int, status: int) -> float:
    """Rank `exit_rank` calls os._exit(status) after 1 s (no traceback); the others all-reduce."""
    if dist.get_rank() == exit_rank:
        time.sleep(1.0)
        os._exit(status)
    x = torch.ones(1)
    dist.all_reduce(x)
    return x.item()


def note_on_stderr() -> int:
    """Write a line to stderr and to stdout, all-reduce, return: a successful run."""
    print(f"rank {dist.get_rank()} notes on stderr", file=sys.stderr, flush=True)
    print(f"rank {dist.get_rank()} prints", flush=True)
    x = torch.ones(1)
    dist.all_reduce(x)
    return int(x.item())


NOT_CALLABLE = 3
