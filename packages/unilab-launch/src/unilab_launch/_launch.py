"""`launch`: run a function on one worker per GPU, or N CPU workers, on one or many hosts.

Order of work: validate everything that can be checked here (settings, target import, argument
pickling, host names, GPU count on this machine) -> start one UniLab agent per host and hand
them `run_worker` with the function (`_launcher.py`) -> collect per-rank results, or turn the
first failure into `WorkerFailedError` after making sure that no worker of this machine is left
running. SIGINT and SIGTERM of the launcher stop the run (`LaunchInterrupted`, `_signals.py`).

What UniLab takes from torchrunx: host access only (`execute_command`, which starts a command
over SSH; `get_gpus_per_host`; `in_slurm_job` / `slurm_hosts`). The launch itself (control
server, agents, workers, log stream, signals) is unilab_launch's own.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import cloudpickle
import torch
import torch.distributed as dist

from ._config import LaunchConfig
from ._failures import WorkerFailedError, failure_from, read_records
from ._launcher import AgentsFailed, Plan, run_agents
from ._logs import LogHandlers
from ._net import is_local_host
from ._proc import process_start_ticks
from ._signals import LaunchInterrupted, interrupt_on_signals
from ._slurm import resolve_hosts
from ._target import module_root, resolve_target
from ._worker import ENV_LAUNCHER, ENV_RUN_DIR, WorkerSpec

__all__ = ["LaunchInterrupted", "WorkerFailedError", "launch"]

_UNSET: Any = object()


# what to do instead on a machine without a GPU
_CPU_HINT = "; to run on the CPU, give cpu_workers=N instead (`--cpu-workers N`)"


def _cuda_device_count() -> int:
    """Visible CUDA devices of this machine (0 without CUDA); no CUDA context is created."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


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
                raise ValueError(
                    f"gpus='all' but no CUDA device is visible on this machine{_CPU_HINT}"
                )
            return [count] * len(hosts), True, {}
        from torchrunx.utils.environment import get_gpus_per_host

        counts = get_gpus_per_host(list(hosts), ssh_config_file=config.ssh_config_file)
        if 0 in counts:
            missing = [h for h, c in zip(hosts, counts, strict=True) if c == 0]
            raise ValueError(f"gpus='all' but no CUDA device is visible on {missing}")
        return list(counts), True, {}
    assert isinstance(gpus, tuple)
    if local:
        count = _cuda_device_count()
        if max(gpus) >= count:
            raise ValueError(
                f"GPUs {list(gpus)} requested but only {count} CUDA device(s) are visible "
                f"on this machine{_CPU_HINT if count == 0 else ''}"
            )
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [s.strip() for s in visible.split(",")] if visible else None
    if ids is not None and max(gpus) >= len(ids):
        raise ValueError(f"GPUs {list(gpus)} requested but CUDA_VISIBLE_DEVICES={visible!r}")
    selected = [ids[i] for i in gpus] if ids is not None else [str(i) for i in gpus]
    return [len(gpus)] * len(hosts), True, {"CUDA_VISIBLE_DEVICES": ",".join(selected)}


def _clear_records(run_dir: Path) -> None:
    for sub in ("failures", "pids", "exits"):
        for path in (run_dir / sub).glob("*.json"):
            path.unlink()


def _alive(pid: int, start: int | None) -> bool:
    return start is not None and process_start_ticks(pid) == start


def _stop_local_workers(run_dir: Path, grace_s: float = 5.0) -> None:
    """SIGTERM, then SIGKILL, every worker of this machine that is still running."""
    me = socket.gethostname()
    procs = [
        (r["pid"], r.get("start"))
        for r in read_records(run_dir / "pids")
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
    local = all(is_local_host(h) for h in hostnames)
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
    plan = Plan(
        hostnames=hostnames,
        counts=counts,
        env=worker_env,
        copy_env=config.copy_env,
        ssh_config_file=None if config.ssh_config_file is None else str(config.ssh_config_file),
        agent_timeout=float(config.agent_timeout),
    )
    handlers = LogHandlers(run_dir, hostnames, counts, console=config.console)()
    try:
        with interrupt_on_signals():
            values = run_agents(
                plan, (spec, fn, args), handlers, lambda: _stop_local_workers(run_dir)
            )
    except AgentsFailed as exc:
        raise failure_from(str(exc), exc.failures, exc.exits, run_dir, hostnames, counts) from None
    except LaunchInterrupted as exc:
        raise LaunchInterrupted(exc.signal, run_dir) from None
    finally:
        for handler in handlers:
            handler.close()
    _stop_local_workers(run_dir)
    if temporary:
        shutil.rmtree(run_dir, ignore_errors=True)
    return values
