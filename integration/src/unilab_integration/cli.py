"""The `unilab` command: train, play, export, list.

    unilab train cartpole-balance --algo ppo --cpu-workers 2 --until-solved
    unilab train quadruped-velocity --algo ppo --gpus all --num-envs 4096 --env-scope per-rank --iterations 1500
    unilab train cartpole-balance --algo ppo --set algo.learning_rate=3e-4 --set runner.save_interval=10
    unilab train cartpole-balance --algo ppo --loggers console,jsonl,wandb --set runner.wandb.project=me
    unilab play runs/cartpole-balance_ppo_*/ --episodes 10
    unilab play runs/go1-velocity-flat_ppo_*/ --viewer --port 8080
    unilab play logs/rsl_rl/go1_velocity/RUN/model_1000.pt --task go1-velocity-flat
    unilab eval runs/go1-velocity-flat_ppo_*/ --num-envs 4096 --device cuda --json eval.json
    unilab export runs/cartpole-balance_ppo_*/ policy.onnx
    unilab upgrade-checkpoint runs/old_run/ --trust
    unilab list
    unilab robots get go1 g1

Exit status: 0 on success, 2 for invalid settings (refused before any worker starts and before
anything is written: also another run's folder, a live trainer's lock, a resume whose budget
is already reached), 1 when training fails (a worker raised or died; its rank and error are
printed), 143 on SIGTERM and 130 on Ctrl-C (one line; the workers stopped, the run folder's
lock released). `unilab play --viewer` runs until Ctrl-C, its normal end: 0 then too (130 only
for a Ctrl-C before the first step, while the env is being built).

The heavy modules (torch, warp, mujoco, tensordict, unilab_algos, unilab_envs) are imported
only by the command that needs them: `--help`, argument errors and an unknown task (when no
`runner.imports` module could register one) answer without them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ._algorithms import ALGORITHMS
from ._commandline import build_config
from ._config import PRESETS
from ._envs import check_builtin_task, check_named_imports, import_modules
from ._robots import add_robots_parser, check_robot_files, robots_command

__all__ = ["build_config", "main"]

_TASK_HELP = (
    "task of an MJLab/RSL-RL model_<it>.pt (which does not record it), e.g. go1-velocity-flat; "
    "for a UniLab checkpoint it must be the checkpoint's own"
)


def _parser() -> argparse.ArgumentParser:
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
        help="comma-separated metric sinks (runner.loggers; default console,jsonl,tensorboard; "
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


def _list() -> None:
    from ._envs import task_names

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


def _train(args: argparse.Namespace) -> int:
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

    from ._train import train

    try:
        result = train(cfg, resume=args.resume)
    except WorkerFailedError as e:
        print(f"unilab train: training failed: {e}", file=sys.stderr)
        return 1
    except ImportError as e:  # a logger's extra is missing (refused before any worker)
        print(f"unilab train: error: {e}", file=sys.stderr)
        return 2
    print(_summary(result))
    print(_next_commands(result["run_dir"]))
    return 0


def _next_commands(run_dir: str) -> str:
    """The run folder and the commands that use it (relative to the working directory when
    inside it, as the default runs/ is)."""
    import os
    import shlex

    path = Path(run_dir)
    with contextlib.suppress(ValueError):
        path = path.resolve().relative_to(Path.cwd().resolve())
    run = shlex.quote(os.fspath(path))
    return (
        f"run folder {run}; next:\n"
        f"  unilab play {run} --episodes 10\n"
        f"  unilab export {run} policy.onnx"
    )


def _summary(result: dict) -> str:
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


def _play(args: argparse.Namespace) -> int:
    if args.viewer and args.video:
        raise ValueError(
            "--viewer and --video cannot be combined: --video renders world 0 offscreen into a "
            "file and ends when its episodes are written, --viewer streams the worlds live "
            "until Ctrl-C; run one, then the other"
        )
    for name in ("episodes", "steps"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ValueError(f"--{name} must be >= 1, got {value}")
    if args.viewer:
        return _play_viewer(args)
    from ._policy import play_episodes

    _env_output()
    progress = sys.stderr.isatty() if args.progress is None else args.progress

    video: dict = {}
    if args.video:
        camera = args.camera
        if camera is not None and camera.lstrip("-").isdigit():
            camera = int(camera)
        video = {
            "video": args.video,
            "video_episodes": args.video_episodes,
            "width": args.width,
            "height": args.height,
            "fps": args.fps,
            "camera": camera,
        }
    try:
        result = play_episodes(
            _policy_checkpoint(args),
            episodes=10 if args.episodes is None else args.episodes,
            num_envs=args.num_envs,
            seed=args.seed,
            device=args.device,
            max_steps=args.steps,
            progress=progress,
            **video,
        )
    except ImportError as e:  # the video extra is missing
        print(f"unilab play: error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        from unilab_envs.render import RendererUnavailableError

        if not isinstance(e, RendererUnavailableError):
            raise
        print(f"unilab play: error: {e}", file=sys.stderr)
        return 2
    for i, r in enumerate(result.returns):
        print(f"episode {i}: return {r:.4f}")
    _print_returns(result)
    if result.video is not None:
        print(
            f"wrote {result.video}: {result.frames} frames at {result.fps:g} fps, world 0's "
            f"{len(result.video_lengths)} episode(s) of lengths "
            f"{', '.join(map(str, result.video_lengths))}"
        )
    return 0


def _print_returns(result) -> None:
    returns = result.returns
    if returns:
        level = result.curriculum_level
        at = "" if level is None else f" (curriculum level {level:g}, from the checkpoint)"
        print(f"mean return {sum(returns) / len(returns):.4f} over {len(returns)} episodes{at}")
    if result.terms:  # where the return comes from: each reward term's mean episode sum
        width = max(len(name) for name in result.terms)
        for name, values in result.terms.items():
            print(f"  {name:<{width}}  {sum(values) / max(len(values), 1):+.4f}")


def _play_viewer(args: argparse.Namespace) -> int:
    """`unilab play --viewer`: until Ctrl-C (exit 0), --steps or --episodes."""
    from ._viewer import viser_module

    try:
        viser_module()  # before loading anything: the extra may be missing
    except ImportError as e:
        print(f"unilab play: error: {e}", file=sys.stderr)
        return 2
    from ._viewer import view_policy

    _env_output()
    result = view_policy(
        _policy_checkpoint(args),
        host=args.host,
        port=args.port,
        num_envs=args.num_envs,
        seed=args.seed,
        device=args.device,
        steps=args.steps,
        episodes=args.episodes,
    )
    end = "stopped by Ctrl-C" if result.interrupted else "done"
    print(f"viewer {end} after {result.steps} steps, {len(result.returns)} episodes finished")
    _print_returns(result)
    return 0


def _env_output() -> None:
    """What a command that builds an env in this process prints: not warp's per-module load
    lines (they would bury the results), but unilab_envs' INFO lines (the first compilation of
    a task's kernels) on stderr (training workers log those to the run's logs)."""
    import logging

    from ._train import quiet_warp

    quiet_warp()

    env_logger = logging.getLogger("unilab_envs")
    if not env_logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        env_logger.addHandler(handler)
    env_logger.setLevel(logging.INFO)


def _policy_checkpoint(args: argparse.Namespace) -> dict:
    """The checkpoint that play, eval or export read: the modules named with --import are
    imported first, and a saved config that lists others is refused."""
    from ._mjlab_checkpoint import load_policy_checkpoint

    import_modules(args.imports)
    device = getattr(args, "device", "cpu")
    ckpt = load_policy_checkpoint(args.checkpoint, task=getattr(args, "task", None), device=device)
    saved = ckpt["config"].get("runner", {}).get("imports") or ()
    check_named_imports(saved, args.imports, ckpt["path"])
    return ckpt


def _upgrade(args: argparse.Namespace) -> int:
    from ._upgrade import upgrade_checkpoint, upgrade_targets

    files = upgrade_targets(args.checkpoint)
    if not args.trust:
        raise ValueError(
            f"reading a version-1 checkpoint unpickles it, which runs any code the file names: "
            f"give --trust if you trust the source of {args.checkpoint}"
        )
    for file in files:
        done = upgrade_checkpoint(file)
        kept = f" (version 1 kept as {file}.v1)" if done else ""
        print(f"{file}: {'upgraded to' if done else 'already'} checkpoint version 2{kept}")
    return 0


def _eval(args: argparse.Namespace) -> int:
    from ._tracking import evaluate_tracking

    _env_output()
    result = evaluate_tracking(
        _policy_checkpoint(args),
        num_envs=args.num_envs,
        seed=args.seed,
        device=args.device,
        env_kwargs=args.env_kwargs,
    )
    _, lin_x, ang_z = result.command_stage
    print(
        f"{result.task}: {result.episodes} episodes, command lin_vel_x {list(lin_x)} m/s, "
        f"ang_vel_z {list(ang_z)} rad/s (final stage)"
    )
    print(f"  lin_vel_error        {result.lin_vel_error:.4f} m/s")
    print(f"  yaw_rate_error       {result.yaw_rate_error:.4f} rad/s")
    print(f"  time_limit_fraction  {result.time_limit_fraction:.4f}")
    print(f"  mean_return          {result.mean_return:.4f}")
    print(f"  mean_length          {result.mean_length:.1f} steps")
    print(result.to_json())
    if args.json:
        with open(args.json, "w") as f:
            f.write(result.to_json() + "\n")
    return 0


def _export(args: argparse.Namespace) -> int:
    from ._policy import export_onnx, read_onnx_metadata

    path = export_onnx(_policy_checkpoint(args), args.out, opset=args.opset)
    meta = read_onnx_metadata(path)
    state = "".join(f", {n} [L, B, H]" for n in meta["inputs"][1:])
    bound = meta["action_bound"]
    clip = f"clamped to [-{bound:g}, {bound:g}]" if meta["action_clipped"] else "unclamped"
    print(
        f"wrote {path}: input obs [B, {meta['obs_dim']}]{state}, output actions "
        f"[B, {meta['action_dim']}] {clip}" + "".join(f", {n}" for n in meta["outputs"][1:])
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `unilab`; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            _list()
            return 0
        if args.command == "train":
            return _train(args)
        if args.command == "play":
            return _play(args)
        if args.command == "eval":
            return _eval(args)
        if args.command == "robots":
            return robots_command(args)
        if args.command == "upgrade-checkpoint":
            return _upgrade(args)
        return _export(args)
    except (ValueError, TypeError, FileNotFoundError) as e:  # CheckpointError is a ValueError
        print(f"unilab {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM during a launch (LaunchInterrupted)
        name = getattr(e, "signal", "SIGINT")
        text = str(e) or "interrupted by SIGINT"
        print(f"unilab {args.command}: {text}", file=sys.stderr)
        return 143 if name == "SIGTERM" else 130


if __name__ == "__main__":
    sys.exit(main())
