"""World 0 of an env rendered offscreen into an H.264 mp4 (`unilab play --video`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["VIDEO_HINT", "VideoWriter", "check_video_args", "imageio_module"]

VIDEO_HINT = 'pip install "unilab-integration[video]"'


def imageio_module() -> Any:
    """`imageio.v2` with its ffmpeg plugin, or an ImportError naming the extra to install."""
    try:
        import imageio.v2 as iio
        import imageio_ffmpeg  # noqa: F401 (the mp4 writer's ffmpeg binary)
    except ImportError as e:
        raise ImportError(
            f"--video needs the imageio and imageio-ffmpeg packages ({e}): {VIDEO_HINT}"
        ) from e
    return iio


def check_video_args(video_episodes: int, width: int, height: int, fps: float | None) -> None:
    """Refuse, naming the setting, what an H.264 mp4 of world 0 cannot be made with."""
    if video_episodes < 1:
        raise ValueError(f"video_episodes must be >= 1, got {video_episodes}")
    for name, value in (("width", width), ("height", height)):
        if value < 2 or value % 2:
            raise ValueError(
                f"video {name} must be an even number of pixels >= 2 (H.264 4:2:0), got {value}"
            )
    if fps is not None and not fps > 0:
        raise ValueError(f"video fps must be > 0, got {fps}")


class VideoWriter:
    """Frames of world 0 to an mp4, written to a temporary name and renamed when complete.

    It records from the reset until world 0 has finished `episodes` episodes: one frame per
    control step, the state at the start of each step of each recorded episode, so `frames ==
    sum(lengths)`; `lengths` and `returns` are those episodes' (control steps, return)."""

    def __init__(
        self, env: Any, out: Path, width: int, height: int, fps: float, camera, episodes: int
    ) -> None:
        from unilab_envs.render import Renderer

        iio = imageio_module()
        self.renderer = Renderer(env, width=width, height=height, camera=camera)
        self.out, self.frames, self.episodes = out, 0, episodes
        self.lengths: list[int] = []
        self.returns: list[float] = []
        out.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = out.with_name(f".{out.stem}.partial{os.getpid()}{out.suffix or '.mp4'}")
        try:
            self.writer = iio.get_writer(
                str(self.tmp),
                format="FFMPEG",
                mode="I",
                fps=fps,
                codec="libx264",
                macro_block_size=1,
                ffmpeg_log_level="error",
            )
        except BaseException:
            self.renderer.close()
            raise

    @property
    def recording(self) -> bool:
        """Whether world 0 has episodes left to record."""
        return len(self.lengths) < self.episodes

    def add(self) -> None:
        """Render world 0's current state as the next frame."""
        self.writer.append_data(self.renderer.frame(0))
        self.frames += 1

    def after_step(self, step: Any) -> None:
        """Note world 0's episode if it ended in `step`; while recording, add the next frame
        (after an auto-reset: the next episode's first state)."""
        if not self.recording:
            return
        if bool(step["done"][0]):
            self.lengths.append(int(step["episode", "length"][0]))
            self.returns.append(float(step["episode", "return"][0]))
        if self.recording:
            self.add()

    def finish(self) -> bool:
        """Close the file: kept under its name when every episode was recorded, else removed.
        Returns whether it was kept."""
        ok = not self.recording
        self.renderer.close()
        try:
            self.writer.close()
        finally:
            if ok:
                os.replace(self.tmp, self.out)
            elif self.tmp.exists():
                self.tmp.unlink()
        return ok
