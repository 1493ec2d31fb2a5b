"""`unilab play`: a checkpoint's policy for N episodes (returns, optionally a video), or live
in a web viewer."""

from __future__ import annotations

import argparse
import sys

from .common import env_output, policy_checkpoint

__all__ = ["play_command"]


def play_command(args: argparse.Namespace) -> int:
    """`unilab play`: refuses contradicting flags, then plays (or shows, with --viewer)."""
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
    from .._play import play_episodes

    env_output()
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
            policy_checkpoint(args),
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
    """The mean return of a `PlayResult` and each reward term's mean episode sum."""
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
    from .._viewer import viser_module

    try:
        viser_module()  # before loading anything: the extra may be missing
    except ImportError as e:
        print(f"unilab play: error: {e}", file=sys.stderr)
        return 2
    from .._viewer import view_policy

    env_output()
    result = view_policy(
        policy_checkpoint(args),
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
