"""`unilab play CHECKPOINT --video out.mp4`: world 0 rendered offscreen into an mp4.

MuJoCo reads `MUJOCO_GL` once, when `mujoco` is first imported (already done in this pytest
process), so the rendering runs `unilab play` in a subprocess with the offscreen backend
`unilab_envs.testing.offscreen_gl_backend()` finds (`MUJOCO_GL=osmesa`, software OpenGL from
`apt-get install -y libosmesa6`, or `MUJOCO_GL=egl` with a GPU driver); it needs
`unilab-integration[video]`.
The checkpoint is made by hand (an untrained PPO learner) so no training run is needed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _untrained_checkpoint import EPISODE_STEPS, write_untrained_cartpole_run

from unilab_envs.testing import OFFSCREEN_GL_FIX, offscreen_gl_backend
from unilab_integration.cli import main


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return write_untrained_cartpole_run(tmp_path_factory.mktemp("run"))


def _unilab(args: list[str], **extra_env: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("PYOPENGL_PLATFORM", None)
    env.update({"MUJOCO_GL": "osmesa", "OMP_NUM_THREADS": "1", **extra_env})
    return subprocess.run(
        [sys.executable, "-m", "unilab_integration.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.skipif(offscreen_gl_backend() is None, reason=OFFSCREEN_GL_FIX)
def test_play_writes_a_readable_mp4_of_world_0(checkpoint, tmp_path):
    import imageio.v2 as iio
    import numpy as np

    out = tmp_path / "videos" / "play.mp4"
    proc = _unilab(
        [
            "play",
            str(checkpoint),
            "--episodes",
            "3",
            "--num-envs",
            "2",
            "--video",
            str(out),
            "--video-episodes",
            "2",
            "--width",
            "64",
            "--height",
            "48",
        ],
        MUJOCO_GL=offscreen_gl_backend(),
    )
    assert proc.returncode == 0, proc.stderr
    returns = re.findall(r"^episode \d: return (\S+)$", proc.stdout, re.M)
    assert len(returns) == 3
    m = re.search(
        r"wrote (.+): (\d+) frames at 50 fps, world 0's 2 episode\(s\) of lengths (.+)$",
        proc.stdout,
        re.M,
    )
    assert m, proc.stdout
    assert Path(m.group(1)) == out
    frames = int(m.group(2))
    lengths = [int(x) for x in m.group(3).split(", ")]
    assert len(lengths) == 2 and all(1 <= n <= EPISODE_STEPS for n in lengths)
    assert frames == sum(lengths)  # one frame per control step of each recorded episode
    assert sorted(p.name for p in out.parent.iterdir()) == ["play.mp4"]  # no partial file left

    reader = iio.get_reader(str(out), format="FFMPEG")
    try:
        assert reader.get_meta_data()["fps"] == pytest.approx(50.0)
        images = [np.asarray(im) for im in reader]
    finally:
        reader.close()
    assert len(images) == frames
    assert all(im.shape == (48, 64, 3) and im.dtype == np.uint8 for im in images)
    first = images[0].astype(np.int64)
    assert int(first.max()) - int(first.min()) > 50  # a scene, not a blank image
    assert max(np.abs(im.astype(np.int64) - first).mean() for im in images[1:]) > 0.05


def test_no_renderer_exits_2_with_the_fix_and_writes_nothing(checkpoint, tmp_path):
    out = tmp_path / "v.mp4"
    # OSMesa requested while PyOpenGL is pinned to EGL: no GL context can be made.
    proc = _unilab(
        [
            "play",
            str(checkpoint),
            "--episodes",
            "1",
            "--num-envs",
            "1",
            "--video",
            str(out),
            "--width",
            "32",
            "--height",
            "24",
        ],
        PYOPENGL_PLATFORM="egl",
    )
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "unilab play: error: no offscreen OpenGL renderer works here" in proc.stderr
    assert "MUJOCO_GL=egl" in proc.stderr and "apt-get install -y libosmesa6" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_missing_video_extra_names_the_install_line(checkpoint, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "imageio", None)
    monkeypatch.setitem(sys.modules, "imageio.v2", None)
    code = main(["play", str(checkpoint), "--video", str(tmp_path / "v.mp4")])
    assert code == 2
    err = capsys.readouterr().err
    assert "--video needs the imageio and imageio-ffmpeg packages" in err
    assert 'pip install "unilab-integration[video]"' in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--width", "65"],
            "video width must be an even number of pixels >= 2 (H.264 4:2:0), got 65",
        ),
        (
            ["--height", "0"],
            "video height must be an even number of pixels >= 2 (H.264 4:2:0), got 0",
        ),
        (["--video-episodes", "0"], "video_episodes must be >= 1, got 0"),
        (["--fps", "-5"], "video fps must be > 0, got -5.0"),
    ],
)
def test_bad_video_settings_exit_2(checkpoint, tmp_path, capsys, flags, message):
    code = main(["play", str(checkpoint), "--video", str(tmp_path / "v.mp4"), *flags])
    assert code == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
