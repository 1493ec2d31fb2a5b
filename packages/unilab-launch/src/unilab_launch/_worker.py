"""What runs inside each worker process: device, seed, process group, the target, and failure.

torchrunx starts the worker with `RANK`, `LOCAL_RANK`, `WORLD_SIZE`, `LOCAL_WORLD_SIZE`,
`MASTER_ADDR` and `MASTER_PORT` set, and calls `run_worker(spec, target, args)`.

Failure protocol (why it exists: torchrunx 0.4.0 waits until *every* worker of a host has
returned, so when one worker raises while the others sit in a collective, the launcher only
hears of it after the collective timeout, and then reports the timeout). Here a worker that
raises:

1. writes `<run_dir>/failures/rank<R>.json` (atomically) with its rank, host, pid, the time in
   nanoseconds and the traceback;
2. writes the same record to torch-elastic's error file (`TORCHELASTIC_ERROR_FILE`), so the
   record travels to the launcher through torchrunx even when `run_dir` is not shared;
3. logs the traceback to its log and exits the process with status 1 at once.

The non-zero exit makes torch-elastic on that host stop the worker's siblings within about a
second, torchrunx's agents tell each other and the launcher, and the launcher raises
`WorkerFailedError` for the earliest failure record (a rank that fails *because* its peer died
fails later).

A worker that dies without going through this path (a signal, `os._exit`, a crash) leaves no
record; its agent reports its pid and exit status instead (`_agent.py`).

Process lifetime: a worker ends when its agent ends (parent-death signal SIGKILL, Linux), and
ignores SIGINT: a Ctrl-C in the terminal reaches every process of the foreground group, and the
launcher, not each worker, turns it into one stop of the whole run.

Output: torchrunx logs every line a worker writes to stderr at ERROR; here stderr lines are
logged at WARNING (stderr is not a failure by itself), and a failure's traceback at ERROR.
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
import torch
import torch.distributed as dist

from ._logs import log_lines
from ._proc import parent_death_signal, process_start_ticks

__all__ = [
    "ENV_LAUNCHER",
    "ENV_RUN_DIR",
    "EXITS_MARKER",
    "FAILURE_MARKER",
    "WorkerSpec",
    "process_start_ticks",
    "run_worker",
]

FAILURE_MARKER = "unilab-launch-failure:"
"""Prefix of the JSON failure record carried in torchrunx's WorkerFailedError message."""

EXITS_MARKER = "unilab-launch-exits:"
"""Prefix of the JSON list of exit reports appended to torchrunx's failure message."""

ENV_RUN_DIR = "UNILAB_LAUNCH_DIR"
"""The launch's folder (for `exits/`), exported to every agent."""

ENV_LAUNCHER = "UNILAB_LAUNCHER"
"""'<host> <pid> <start ticks>' of the launcher process, exported to every agent."""

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


def _fail(rank: int, local_rank: int, run_dir: Path, exc: BaseException) -> NoReturn:
    """Record the failure of this worker and end the process with status 1."""
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
    error_file = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if error_file:
        with contextlib.suppress(Exception):
            message = FAILURE_MARKER + json.dumps(record)
            write_json_atomic(Path(error_file), {"message": message, "timestamp": time.time()})
    with contextlib.suppress(Exception):
        _log.error("rank %d failed:\n%s", rank, record["traceback"].rstrip())
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(1)


def run_worker(spec: WorkerSpec, target: Callable[..., Any], args: Sequence[Any]) -> Any:
    """Prepare this worker (threads, device, seed, process group), run `target(*args)`, return.

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
        parent = os.getppid()
        if parent_death_signal(signal.SIGKILL) and os.getppid() != parent:
            os._exit(1)  # the agent ended before the parent-death signal was armed
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        log_lines(2, logging.WARNING)
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
            kwargs: dict[str, Any] = {"device_id": device} if device.type == "cuda" else {}
            dist.init_process_group(
                "nccl" if device.type == "cuda" else "gloo",
                init_method="env://",
                world_size=world_size,
                rank=rank,
                timeout=timedelta(seconds=spec.timeout),
                **kwargs,
            )
            created_group = True
        DistContext.from_env(device)  # checks device against local rank, group against env
        result = target(*args)
    except BaseException as exc:
        _fail(rank, local_rank, run_dir, exc)
    if created_group and dist.is_initialized():
        with contextlib.suppress(Exception):
            dist.destroy_process_group()
    # From here the worker only hands its result back and tears the interpreter down. The agent
    # stops workers that are still tearing down once every result is in (SIGTERM), which would
    # raise torch-elastic's SignalException inside an exit hook and print a traceback into a
    # successful run's log; a SIGTERM now ends the process quietly.
    signal.signal(signal.SIGTERM, _exit_after_result)
    return result


def _exit_after_result(signum: int, _frame: Any) -> None:
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(128 + signum)
