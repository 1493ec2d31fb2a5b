"""What runs inside each worker process: device, seed, process group, the target, and failure.

The agent of the host spawns `worker_main` with the worker's environment (`RANK`,
`LOCAL_RANK`, `WORLD_SIZE`, `LOCAL_WORLD_SIZE`, `MASTER_ADDR`, `MASTER_PORT` of the store that
the first host's agent holds) and a pipe back to itself; the worker sends its log records to
the launcher (JSON) and its result (or its failure record) to the agent through the pipe.

Failure protocol. A worker that raises:

1. writes `<run_dir>/failures/rank<R>.json` (atomically) with its rank, host, pid, the time in
   nanoseconds and the traceback, and sends the same record to its agent (which carries it to
   the launcher, so it arrives even when `run_dir` is not shared);
2. logs the traceback and exits the process with status 1 at once.

The agent sees it and stops the worker's siblings, the launcher stops every other agent, and
raises `WorkerFailedError` for the earliest failure record (a rank that fails *because* its
peer died fails later). A worker that dies without going through this path (a signal,
`os._exit`, a crash) leaves no record; its agent reports its pid and exit status instead.

Process lifetime: a worker ends when its agent ends (parent-death signal SIGKILL, Linux), and
ignores SIGINT (`_signals.py`).

Output: lines written to stdout are logged at INFO, to stderr at WARNING (stderr is not a
failure by itself), and a failure's traceback at ERROR.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, NoReturn

import attrs
import cloudpickle
import torch
import torch.distributed as dist

from ._logs import log_lines, log_to_launcher
from ._proc import parent_death_signal, process_start_ticks
from ._signals import ignore_terminal_interrupt

__all__ = [
    "ENV_CONTROL",
    "ENV_HOST",
    "ENV_KEY",
    "ENV_LAUNCHER",
    "ENV_RUN_DIR",
    "RESULT",
    "WorkerSpec",
    "process_start_ticks",
    "run_worker",
    "worker_main",
    "write_json_atomic",
]

ENV_KEY = "UNILAB_LAUNCH_KEY"
"""The launch's secret key (hex), in the environment of its agents and workers only."""

RESULT = b"R"
"""First byte of a worker's message to its agent that holds its pickled result (else: JSON)."""

ENV_RUN_DIR = "UNILAB_LAUNCH_DIR"
"""The launch's folder (for `exits/`), exported to every agent."""

ENV_LAUNCHER = "UNILAB_LAUNCHER"
"""'<host> <pid> <start ticks>' of the launcher process, exported to every agent."""

ENV_HOST = "UNILAB_LAUNCH_HOST"
"""The host's name as given in the launch's host list (log records carry it)."""

ENV_CONTROL = "UNILAB_LAUNCH_CONTROL"
"""'<address> <port>' of the launcher's control server, for agents and workers."""

_log = logging.getLogger("unilab_launch.worker")


@attrs.frozen(kw_only=True)
class WorkerSpec:
    """What every worker of one launch needs to know (pickled to the workers)."""

    run_dir: str
    seed: int
    use_gpus: bool
    timeout: float
    num_threads: int | None


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write `data` as JSON to `path` through a temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def _device(spec: WorkerSpec, local_rank: int, local_world_size: int) -> torch.device:
    if not spec.use_gpus:
        return torch.device("cpu")
    count = torch.cuda.device_count()
    if count < local_world_size:
        raise RuntimeError(
            f"{local_world_size} GPU workers on host {socket.gethostname()} but only {count} "
            f"CUDA device(s) visible (CUDA_VISIBLE_DEVICES="
            f"{os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')})"
        )
    device = torch.device("cuda", local_rank)
    torch.cuda.set_device(device)
    return device


def _fail(rank: int, local_rank: int, run_dir: Path, exc: BaseException, agent: Any) -> NoReturn:
    """Record the failure of this worker, tell its agent, and end the process with status 1."""
    record = {
        "rank": rank,
        "local_rank": local_rank,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "time_ns": time.time_ns(),
        "error": f"{type(exc).__name__}: {exc}",
        "traceback": traceback.format_exc(),
    }
    with contextlib.suppress(Exception):
        write_json_atomic(run_dir / "failures" / f"rank{rank}.json", record)
    with contextlib.suppress(Exception):
        agent.send_bytes(json.dumps(record).encode())
    with contextlib.suppress(Exception):
        _log.error("rank %d failed:\n%s", rank, record["traceback"].rstrip())
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    with contextlib.suppress(Exception):
        logging.shutdown()
    os._exit(1)


def run_worker(
    spec: WorkerSpec, target: Callable[..., Any], args: Sequence[Any], agent: Any
) -> None:
    """Prepare this worker (threads, device, seed, process group), run `target(*args)` and send
    the pickled result to the agent through the pipe `agent`.

    Sets `UNILAB_SEED` (this rank's seed), `UNILAB_BASE_SEED` and `UNILAB_RUN_DIR` in the
    worker's environment. On any exception the worker records it and exits (module docstring).
    """
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    local_world_size = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    run_dir = Path(spec.run_dir)
    created_group = False
    try:
        pid = os.getpid()
        record = {
            "rank": rank,
            "host": socket.gethostname(),
            "pid": pid,
            "start": process_start_ticks(pid),
        }
        write_json_atomic(run_dir / "pids" / f"rank{rank}.json", record)
        if spec.num_threads is not None:
            torch.set_num_threads(spec.num_threads)
        device = _device(spec, local_rank, local_world_size)

        from unilab_dist import DistContext, seed_everything, seed_for_rank

        seed = seed_for_rank(spec.seed, rank)
        os.environ.update(
            UNILAB_SEED=str(seed), UNILAB_BASE_SEED=str(spec.seed), UNILAB_RUN_DIR=str(run_dir)
        )
        seed_everything(seed)
        if not dist.is_initialized():
            timeout = timedelta(seconds=spec.timeout)
            # the first host's agent holds the store (bound where the launch listens)
            store = dist.TCPStore(
                os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), None, False, timeout
            )
            kwargs: dict[str, Any] = {"device_id": device} if device.type == "cuda" else {}
            dist.init_process_group(
                "nccl" if device.type == "cuda" else "gloo",
                store=store,
                world_size=world_size,
                rank=rank,
                timeout=timeout,
                **kwargs,
            )
            created_group = True
        DistContext.from_env(device)  # checks device against local rank, group against env
        result = target(*args)
        if created_group and dist.is_initialized():
            with contextlib.suppress(Exception):
                dist.destroy_process_group()
        agent.send_bytes(RESULT + cloudpickle.dumps(result))
    except BaseException as exc:
        _fail(rank, local_rank, run_dir, exc, agent)


def worker_main(env: dict[str, str], payload: bytes, agent: Any) -> None:
    """Entry of a worker process, spawned by its agent: `env` is this worker's environment
    (rank, store address), `payload` the pickled (WorkerSpec, target, args), `agent` the write
    end of a pipe to the agent."""
    parent = os.getppid()
    if parent_death_signal(signal.SIGKILL) and os.getppid() != parent:
        os._exit(1)  # the agent ended before the parent-death signal was armed
    ignore_terminal_interrupt()
    os.environ.update(env)
    host, port = os.environ[ENV_CONTROL].split()
    log_to_launcher(
        (host, int(port)),
        bytes.fromhex(os.environ[ENV_KEY]),
        os.environ[ENV_HOST],
        int(env["LOCAL_RANK"]),
    )
    log_lines(1, logging.INFO)
    log_lines(2, logging.WARNING)
    spec, target, args = cloudpickle.loads(payload)
    run_worker(spec, target, args, agent)
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
