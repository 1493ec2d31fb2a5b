"""`launch`: run a function on one worker per GPU, or N CPU workers, on one or many hosts.

Order of work: validate everything that can be checked here (settings, target import, argument
pickling, host names, GPU count on this machine) -> start torchrunx's launcher (agents on every
host, over SSH for remote ones) with `run_worker` as the function -> collect per-rank results,
or turn the first failure into `WorkerFailedError` after making sure that no worker of this
machine is left running. The agents are torchrunx's, run through `_agent.py` (exit reports, the
launcher's end); SIGTERM of the launcher stops the run as Ctrl-C does (`LaunchInterrupted`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import re
import shutil
import signal
import socket
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import cloudpickle
import torch
import torch.distributed as dist

from ._config import LaunchConfig
from ._logs import LogHandlers, rank_log_path
from ._proc import process_start_ticks
from ._slurm import resolve_hosts
from ._target import module_root, resolve_target
from ._worker import (
    ENV_LAUNCHER,
    ENV_RUN_DIR,
    EXITS_MARKER,
    FAILURE_MARKER,
    WorkerSpec,
    run_worker,
)

__all__ = ["LaunchInterrupted", "WorkerFailedError", "launch"]

_UNSET: Any = object()


class WorkerFailedError(RuntimeError):
    """A worker of a launch failed; the others were stopped.

    Attributes:
        rank: global rank of the first worker that failed (None if unknown, e.g. an agent died).
        local_rank: its rank on its host (None if unknown).
        host: the host it ran on.
        pid: its process id (None if unknown).
        error: "ExceptionType: message" of the worker's exception, or how it ended without one
            ("killed by signal SIGKILL", "exited with status 3").
        traceback: the worker's formatted traceback ("" if none was recorded).
        signal: name of the signal that killed it ("SIGKILL"), None otherwise.
        exit_status: its exit status when it ended without a traceback, None otherwise.
        log_path: that rank's log file on the launcher's machine.
        run_dir: the launch's folder (logs, failure records).
    """

    def __init__(
        self,
        message: str,
        *,
        rank: int | None = None,
        local_rank: int | None = None,
        host: str | None = None,
        pid: int | None = None,
        error: str = "",
        traceback: str = "",
        signal: str | None = None,
        exit_status: int | None = None,
        log_path: Path | None = None,
        run_dir: Path | None = None,
    ) -> None:
        super().__init__(message)
        self.rank = rank
        self.local_rank = local_rank
        self.host = host
        self.pid = pid
        self.error = error
        self.traceback = traceback
        self.signal = signal
        self.exit_status = exit_status
        self.log_path = log_path
        self.run_dir = run_dir


class LaunchInterrupted(KeyboardInterrupt):
    """The launcher got SIGINT (Ctrl-C) or SIGTERM during a launch; every worker was stopped.

    A `KeyboardInterrupt`, so code that handles Ctrl-C handles SIGTERM the same way.

    Attributes:
        signal: "SIGINT" or "SIGTERM".
        run_dir: the launch's folder (logs).
    """

    def __init__(self, signal: str, run_dir: Path | None = None) -> None:
        where = f" (logs: {run_dir})" if run_dir is not None else ""
        super().__init__(f"interrupted by {signal}; all workers were stopped{where}")
        self.signal = signal
        self.run_dir = run_dir


def _cuda_device_count() -> int:
    """Visible CUDA devices of this machine (0 without CUDA); no CUDA context is created."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _is_local(host: str) -> bool:
    if host in {"localhost", socket.gethostname(), socket.getfqdn()}:
        return True
    with contextlib.suppress(OSError, ValueError):
        import ipaddress

        addrs = {a[4][0] for a in socket.getaddrinfo(host, None)}
        if any(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addrs):
            return True
        own = {a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None)}
        return bool(addrs & own)
    return False


def _check_hosts_resolve(hosts: Sequence[str]) -> None:
    for host in hosts:
        try:
            socket.getaddrinfo(host, None)
        except OSError as exc:
            raise ValueError(f"host {host!r} does not resolve: {exc}") from None


def _workers_per_host(
    config: LaunchConfig, hosts: Sequence[str], local: bool
) -> tuple[list[int], bool, dict[str, str]]:
    """(workers per host, use GPUs, extra environment) for `config`; raises before any start."""
    gpus, cpu = config.gpus, config.cpu_workers
    if gpus is None and cpu is None:
        if not local:
            raise ValueError("with remote hosts, give gpus ('all' or indices) or cpu_workers")
        count = _cuda_device_count()
        gpus, cpu = ("all", None) if count > 0 else (None, 1)
    if cpu is not None:
        return [cpu] * len(hosts), False, {}
    if gpus == "all":
        if local:
            count = _cuda_device_count()
            if count == 0:
                raise ValueError("gpus='all' but no CUDA device is visible on this machine")
            return [count] * len(hosts), True, {}
        from torchrunx.utils.environment import resolve_environment

        _, counts = resolve_environment(list(hosts), "gpu", ssh_config_file=config.ssh_config_file)
        return list(counts), True, {}
    assert isinstance(gpus, tuple)
    if local:
        count = _cuda_device_count()
        if max(gpus) >= count:
            raise ValueError(
                f"GPUs {list(gpus)} requested but only {count} CUDA device(s) are visible "
                f"on this machine"
            )
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [s.strip() for s in visible.split(",")] if visible else None
    if ids is not None and max(gpus) >= len(ids):
        raise ValueError(f"GPUs {list(gpus)} requested but CUDA_VISIBLE_DEVICES={visible!r}")
    selected = [ids[i] for i in gpus] if ids is not None else [str(i) for i in gpus]
    return [len(gpus)] * len(hosts), True, {"CUDA_VISIBLE_DEVICES": ",".join(selected)}


PORT_ATTEMPTS = 3
"""Launch attempts when a rendezvous port is taken before anything ran (see `_run`)."""

_PORT_TAKEN = ("EADDRINUSE", "address already in use")


def _port_taken_before_start(exc: BaseException, run_dir: Path) -> bool:
    """True if the launch failed only because a port was taken between its pick and its bind.

    torchrunx picks free ports (launcher-agent rendezvous, the workers' `MASTER_PORT`) by
    binding port 0 and closing it; another process, e.g. a second agent on the same machine,
    can take the port before it is bound again. Such a failure happens before any target runs:
    either torchrunx itself fails (no worker record) or every worker that failed did so inside
    `init_process_group`. Then launching again (new ports) is safe.
    """
    records = _read_records(run_dir / "failures")
    if not records:
        return any(marker in str(exc) for marker in _PORT_TAKEN)
    return all(
        any(marker in r.get("error", "") for marker in _PORT_TAKEN)
        and "init_process_group" in r.get("traceback", "")
        for r in records
    )


def _clear_records(run_dir: Path) -> None:
    for sub in ("failures", "pids", "exits"):
        for path in (run_dir / sub).glob("*.json"):
            path.unlink()


def _read_records(folder: Path) -> list[dict[str, Any]]:
    records = []
    for path in sorted(folder.glob("rank*.json")):
        with contextlib.suppress(OSError, ValueError):
            records.append(json.loads(path.read_text()))
    return records


def _alive(pid: int, start: int | None) -> bool:
    return start is not None and process_start_ticks(pid) == start


def _stop_local_workers(run_dir: Path, grace_s: float = 5.0) -> None:
    """SIGTERM, then SIGKILL, every worker of this machine that is still running."""
    me = socket.gethostname()
    procs = [
        (r["pid"], r.get("start"))
        for r in _read_records(run_dir / "pids")
        if r.get("host") == me and _alive(r["pid"], r.get("start"))
    ]
    for pid, _ in procs:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while procs and time.monotonic() < deadline:
        procs = [(p, s) for p, s in procs if _alive(p, s)]
        time.sleep(0.05)
    for pid, _ in procs:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _marked_json(text: str, marker: str) -> list[Any]:
    """Every JSON value that follows `marker` in `text`."""
    values, decoder = [], json.JSONDecoder()
    for part in text.split(marker)[1:]:
        with contextlib.suppress(ValueError):
            values.append(decoder.raw_decode(part)[0])
    return values


def _exit_reports(text: str, run_dir: Path) -> list[dict[str, Any]]:
    """The agents' reports of workers that ended with a non-zero status (see `_agent.py`)."""
    reports = [r for record in _read_records(run_dir / "exits") for r in record["reports"]]
    for carried in _marked_json(text, EXITS_MARKER):
        reports.extend(carried)
    return list({(r["host"], r["local_rank"]): r for r in reports}.values())


def _how_it_ended(exitcode: int) -> tuple[str, str | None, int | None]:
    """("killed by signal SIGKILL", "SIGKILL", None) or ("exited with status 3", None, 3)."""
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"killed by signal {name}", name, None
    return f"exited with status {exitcode}", None, exitcode


def _failure_from(
    exc: BaseException, run_dir: Path, hosts: Sequence[str], counts: Sequence[int]
) -> WorkerFailedError:
    """The `WorkerFailedError` for the worker whose failure came first.

    A worker that ended on its own without a failure record (a signal, `os._exit`, a crash; its
    agent saw it end before stopping anything) comes first: its peers' records are the
    collective errors that its death caused. Otherwise the earliest failure record wins (files,
    then torchrunx's message).
    """
    records = _read_records(run_dir / "failures")
    text = str(exc)
    records.extend(_marked_json(text, FAILURE_MARKER))
    # the same record may come both from the shared folder and through torchrunx
    records = list({(r["rank"], r["time_ns"]): r for r in records}.values())
    world = sum(counts)
    starts = dict(zip(hosts, itertools.accumulate([0, *counts]), strict=False))
    recorded = {int(r["rank"]) for r in records}
    silent = [
        {**r, "rank": starts[r["host"]] + int(r["local_rank"])}
        for r in _exit_reports(text, run_dir)
        if r["host"] in starts
    ]
    silent = [r for r in silent if r["rank"] not in recorded]
    if silent:
        first = min(silent, key=lambda r: r["seen_ns"])
        rank = int(first["rank"])
        how, sig, status = _how_it_ended(int(first["exitcode"]))
        others = sorted(recorded | {int(r["rank"]) for r in silent if r is not first})
        log_path = rank_log_path(run_dir, rank)
        return WorkerFailedError(
            f"rank {rank} of {world} (host {first['host']}, local rank {first['local_rank']}, "
            f"pid {first['pid']}) failed first: {how} (no traceback)\n"
            + _stopped_line(others, log_path),
            rank=rank,
            local_rank=int(first["local_rank"]),
            host=first["host"],
            pid=int(first["pid"]),
            error=how,
            signal=sig,
            exit_status=status,
            log_path=log_path,
            run_dir=run_dir,
        )
    if not records:
        rank = None
        match = re.search(r"PID (\d+)", text)
        if match:
            pids = {r["pid"]: r["rank"] for r in _read_records(run_dir / "pids")}
            rank = pids.get(int(match.group(1)))
        from torchrunx import WorkerFailedError as TorchrunxWorkerFailed

        if rank is not None:
            who = f"rank {rank} of {world} failed without a traceback"
        elif isinstance(exc, TorchrunxWorkerFailed):
            who = "a worker failed without a traceback"
        else:  # an agent died or never connected (SSH, network), or torchrunx itself failed
            who = "the launch failed"
        return WorkerFailedError(
            f"{who} ({type(exc).__name__}: {text}); logs in {run_dir}",
            rank=rank,
            error=f"{type(exc).__name__}: {text}",
            log_path=None if rank is None else rank_log_path(run_dir, rank),
            run_dir=run_dir,
        )
    first = min(records, key=lambda r: r["time_ns"])
    rank = int(first["rank"])
    host = next(h for h in reversed(hosts) if starts[h] <= rank)
    log_path = rank_log_path(run_dir, rank)
    others = sorted(int(r["rank"]) for r in records if r is not first)
    message = (
        f"rank {rank} of {world} (host {host}, local rank {first['local_rank']}, "
        f"pid {first['pid']}) failed first: {first['error']}\n"
        f"{first['traceback'].rstrip()}\n" + _stopped_line(others, log_path)
    )
    return WorkerFailedError(
        message,
        rank=rank,
        local_rank=int(first["local_rank"]),
        host=host,
        pid=int(first["pid"]),
        error=first["error"],
        traceback=first["traceback"],
        log_path=log_path,
        run_dir=run_dir,
    )


def _stopped_line(others: Sequence[int], log_path: Path) -> str:
    after = f"; ranks {list(others)} failed after it" if others else ""
    return f"(all workers were stopped{after}; logs: {log_path})"


def _config_from(config: LaunchConfig | None, settings: Mapping[str, Any]) -> LaunchConfig:
    given = {k: v for k, v in settings.items() if v is not _UNSET}
    if config is None:
        return LaunchConfig(**given)
    if not isinstance(config, LaunchConfig):
        raise TypeError(f"config must be a LaunchConfig, got {type(config).__name__}")
    if given:
        raise TypeError(f"give settings either in config or as keywords, not both: {sorted(given)}")
    return config


def launch(
    target: str | Callable[..., Any],
    args: Sequence[Any] = (),
    *,
    config: LaunchConfig | None = None,
    gpus: Any = _UNSET,
    cpu_workers: Any = _UNSET,
    hosts: Any = _UNSET,
    seed: Any = _UNSET,
    env: Any = _UNSET,
    log_dir: Any = _UNSET,
    timeout: Any = _UNSET,
    **settings: Any,
) -> list[Any]:
    """Run `target(*args)` on every worker and return the results, indexed by global rank.

    `target` is a picklable function or "package.module:function". Settings come either as a
    `LaunchConfig` or as keywords (the fields of `LaunchConfig`). Each worker gets `RANK`,
    `LOCAL_RANK`, `WORLD_SIZE`, `LOCAL_WORLD_SIZE`, an initialized default process group (NCCL
    on cuda:LOCAL_RANK, or gloo on CPU, collective timeout `timeout` s), its seed
    `seed + RANK` applied to random/numpy/torch and in `UNILAB_SEED`. Global ranks run host by
    host in the order of `hosts` (for hosts "slurm": the allocation's nodes, in SLURM's order).

    Raises (before any worker starts) ValueError/TypeError for bad settings, a malformed or
    unresolvable host list, hosts "slurm" outside a SLURM allocation, more GPUs than present
    or both `gpus` and `cpu_workers`, and ImportError for an unimportable target. Raises
    `WorkerFailedError` naming the first worker that failed, with its traceback, once all
    workers are stopped.
    """
    settings.update(
        gpus=gpus,
        cpu_workers=cpu_workers,
        hosts=hosts,
        seed=seed,
        env=env,
        log_dir=log_dir,
        timeout=timeout,
    )
    config = _config_from(config, settings)
    if dist.is_available() and dist.is_initialized():
        raise RuntimeError("launch() must be called from a process without a process group")
    fn = resolve_target(target)
    if isinstance(args, str | bytes) or not isinstance(args, Sequence):
        raise TypeError(f"args must be a sequence (tuple or list), got {type(args).__name__}")
    args = tuple(args)
    try:
        cloudpickle.dumps((fn, args))
    except Exception as exc:
        raise TypeError(f"target or args cannot be pickled for the workers: {exc}") from exc
    hostnames = list(resolve_hosts(config.hosts) or ("localhost",))
    _check_hosts_resolve(hostnames)
    local = all(_is_local(h) for h in hostnames)
    counts, use_gpus, gpu_env = _workers_per_host(config, hostnames, local)
    num_threads = config.num_threads
    if num_threads is None and not use_gpus:
        num_threads = max(1, (os.cpu_count() or 1) // max(counts))
    temporary = config.log_dir is None
    run_dir = Path(tempfile.mkdtemp(prefix="unilab-launch-")) if temporary else config.log_dir
    run_dir = run_dir.resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    _clear_records(run_dir)

    worker_env = dict(config.env)
    worker_env.update(gpu_env)
    me = os.getpid()
    worker_env[ENV_RUN_DIR] = str(run_dir)
    worker_env[ENV_LAUNCHER] = f"{socket.gethostname()} {me} {process_start_ticks(me) or 0}"
    root = module_root(fn)
    if root is not None:
        current = worker_env.get("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
        worker_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), current) if p)
    spec = WorkerSpec(
        run_dir=str(run_dir),
        seed=config.seed,
        use_gpus=use_gpus,
        timeout=float(config.timeout),
        num_threads=num_threads,
    )
    return _run(config, spec, fn, args, hostnames, counts, worker_env, run_dir, temporary)


def _run(
    config: LaunchConfig,
    spec: WorkerSpec,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    hostnames: list[str],
    counts: list[int],
    worker_env: dict[str, str],
    run_dir: Path,
    temporary: bool,
) -> list[Any]:
    with _unilab_agents(), _sigterm_as_interrupt():
        return _attempts(config, spec, fn, args, hostnames, counts, worker_env, run_dir, temporary)


@contextlib.contextmanager
def _unilab_agents() -> Any:
    """Make torchrunx start `python -m unilab_launch._agent` where it starts its own agent."""
    import torchrunx.launcher

    original = torchrunx.launcher.build_launch_command

    def build_launch_command(**kwargs: Any) -> str:
        head, sep, tail = original(**kwargs).rpartition(" -m torchrunx ")
        if not sep:
            raise RuntimeError("unexpected torchrunx agent command (torchrunx 0.4 expected)")
        return f"{head} -m unilab_launch._agent {tail}"

    torchrunx.launcher.build_launch_command = build_launch_command
    try:
        yield
    finally:
        torchrunx.launcher.build_launch_command = original


class _Terminated(BaseException):
    """SIGTERM during a launch, raised in the main thread like Ctrl-C's KeyboardInterrupt."""


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Any:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    received = []

    def on_sigterm(signum: int, frame: Any) -> None:
        if not received:  # a second SIGTERM must not break off the stop under way
            received.append(signum)
            raise _Terminated

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _attempts(
    config: LaunchConfig,
    spec: WorkerSpec,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    hostnames: list[str],
    counts: list[int],
    worker_env: dict[str, str],
    run_dir: Path,
    temporary: bool,
) -> list[Any]:
    import torchrunx

    for attempt in range(1, PORT_ATTEMPTS + 1):
        launcher = torchrunx.Launcher(
            hostnames=hostnames,
            workers_per_host=counts,
            ssh_config_file=config.ssh_config_file,
            backend=None,  # run_worker creates the group itself, on the right device
            worker_timeout=math.ceil(config.timeout),
            agent_timeout=math.ceil(config.agent_timeout),
            copy_env_vars=config.copy_env,
            extra_env_vars=worker_env,
        )
        launcher.set_logging_handlers(
            LogHandlers(run_dir, hostnames, counts, console=config.console)
        )
        try:
            result = launcher.run(run_worker, spec, fn, args)
            break
        except Exception as exc:
            _stop_local_workers(run_dir)
            if attempt < PORT_ATTEMPTS and _port_taken_before_start(exc, run_dir):
                warnings.warn(
                    f"launch attempt {attempt}: a port picked for the rendezvous was taken before "
                    f"it was bound ({type(exc).__name__}); no target had started, launching again",
                    RuntimeWarning,
                    stacklevel=3,
                )
                _clear_records(run_dir)
                continue
            raise _failure_from(exc, run_dir, hostnames, counts) from None
        except (KeyboardInterrupt, _Terminated) as exc:
            # torchrunx has stopped the agents (which stop their workers); we make sure
            _stop_local_workers(run_dir)
            name = "SIGTERM" if isinstance(exc, _Terminated) else "SIGINT"
            raise LaunchInterrupted(name, run_dir) from None
        except BaseException:
            _stop_local_workers(run_dir)
            raise
    _stop_local_workers(run_dir)
    values = [v for host in hostnames for v in result.results[host]]
    if temporary:
        shutil.rmtree(run_dir, ignore_errors=True)
    return values
