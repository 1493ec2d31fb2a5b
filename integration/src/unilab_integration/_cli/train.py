"""`unilab train` and `unilab list`."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import sys
from pathlib import Path

from .._algorithms import ALGORITHMS
from .._commandline import build_config
from .._envs import check_builtin_task
from .._robots import check_robot_files

__all__ = ["list_command", "next_commands", "summary", "train_command"]


def list_command(args: argparse.Namespace) -> int:
    """`unilab list`: the tasks, algorithms and presets `unilab train` takes."""
    from .._envs import task_names

    print("tasks:")
    for name in sorted(task_names()):
        print(f"  {name}")
    print("algorithms:")
    for spec in ALGORITHMS.values():
        print(
            f"  {spec.name:8s} {spec.kind:10s} {spec.description} (presets: {', '.join(spec.presets)})"
        )
    print("presets:")
    print("  default  UniLab's global sync: global advantages, normalizers and curriculum")
    print("  rsl_rl   RSL-RL 5.4.2 semantics: local advantages, normalizers and curriculum")
    print(
        "  fast     ppo: rsl_rl + symmetry augmentation + TF32, UniLab's recipe for the tasks"
        " with mirror maps (go1/g1-velocity-*); measured faster to MJLab's 10-minute policy on"
        " go1-velocity-flat, not on g1-velocity-flat (docs/integration.md)"
    )
    return 0


def train_command(args: argparse.Namespace) -> int:
    """`unilab train`: launch the workers, then print the summary and the next commands."""
    if not args.imports and not any(
        item.partition("=")[0].strip().startswith("runner.imports") for item in args.set
    ):
        check_builtin_task(args.task)  # before make_config imports the algorithms (torch)
        if not args.print_config:
            check_robot_files(args.task, args.hosts)
    cfg = build_config(args)
    if args.print_config:
        print(json.dumps(cfg.to_dict(), indent=2, sort_keys=True))
        return 0
    from unilab_launch import WorkerFailedError

    from .._train import train

    try:
        result = train(cfg, resume=args.resume)
    except WorkerFailedError as e:
        print(f"unilab train: training failed: {e}", file=sys.stderr)
        return 1
    except ImportError as e:  # a logger's extra is missing (refused before any worker)
        print(f"unilab train: error: {e}", file=sys.stderr)
        return 2
    print(summary(result))
    print(next_commands(result["run_dir"]))
    return 0


def next_commands(run_dir: str) -> str:
    """The run folder and the commands that use it (relative to the working directory when
    inside it, as the default runs/ is)."""
    path = Path(run_dir)
    with contextlib.suppress(ValueError):
        path = path.resolve().relative_to(Path.cwd().resolve())
    run = shlex.quote(os.fspath(path))
    return (
        f"run folder {run}; next:\n"
        f"  unilab play {run} --episodes 10\n"
        f"  unilab export {run} policy.onnx"
    )


def summary(result: dict) -> str:
    """The last line: totals, and for a resumed run what this session added (its world size
    may differ from the earlier sessions', so per-rank counts are this session's)."""
    status = "solved" if result.get("solved") else "finished"
    w, start = result["world_size"], result.get("start_iteration", 0)
    done = f"{status}: {result['iterations']} iterations, {result['env_steps_global']} env steps"
    if not start:
        return (
            f"{done} ({result['env_steps_per_rank']} per rank, {w} rank(s)); "
            f"checkpoint {result['checkpoint']}"
        )
    steps = result["env_steps_global"] - result["start_env_steps_global"]
    return (
        f"{done} in all; this session, from iteration {start}: "
        f"{result['iterations'] - start} iterations, {steps} env steps ({steps // w} per rank, "
        f"{w} rank(s)); checkpoint {result['checkpoint']}"
    )
