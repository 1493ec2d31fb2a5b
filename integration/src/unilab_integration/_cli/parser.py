"""The `unilab` command line's arguments: one subparser per command."""

from __future__ import annotations

import argparse
import json

from .._algorithms import ALGORITHMS
from .._config import PRESETS
from .._robots import add_robots_parser

__all__ = ["build_parser"]

_TASK_HELP = (
    "task of an MJLab/RSL-RL model_<it>.pt (which does not record it), e.g. go1-velocity-flat; "
    "for a UniLab checkpoint it must be the checkpoint's own"
)


def build_parser() -> argparse.ArgumentParser:
    """The parser of `unilab`: its commands, their arguments and help."""
    p = argparse.ArgumentParser(prog="unilab", description="Train robot policies on MuJoCo Warp.")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a policy on a task")
    t.add_argument("task", help="task name (see `unilab list`)")
    t.add_argument(
        "--algo",
        help=f"{', '.join(ALGORITHMS)}, or one that a module of runner.imports registers "
        "(unilab_integration.register_algorithm); default ppo (on --resume: the run's)",
    )
    t.add_argument("--preset", choices=PRESETS, help="default: 'default' (on --resume: the run's)")
    where = t.add_mutually_exclusive_group()
    where.add_argument("--gpus", help="'all' or GPU indices like 0,1 (one worker each)")
    where.add_argument("--cpu-workers", type=int, help="N CPU worker processes (gloo)")
    t.add_argument(
        "--hosts",
        help="comma-separated host names for a multi-node launch, or 'slurm': the nodes of "
        "the SLURM allocation",
    )
    t.add_argument("--num-envs", type=int, help="environments (see --env-scope)")
    t.add_argument(
        "--env-scope", choices=("per-rank", "global"), help="is --num-envs per rank or total"
    )
    t.add_argument("--seed", type=int)
    t.add_argument(
        "--iterations", type=int, help="iteration budget (the run's total, also on resume)"
    )
    t.add_argument(
        "--env-steps",
        type=int,
        help="global env-step budget (all ranks; the run's total); with --iterations the "
        "first reached wins",
    )
    t.add_argument(
        "--until-solved", action="store_true", help="stop at the task's success threshold"
    )
    t.add_argument(
        "--resume",
        help="checkpoint file or run folder to continue from, with its run's config (the "
        "flags and --set given here apply on top)",
    )
    t.add_argument("--teacher", help="PPO checkpoint of the teacher (--algo distill)")
    t.add_argument("--log-dir", help="parent folder of run folders (default runs/)")
    t.add_argument(
        "--run-name", help="run folder name (default TASK_ALGO_TIMESTAMP); must be new or empty"
    )
    t.add_argument("--save-interval", type=int, help="iterations between checkpoints")
    t.add_argument(
        "--eval-interval",
        type=int,
        help="every N iterations play the deterministic policy (eval/return; judges "
        "--until-solved)",
    )
    t.add_argument("--timeout", type=float, help="collective timeout in seconds")
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.add_argument(
        "--loggers",
        metavar="NAMES",
        help="comma-separated metric sinks (runner.logging.loggers; default console,jsonl,tensorboard; "
        'also wandb, with pip install "unilab-integration[wandb]")',
    )
    t.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override any config field, e.g. algo.learning_rate=3e-4 (repeatable)",
    )
    t.add_argument("--print-config", action="store_true", help="print the config and exit")
    _import_flag(t)

    pl = sub.add_parser("play", help="evaluate a checkpoint for N episodes, or watch it")
    pl.add_argument("checkpoint")
    pl.add_argument(
        "--episodes",
        type=int,
        help="episodes to play (default 10; with --viewer: until Ctrl-C or --steps)",
    )
    pl.add_argument("--steps", type=int, help="stop after this many control steps")
    pl.add_argument("--num-envs", type=int, default=8)
    pl.add_argument("--seed", type=int, default=12345)
    pl.add_argument("--device", default="cpu")
    pl.add_argument(
        "--video",
        metavar="OUT.mp4",
        help="also render world 0 offscreen into an mp4 (MUJOCO_GL=egl or osmesa; needs "
        'pip install "unilab-integration[video]")',
    )
    pl.add_argument(
        "--video-episodes", type=int, default=1, help="episodes of world 0 in the video"
    )
    pl.add_argument("--width", type=int, default=640, help="video width in pixels (even)")
    pl.add_argument("--height", type=int, default=480, help="video height in pixels (even)")
    pl.add_argument("--fps", type=float, help="video frame rate (default 1 / env step_dt)")
    pl.add_argument("--camera", help="MJCF camera name or id (default: follow the robot)")
    pl.add_argument(
        "--viewer",
        action="store_true",
        help="stream the worlds live to a web viewer (prints its URL; needs pip install "
        '"unilab-integration[viewer]")',
    )
    pl.add_argument("--port", type=int, default=8080, help="viewer port (0: any free port)")
    pl.add_argument(
        "--host",
        default="127.0.0.1",
        help="viewer address to listen on (0.0.0.0: reachable from other machines)",
    )
    pl.add_argument("--task", help=_TASK_HELP)
    pl.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        help="episodes done / requested on one updating line (default: when stderr is a terminal)",
    )
    _import_flag(pl)

    ev = sub.add_parser(
        "eval", help="velocity-tracking metrics of a checkpoint over the full command range"
    )
    ev.add_argument("checkpoint")
    ev.add_argument("--task", help=_TASK_HELP)
    ev.add_argument("--num-envs", type=int, default=4096, help="worlds = episodes (one each)")
    ev.add_argument("--seed", type=int, default=12345)
    ev.add_argument("--device", default="cpu")
    ev.add_argument(
        "--env-kwargs",
        type=json.loads,
        default={},
        metavar="JSON",
        help="unilab_envs.make overrides, e.g. '{\"episode_length_s\": 5}'",
    )
    ev.add_argument("--json", metavar="OUT.json", help="also write the metrics as JSON")
    _import_flag(ev)

    e = sub.add_parser(
        "export",
        help="export a checkpoint's policy to ONNX, with the task's deployment metadata",
    )
    e.add_argument("checkpoint")
    e.add_argument("out")
    e.add_argument("--opset", type=int)
    _import_flag(e)

    u = sub.add_parser(
        "upgrade-checkpoint",
        help="rewrite version-1 checkpoints as plain data (unpickles them: trusted files only)",
    )
    u.add_argument("checkpoint", help="a checkpoint file, or a run or checkpoints folder")
    u.add_argument(
        "--trust",
        action="store_true",
        help="you trust the files' source: reading a version-1 file runs any code it names",
    )

    sub.add_parser("list", help="list tasks, algorithms and presets")
    add_robots_parser(sub)
    return p


def _import_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import this module first (a custom task or algorithm; repeatable); a saved "
        "config's runner.imports are imported only when named here",
    )
