"""`train(config)`: validate everything that can be validated, then launch one worker per rank.

Refused before any worker starts and before anything is written (ValueError naming the
cause): unknown task, algorithm or preset; an `env.kwargs` option the task does not have or
whose value it refuses; an unknown logger (`runner.logging.loggers`; ImportError
naming the extra for one whose package is missing); no budget; more GPUs than present; a host that is
malformed or does not resolve; `--hosts slurm` outside a SLURM allocation; an env count that
does not divide by the world size under `env.scope=global`; a resume checkpoint or teacher
that is missing or from another task or algorithm; a resume whose budget the checkpoint has
already reached; a run folder that the rules of `_rundir` forbid (another run's folder, a
live trainer's lock). The network shapes are checked inside the workers (they need the env):
a mismatch there fails the run (exit 1 from the command) with the difference named.
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path
from typing import Any

import attrs
import torch

from ._algorithms import algorithm_spec
from ._checkpoint import (
    CheckpointError,
    load_checkpoint,
    load_teacher_checkpoint,
    remove_temporaries,
)
from ._config import TrainConfig, save_config
from ._envs import (
    check_env_options,
    check_mirror_maps,
    check_named_imports,
    check_task,
    import_modules,
)
from ._resume import check_run_config, interrupted_note, note_resume
from ._rundir import RunLock, RunPlan, plan_run_folder, register_worker
from ._sinks import check_sinks

__all__ = ["plan_world", "run_directory", "train", "train_worker", "validate", "with_slurm_hosts"]


def _visible_gpus() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def plan_world(config: TrainConfig) -> tuple[int, str]:
    """(world size, device kind "cuda"|"cpu") the launch settings ask for, validated.

    `launch.gpus` and `launch.hosts` are read by unilab_launch's own parsers (`parse_gpus`,
    `parse_hosts`: what the launcher accepts), their errors prefixed with the flag; hosts
    "slurm" count the allocation's nodes (`with_slurm_hosts`). Each host runs the same number
    of workers: `cpu_workers`, the listed GPUs, or with "all" (or neither) as many as this
    machine has.
    """
    from unilab_launch import parse_gpus

    launch = with_slurm_hosts(config).launch
    hosts = _host_count(launch.hosts)
    if launch.cpu_workers is not None:
        return launch.cpu_workers * hosts, "cpu"
    try:
        gpus = parse_gpus(launch.gpus)
    except (ValueError, TypeError) as e:
        raise ValueError(f"--gpus: {e}") from None
    present = _visible_gpus()
    if gpus is None:
        return (present * hosts, "cuda") if present else (hosts, "cpu")
    cpu = "; to train on the CPU, use --cpu-workers N instead" if not present else ""
    if gpus == "all":
        if not present:
            raise ValueError(f"--gpus all: no CUDA GPU is visible on this machine{cpu}")
        return present * hosts, "cuda"
    if hosts == 1 and max(gpus) >= present:
        raise ValueError(
            f"--gpus {launch.gpus} asks for GPU {max(gpus)} but only {present} GPU(s) are "
            f"visible on this machine{cpu}"
        )
    return len(gpus) * hosts, "cuda"


def _parsed_hosts(hosts: str | None) -> tuple[str, ...] | str | None:
    """`unilab_launch.parse_hosts(hosts)` (a tuple, "slurm" or None), its errors naming
    --hosts."""
    from unilab_launch import parse_hosts

    try:
        return parse_hosts(hosts)
    except (ValueError, TypeError) as e:
        raise ValueError(f"--hosts: {e}") from None


def _host_count(hosts: str | None) -> int:
    """The hosts of a resolved `launch.hosts` (no "slurm" left); 1 for this machine alone."""
    parsed = _parsed_hosts(hosts)
    if parsed == "slurm":
        raise ValueError("--hosts slurm: resolve the nodes first (with_slurm_hosts)")
    return 1 if parsed is None else len(parsed)


def with_slurm_hosts(config: TrainConfig) -> TrainConfig:
    """`config` with `launch.hosts` "slurm" replaced by the SLURM allocation's nodes
    ("node1,node2", asked once through `unilab_launch.resolve_hosts`); unchanged otherwise.
    ValueError naming SLURM outside an allocation, naming --hosts for a malformed list."""
    from unilab_launch import resolve_hosts

    hosts = config.launch.hosts
    if _parsed_hosts(hosts) != "slurm":
        return config
    nodes = ",".join(resolve_hosts(hosts) or ())
    return attrs.evolve(config, launch=attrs.evolve(config.launch, hosts=nodes))


def validate(config: TrainConfig, resume: str | None = None) -> int:
    """Check `config` (and a resume checkpoint) before launching; return the world size."""
    return _validate(config, resume)[0]


def _validate(config: TrainConfig, resume: str | None) -> tuple[int, dict | None]:
    """`validate`, also returning the resume checkpoint (None without one)."""
    import_modules(config.runner.imports)
    check_task(config.task)
    check_env_options(config.task, dict(config.env.kwargs), config.runner.imports)
    if getattr(config.algo, "symmetry", None) is not None:
        check_mirror_maps(config.task, dict(config.env.kwargs), config.preset)
    check_sinks(config.runner.logging.loggers)
    run = config.runner
    if run.iterations is None and run.env_steps is None and not run.until_solved:
        raise ValueError("no training budget: give --iterations, --env-steps or --until-solved")
    config = with_slurm_hosts(config)
    world, _ = plan_world(config)
    config.env.per_rank(world)
    _check_hosts(config.launch.hosts)
    ckpt = None
    if resume is not None:
        ckpt = load_checkpoint(resume)
        check_saved_imports(ckpt, config)
        for key, mine in (("task", config.task), ("algo_name", config.algo_name)):
            if ckpt[key] != mine:
                what = "task" if key == "task" else "algorithm"
                raise CheckpointError(
                    f"{ckpt['path']} was trained with {what} '{ckpt[key]}', this run uses '{mine}'"
                )
        _check_budget_left(config, world, ckpt)
    if algorithm_spec(config.algo_name).teacher:
        check_saved_imports(load_teacher_checkpoint(run.teacher, config.task), config)
    return world, ckpt


def check_saved_imports(ckpt: dict, config: TrainConfig) -> None:
    """A checkpoint's saved `runner.imports` are imported only when this run names them too."""
    saved = ckpt["config"].get("runner", {}).get("imports") or ()
    check_named_imports(saved, config.runner.imports, ckpt["path"])


def _check_hosts(hosts: str | None) -> None:
    """A malformed or unresolvable host list is refused here, before the run folder exists
    (unilab_launch checks it again, later)."""
    parsed = _parsed_hosts(hosts)
    for host in parsed if isinstance(parsed, tuple) else ():
        try:
            socket.getaddrinfo(host, None)
        except OSError as e:
            raise ValueError(f"--hosts: host {host!r} does not resolve ({e})") from None


def _check_budget_left(config: TrainConfig, world: int, ckpt: dict) -> None:
    """Refuse a resume that would run no iteration: a budget is the run's total."""
    from ._runners._budget import plan_budget

    done, steps = int(ckpt["iteration"]), int(ckpt["counters"]["env_steps_global"])
    budget = plan_budget(config, world, iteration=done, env_steps_global=steps)
    if budget.iterations is not None and budget.iterations <= done:
        more = (
            f"--env-steps above {steps}"
            if budget.source.startswith("--env-steps")
            else f"--iterations {done + 1} or more"
        )
        raise ValueError(
            f"{ckpt['path']} is at iteration {done} ({steps} global env steps), which its "
            f"budget ({budget.source}) has already reached: a budget counts the run's total, "
            f"resume included; give a larger one to continue ({more})"
        )


def run_directory(config: TrainConfig, resume: str | None) -> Path:
    """Where this run writes: log_dir/run_name, the resumed run's folder, or a new stamp
    (refused, `RunFolderError`, where the rules of `_rundir` forbid it)."""
    return plan_run_folder(config, resume).path


def train_worker(
    config_dict: dict[str, Any], run_dir: str, resume: str | None, device_kind: str
) -> dict[str, Any]:
    """The function every rank runs (through unilab_launch): build the runner, train, return."""
    from unilab_dist import init_distributed

    from ._runners import make_runner

    # the modules the launcher's command named (they may register the algorithm or the task)
    register_worker(run_dir)  # a takeover of the run's lock waits for this process to end
    import_modules(config_dict["runner"]["imports"])
    config = TrainConfig.from_dict(config_dict)
    quiet_warp()
    if device_kind == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    else:
        device = torch.device("cpu")
    ctx = init_distributed(device, timeout_s=config.launch.timeout)
    apply_torch_settings(config.runner)
    runner = make_runner(config, ctx, run_dir)
    if resume is not None:
        runner.load(resume)
    else:
        runner.broadcast_state()
    return dict(runner.run())


def apply_torch_settings(runner: Any) -> None:
    """This process's torch switches from the `RunnerConfig`: deterministic algorithms and the
    float32 matmul precision (every rank the same)."""
    if runner.deterministic:
        torch.use_deterministic_algorithms(True)
    torch.set_float32_matmul_precision(runner.matmul_precision)


def quiet_warp() -> None:
    """Keep warp's per-module load lines out of the training log (errors still show), and, on a
    machine without a CUDA driver (a CPU run), warp's notice that GPU execution is unavailable."""
    try:
        import warp as wp
    except ImportError:
        return
    wp.config.log_level = wp.LOG_WARNING
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return

    for name in ("libcuda.so", "libcuda.so.1"):  # what warp's native init tries to load
        try:
            ctypes.CDLL(name)
            return  # a driver is there: every CUDA message of warp stays
        except OSError:
            pass
    # the notice comes from native code on file descriptor 2 inside wp.init(); init warp now
    # with that descriptor on /dev/null (a failing init still raises)
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        wp.init()
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def train(config: TrainConfig, *, resume: str | None = None) -> dict[str, Any]:
    """Validate, lock the run folder, write its config, launch the workers, return rank 0's
    result.

    Everything that can be refused is refused before the run folder is touched. The folder's
    lock is released on every way out: Ctrl-C and SIGTERM follow unilab_launch's signal policy
    (`interrupt_on_signals`: `LaunchInterrupted`, a KeyboardInterrupt, raised after the workers
    were stopped). A failing worker raises `unilab_launch.WorkerFailedError` (its rank and
    traceback).
    """
    from unilab_launch import interrupt_on_signals

    config = with_slurm_hosts(config)  # the nodes are asked once; config.json records them
    world, ckpt = _validate(config, resume)
    plan = plan_run_folder(config, resume)
    lock = RunLock(plan.path)
    with interrupt_on_signals():
        try:
            lock.acquire()
            # again, under the lock (another trainer may have written since), same folder
            logging = attrs.evolve(
                config.runner.logging, log_dir=str(plan.path.parent), run_name=plan.path.name
            )
            here = attrs.evolve(config.runner, logging=logging)
            config = attrs.evolve(config, runner=here)  # its configs record where it is
            plan = plan_run_folder(config, resume)
            remove_temporaries(plan.path / "checkpoints")  # ours alone, under the lock
            if ckpt is not None:
                note_resume(ckpt, config, plan.path)
                if plan.resumed_from is not None:
                    check_run_config(plan.path / "config.json")
            try:
                return _launch(config, resume, world, plan)
            except KeyboardInterrupt as e:  # Ctrl-C: say where a resume starts and what is lost
                e.args = (f"{e}; {interrupted_note(plan.path)}",)
                raise
        finally:
            lock.release()


def _launch(config: TrainConfig, resume: str | None, world: int, plan: RunPlan) -> dict[str, Any]:
    import unilab_launch

    _, device_kind = plan_world(config)
    run_dir = plan.path
    save_config(config, run_dir / plan.config_name)
    launch = config.launch
    try:
        results = unilab_launch.launch(
            train_worker,
            (config.to_dict(), str(run_dir), None if resume is None else str(resume), device_kind),
            gpus=launch.gpus if device_kind == "cuda" and launch.gpus is not None else None,
            cpu_workers=world // _host_count(launch.hosts) if device_kind == "cpu" else None,
            hosts=launch.hosts,
            seed=config.runner.seed,
            log_dir=plan.log_dir,
            timeout=launch.timeout,
        )
    except (ValueError, TypeError):  # refused by the launcher before any worker: undo our writes
        (run_dir / plan.config_name).unlink(missing_ok=True)
        shutil.rmtree(plan.log_dir, ignore_errors=True)  # this session's own log folder
        raise
    result = dict(results[0])
    result["run_dir"] = str(run_dir)
    result["world_size"] = world
    return result
