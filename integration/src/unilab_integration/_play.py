"""`unilab play`: a checkpoint's deterministic policy played for a number of episodes in a
fresh env, optionally into a video of world 0."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

import attrs
import torch

from ._config import TrainConfig
from ._episodes import EpisodeStats
from ._restore import policy_from_checkpoint, restore_curriculum
from ._rollout import PolicyStepper, actor_groups, rollout
from ._video import VideoWriter, check_video_args, imageio_module

__all__ = ["PlayResult", "play", "play_episodes"]


@attrs.frozen(kw_only=True)
class PlayResult:
    """What `play_episodes` measured.

    Attributes:
        returns: undiscounted returns of the first `episodes` finished episodes (all worlds).
        video: the mp4 written, or None.
        frames: frames in the video (= the sum of `video_lengths`).
        fps: the video's frame rate (frames per s).
        video_lengths: lengths in control steps of world 0's recorded episodes.
        video_returns: returns of world 0's recorded episodes.
        terms: the task's reward terms: for each, its sum over each of the episodes in
            `returns` (same order); empty for an env without per-term episode sums.
        curriculum_level: the curriculum level the episodes ran at (restored from the
            checkpoint, rank 0's), or None for a task without a curriculum.
        steps: control steps played.
        interrupted: whether Ctrl-C ended the loop (`stop_on_interrupt`).
    """

    returns: list[float]
    terms: dict[str, list[float]] = attrs.field(factory=dict)
    curriculum_level: float | None = None
    video: Path | None = None
    frames: int = 0
    fps: float | None = None
    video_lengths: tuple[int, ...] = ()
    video_returns: tuple[float, ...] = ()
    steps: int = 0
    interrupted: bool = False


def play_episodes(
    checkpoint: str | os.PathLike,
    *,
    episodes: int | None = 10,
    num_envs: int = 8,
    seed: int = 0,
    device: str = "cpu",
    max_steps: int | None = None,
    video: str | os.PathLike | None = None,
    video_episodes: int = 1,
    width: int = 640,
    height: int = 480,
    fps: float | None = None,
    camera: int | str | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    one_per_world: bool = False,
    observer: Callable[[Any, Any, Any], None] | None = None,
    progress: bool | TextIO = False,
    stop_on_interrupt: bool = False,
) -> PlayResult:
    """Run the deterministic policy until `episodes` episodes end (across all worlds), or
    for `max_steps` control steps (default 10 x the episode length x `episodes`; with
    `episodes=None` the step limit alone ends the loop, and without one it runs until
    interrupted).

    With `video`, world 0 is rendered offscreen (`unilab_envs.render.Renderer`; MuJoCo's
    backend comes from `MUJOCO_GL`, e.g. egl or osmesa) from the reset until it has finished
    `video_episodes` episodes, and written as an H.264 mp4 at `fps` (default 1 / env.step_dt,
    real time) with imageio + imageio-ffmpeg (`pip install "unilab-integration[video]"`).
    The video holds one frame per control step: the state at the start of each step of each
    recorded episode, so `frames == sum(video_lengths)`. The file appears only when complete.

    `checkpoint` may be a loaded checkpoint dict. `env_kwargs` are merged over the
    checkpoint's env options (`unilab_envs.make` overrides). With `one_per_world` only the
    first episode each world ends is counted (fresh episodes: no bias toward short ones).
    `observer(env, obs, step)`, if given, is called after every env step with the env, the
    observation the policy acted on and the step's output (the tracking evaluator reads its
    metrics there). With `progress` (True: on stderr, or a stream) one updating tqdm line
    counts the episodes done of `episodes`. With `stop_on_interrupt` a KeyboardInterrupt
    (Ctrl-C) in the loop ends it as the step limit would: the result holds the episodes
    finished until then and `interrupted=True`.
    """
    import unilab_envs

    if episodes is not None and episodes < 1:
        raise ValueError(f"episodes must be >= 1 or None, got {episodes}")
    if video is not None:
        check_video_args(video_episodes, width, height, fps)
        imageio_module()  # fail before loading anything when the extra is missing
    policy, _learner, ckpt = policy_from_checkpoint(checkpoint, device)
    config = TrainConfig.from_dict(ckpt["config"])
    groups = actor_groups(config.algo)
    kwargs = {**dict(config.env.kwargs), **dict(env_kwargs or {})}
    env = unilab_envs.make(config.task, num_envs=num_envs, device=device, seed=seed, **kwargs)
    level = restore_curriculum(env, ckpt)
    limit = max_steps
    if limit is None and episodes is not None:
        wanted = max(episodes, video_episodes if video is not None else 0)
        limit = 10 * int(env.max_episode_steps) * wanted
    rate = float(fps) if fps is not None else 1.0 / float(env.step_dt)
    obs = env.reset()
    stats = EpisodeStats(obs.device, num_envs=num_envs, first_only=one_per_world, keep=True)
    stepper = PolicyStepper(policy, num_envs, device)
    writer = None
    if video is not None:
        writer = VideoWriter(env, Path(video), width, height, rate, camera, video_episodes)
    bar = _episode_bar(episodes, progress)
    ok = interrupted = False
    steps = 0
    try:
        if writer is not None:
            writer.add()
        with torch.no_grad():
            for acted_on, step in rollout(env, stepper, groups, obs, limit):
                steps += 1
                if observer is not None:
                    observer(env, acted_on, step)
                stats.add(step)
                finished = len(stats.values.get("return", ()))
                if bar is not None and min(finished, episodes or finished) != bar.n:
                    bar.update(min(finished, episodes or finished) - bar.n)
                if writer is not None:
                    writer.after_step(step)
                recording = writer is not None and writer.recording
                if episodes is not None and finished >= episodes and not recording:
                    break
    except KeyboardInterrupt:
        if not stop_on_interrupt:
            raise
        interrupted = True
    finally:
        if bar is not None:
            bar.close()
        if writer is not None:
            ok = writer.finish()
    if writer is not None and not ok:
        raise RuntimeError(
            f"world 0 finished {len(writer.lengths)} of {video_episodes} video episodes within "
            f"{limit} steps; no video written"
        )
    values = stats.values
    return PlayResult(
        returns=values.get("return", [])[:episodes],
        terms={k: v[:episodes] for k, v in values.items() if k not in ("return", "length")},
        steps=steps,
        interrupted=interrupted,
        curriculum_level=level,
        video=Path(video) if writer is not None else None,
        frames=writer.frames if writer is not None else 0,
        fps=rate if writer is not None else None,
        video_lengths=tuple(writer.lengths) if writer is not None else (),
        video_returns=tuple(writer.returns) if writer is not None else (),
    )


def _episode_bar(episodes: int | None, progress: bool | TextIO) -> Any:
    """A tqdm line "episodes: done/total" (done alone without a total) on stderr
    (progress=True) or a given stream."""
    if progress is False:
        return None
    from tqdm import tqdm

    stream = sys.stderr if progress is True else progress
    return tqdm(total=episodes, desc="episodes", unit="ep", file=stream, dynamic_ncols=True)


def play(
    checkpoint: str | os.PathLike,
    *,
    episodes: int = 10,
    num_envs: int = 8,
    seed: int = 0,
    device: str = "cpu",
    max_steps: int | None = None,
    **video: Any,
) -> list[float]:
    """Run the deterministic policy until `episodes` episodes end; return their returns.

    `video=out.mp4` and the other keywords of `play_episodes` also write a video of world 0.
    """
    return play_episodes(
        checkpoint,
        episodes=episodes,
        num_envs=num_envs,
        seed=seed,
        device=device,
        max_steps=max_steps,
        **video,
    ).returns
