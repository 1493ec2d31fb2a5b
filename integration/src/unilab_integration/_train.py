"""`train(config)`: validate everything that can be validated, then launch one worker per rank.

Refused before any worker starts (ValueError naming the cause): unknown task, algorithm or
preset; no budget; more GPUs than present; an env count that does not divide by the world
size under `env.scope=global`; a resume checkpoint or teacher that is missing or from another
task or algorithm. The network shapes are checked inside the workers (they need the env): a
mismatch there fails the run (exit 1 from the command) with the difference named.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import torch

from ._checkpoint import (
    CheckpointError,
    load_checkpoint,
    load_teacher_checkpoint,
    resolve_checkpoint,
)
from ._config import TrainConfig, save_config
from ._envs import check_task, import_modules

__all__ = ["plan_world", "run_directory", "train", "train_worker", "validate"]


def _visible_gpus() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def plan_world(config: TrainConfig) -> tuple[int, str]:
    """(world size, device kind "cuda"|"cpu") the launch settings ask for, validated."""
    launch = config.launch
    hosts = 1 if launch.hosts is None else len([h for h in launch.hosts.split(",") if h.strip()])
    if launch.cpu_workers is not None:
        return launch.cpu_workers * hosts, "cpu"
    present = _visible_gpus()
    if launch.gpus is None:
        return (present * hosts, "cuda") if present else (hosts, "cpu")
    if launch.gpus.strip().lower() == "all":
        if not present:
            raise ValueError("--gpus all: no CUDA GPU is visible on this machine")
        return present * hosts, "cuda"
    try:
        indices = [int(i) for i in launch.gpus.split(",")]
    except ValueError:
        raise ValueError(
            f"malformed --gpus '{launch.gpus}': use 'all' or indices like 0,1"
        ) from None
    if len(set(indices)) != len(indices) or min(indices) < 0:
        raise ValueError(f"malformed --gpus '{launch.gpus}': indices must be distinct and >= 0")
    if hosts == 1 and max(indices) >= present:
        raise ValueError(
            f"--gpus {launch.gpus} asks for GPU {max(indices)} but only {present} GPU(s) are "
            "visible on this machine"
        )
    return len(indices) * hosts, "cuda"


def validate(config: TrainConfig, resume: str | None = None) -> int:
    """Check `config` (and a resume checkpoint) before launching; return the world size."""
    import_modules(config.runner.imports)
    check_task(config.task)
    run = config.runner
    if run.iterations is None and run.env_steps is None and not run.until_solved:
        raise ValueError("no training budget: give --iterations, --env-steps or --until-solved")
    world, _ = plan_world(config)
    config.env.per_rank(world)
    if resume is not None:
        ckpt = load_checkpoint(resume)
        for key, mine in (("task", config.task), ("algo_name", config.algo_name)):
            if ckpt[key] != mine:
                what = "task" if key == "task" else "algorithm"
                raise CheckpointError(
                    f"{ckpt['path']} was trained with {what} '{ckpt[key]}', this run uses '{mine}'"
                )
    if config.algo_name == "distill":
        load_teacher_checkpoint(run.teacher, config.task)
    return world


def run_directory(config: TrainConfig, resume: str | None) -> Path:
    """Where this run writes: log_dir/run_name, the resumed run's folder, or a new stamp."""
    if config.runner.run_name is not None:
        return Path(config.runner.log_dir) / config.runner.run_name
    if resume is not None:
        ckpt_file = resolve_checkpoint(resume)
        if ckpt_file.parent.name == "checkpoints":
            return ckpt_file.parent.parent
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path(config.runner.log_dir) / f"{config.task}_{config.algo_name}_{stamp}"


def train_worker(
    config_dict: dict[str, Any], run_dir: str, resume: str | None, device_kind: str
) -> dict[str, Any]:
    """The function every rank runs (through unilab_launch): build the runner, train, return."""
    from unilab_dist import init_distributed

    from ._runners import make_runner

    config = TrainConfig.from_dict(config_dict)
    import_modules(config.runner.imports)
    _quiet_warp()
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


def _quiet_warp() -> None:
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
    """Validate, write the run folder and config.json, launch the workers, return rank 0's result.

    A failing worker raises `unilab_launch.WorkerFailedError` (its rank and traceback).
    """
    import unilab_launch

    world = validate(config, resume)
    _, device_kind = plan_world(config)
    run_dir = run_directory(config, resume)
    run_dir.mkdir(parents=True, exist_ok=True)
    save_config(config, run_dir / "config.json")
    launch = config.launch
    results = unilab_launch.launch(
        train_worker,
        (config.to_dict(), str(run_dir), None if resume is None else str(resume), device_kind),
        gpus=launch.gpus if device_kind == "cuda" and launch.gpus is not None else None,
        cpu_workers=world // _hosts(config) if device_kind == "cpu" else None,
        hosts=launch.hosts,
        seed=config.runner.seed,
        log_dir=run_dir / "logs",
        timeout=launch.timeout,
    )
    result = dict(results[0])
    result["run_dir"] = str(run_dir)
    result["world_size"] = world
    return result


def _hosts(config: TrainConfig) -> int:
    hosts = config.launch.hosts
    return 1 if hosts is None else len([h for h in hosts.split(",") if h.strip()])
