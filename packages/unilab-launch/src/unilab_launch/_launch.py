"""`launch`: run a function on one worker per GPU, or N CPU workers, on one or many hosts.

Order of work: validate everything that can be checked here (settings, target import, argument
pickling, host names, GPU count on this machine) -> start torchrunx's launcher (agents on every
host, over SSH for remote ones) with `run_worker` as the function -> collect per-rank results,
or turn the first failure record into `WorkerFailedError` after making sure that no worker of
this machine is left running.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import signal
import socket
import tempfile
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
from ._target import module_root, resolve_target
from ._worker import FAILURE_MARKER, WorkerSpec, process_start_ticks, run_worker

__all__ = ["WorkerFailedError", "launch"]

_UNSET: Any = object()


class WorkerFailedError(RuntimeError):
    """A worker of a launch failed; the others were stopped.

    Attributes:
        rank: global rank of the first worker that failed (None if unknown, e.g. an agent died).
        local_rank: its rank on its host (None if unknown).
        host: the host it ran on.
        error: "ExceptionType: message" of the worker's exception.
        traceback: the worker's formatted traceback ("" if none was recorded).
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
        error: str = "",
        traceback: str = "",
        log_path: Path | None = None,
        run_dir: Path | None = None,
    ) -> None:
        super().__init__(message)
        self.rank = rank
        self.local_rank = local_rank
        self.host = host
        self.error = error
        self.traceback = traceback
        self.log_path = log_path
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
    for sub in ("failures", "pids"):
        for path in (run_dir / sub).glob("rank*.json"):
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


def _failure_from(
    exc: BaseException, run_dir: Path, hosts: Sequence[str], counts: Sequence[int]
) -> WorkerFailedError:
    """The `WorkerFailedError` for the earliest failure record (files, then torchrunx message)."""
    records = _read_records(run_dir / "failures")
    text = str(exc)
    if FAILURE_MARKER in text:
        with contextlib.suppress(ValueError):
            records.append(json.loads(text.split(FAILURE_MARKER, 1)[1]))
    # the same record may come both from the shared folder and through torchrunx
    records = list({(r["rank"], r["time_ns"]): r for r in records}.values())
    world = sum(counts)
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
    host, first_rank = hosts[-1], 0
    for name, count in zip(hosts, counts, strict=True):
        if rank < first_rank + count:
            host = name
            break
        first_rank += count
    log_path = rank_log_path(run_dir, rank)
    others = sorted(int(r["rank"]) for r in records if r is not first)
    message = (
        f"rank {rank} of {world} (host {host}, local rank {first['local_rank']}, "
        f"pid {first['pid']}) failed first: {first['error']}\n"
        f"{first['traceback'].rstrip()}\n"
        f"(all workers were stopped"
        + (f"; ranks {others} failed after it" if others else "")
        + f"; logs: {log_path})"
    )
    return WorkerFailedError(
        message,
        rank=rank,
        local_rank=int(first["local_rank"]),
        host=host,
        error=first["error"],
        traceback=first["traceback"],
        log_path=log_path,
        run_dir=run_dir,
    )


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
    host in the order of `hosts`.

    Raises (before any worker starts) ValueError/TypeError for bad settings, a malformed or
    unresolvable host list, more GPUs than present or both `gpus` and `cpu_workers`, and
    ImportError for an unimportable target. Raises `WorkerFailedError` naming the first worker
    that failed, with its traceback, once all workers are stopped.
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
    hostnames = list(config.hosts or ("localhost",))
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
        except BaseException:  # Ctrl-C in the launcher: torchrunx stops the agents, we the workers
            _stop_local_workers(run_dir)
            raise
    _stop_local_workers(run_dir)
    values = [v for host in hostnames for v in result.results[host]]
    if temporary:
        shutil.rmtree(run_dir, ignore_errors=True)
    return values
