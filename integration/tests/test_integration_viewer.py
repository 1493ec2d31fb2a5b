"""`unilab play RUN --viewer`: the played worlds in a web viewer (viser).

In process: the observer shows the selected worlds where the simulation has them, pause holds
the loop until a step is asked for, and `view_policy` leaves no thread behind. End to end: the
command runs as a subprocess, headless Chromium (Debian's `chromium`, driven by playwright
without a browser download) opens the printed URL, two screenshots of the scene some frames
apart are not blank and differ, and SIGINT ends the command with status 0 and no child process
left. That test skips where Chromium, playwright or viser is missing, unless
`UNILAB_REQUIRE_BROWSER=1` (set by `.ci/run`, which installs Chromium) makes it fail.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from _untrained_checkpoint import write_untrained_cartpole_run

from unilab_integration.cli import main
from unilab_launch.testing import terminal_signals

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return write_untrained_cartpole_run(tmp_path_factory.mktemp("run"))


def test_viewer_and_video_together_is_refused(checkpoint, capsys):
    assert main(["play", str(checkpoint), "--viewer", "--video", "x.mp4"]) == 2
    err = capsys.readouterr().err
    assert "--viewer and --video cannot be combined" in err and "until Ctrl-C" in err


def test_missing_viser_names_the_extra(checkpoint, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "viser", None)  # `import viser` raises ImportError
    assert main(["play", str(checkpoint), "--viewer"]) == 2
    assert 'pip install "unilab-integration[viewer]"' in capsys.readouterr().err


def _server():
    viser = pytest.importorskip("viser", reason='pip install "unilab-integration[viewer]"')
    with contextlib.redirect_stdout(io.StringIO()):
        return viser.ViserServer(host="127.0.0.1", port=0, verbose=False)


def test_observer_shows_the_selected_worlds_and_holds_while_paused():
    import mujoco
    import torch
    import warp as wp

    import unilab_envs
    from unilab_integration._viewer import PolicyViewer

    server = _server()
    try:
        env = unilab_envs.make("cartpole-balance", num_envs=4, seed=0)
        obs = env.reset()
        viewer = PolicyViewer(server, num_envs=4)
        viewer.first.value, viewer.count.value = 1, 2
        viewer.speed.value = 8.0
        step = env.step(torch.zeros(4, 1))
        wp.to_torch(env.ctx.data.qpos)[:, 0] = torch.tensor([0.0, 0.3, -0.4, 0.0])
        viewer(env, obs, step)
        assert viewer.shown_worlds() == [1, 2] and len(viewer._slots) == 2
        cart = mujoco.mj_name2id(env.mjm, mujoco.mjtObj.mjOBJ_BODY, "cart")
        for slot, x in zip(viewer._slots, (0.3, -0.4), strict=True):
            assert float(slot.bodies[cart].position[0]) == pytest.approx(x, abs=1e-6)
        assert viewer._slots[1].frame.position[1] == pytest.approx(viewer.spacing)
        viewer.count.value = 1
        viewer(env, obs, step)
        assert viewer._slots[1].frame.visible is False  # world 2 hidden again

        viewer.paused.value = True
        worker = threading.Thread(target=viewer, args=(env, obs, step))
        worker.start()
        time.sleep(0.3)
        assert worker.is_alive()  # held while paused
        viewer._request_step(None)  # the "Step" button
        worker.join(timeout=5)
        assert not worker.is_alive()
        assert viewer.steps == 3
    finally:
        with contextlib.redirect_stdout(io.StringIO()):
            server.stop()


def test_view_policy_stops_its_server_and_threads(checkpoint):
    pytest.importorskip("viser", reason='pip install "unilab-integration[viewer]"')
    from unilab_integration._viewer import view_policy

    before = set(threading.enumerate())
    out = io.StringIO()
    result = view_policy(checkpoint, port=0, num_envs=2, steps=25, out=out)
    assert result.steps == 25 and not result.interrupted
    assert len(result.returns) >= 2  # 12-step episodes in 2 worlds
    assert re.match(
        r"viewer: http://127\.0\.0\.1:\d+ \(open it in a browser; Ctrl-C stops\)", out.getvalue()
    )
    deadline = time.monotonic() + 5
    while set(threading.enumerate()) - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert set(threading.enumerate()) - before == set()


# ---------------------------------------------------------------- end to end, in Chromium
def _browser_missing() -> str | None:
    missing = []
    if shutil.which(CHROMIUM) is None:
        missing.append("Chromium (apt-get install -y chromium)")
    for module, pkg in (("viser", "viser"), ("playwright", "playwright")):
        try:
            __import__(module)
        except ImportError:
            missing.append(f"{pkg} (pip install {pkg})")
    return ", ".join(missing) or None


def _descendants(pid: int) -> set[int]:
    """Process ids below `pid` (from /proc: children of children too)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        out.update(kids)
        todo += kids
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _scene_pixels(page):
    """A screenshot of the page as a float RGB array (the test hides all but the canvas:
    the panel's text changes every step, only the scene is compared)."""
    import numpy as np
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(page.screenshot())).convert("RGB"), dtype=np.float32)


@pytest.mark.skipif(
    _browser_missing() is not None and os.environ.get("UNILAB_REQUIRE_BROWSER") != "1",
    reason=f"the viewer's browser test needs {_browser_missing()}",
)
def test_viewer_renders_a_moving_scene_in_headless_chromium(checkpoint):
    from playwright.sync_api import sync_playwright

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "unilab_integration.cli", "play", str(checkpoint)]
    cmd += ["--viewer", "--port", "0", "--num-envs", "2"]
    proc = subprocess.Popen(
        cmd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=terminal_signals,  # the test stops it with a Ctrl-C
    )
    try:
        url = None
        for line in proc.stdout:
            m = re.match(r"viewer: (http://\S+) ", line)
            if m:
                url = m.group(1)
                break
        assert url, proc.stderr.read()
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM,
                headless=True,
                args=["--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"],
            )
            page = browser.new_page(viewport={"width": 640, "height": 480})
            page.goto(url)
            page.wait_for_selector("canvas", timeout=60_000)
            page.add_style_tag(
                content="* { visibility: hidden !important; } "
                "canvas { visibility: visible !important; }"
            )
            # the scene has arrived once the status line counts steps
            page.wait_for_function(
                "() => /step [1-9]/.test(document.body.textContent)", timeout=60_000
            )
            time.sleep(1.0)
            first = _scene_pixels(page)
            # 50 control steps a second at real time: the poles swing, episodes reset. On a
            # loaded machine the viewer may step slower, so look again for up to 20 s; a
            # frozen scene never passes
            deadline = time.monotonic() + 20.0
            while True:
                time.sleep(1.0)
                moved = (abs(first - _scene_pixels(page)).max(axis=-1) > 30).mean()
                if moved > 1e-3 or time.monotonic() > deadline:
                    break
            browser.close()
        assert first.std() > 10.0, "the scene canvas is blank"
        assert moved > 1e-3, f"the scene did not move in 20 s (moved fraction {moved:.5f})"
        children = _descendants(proc.pid)
        assert proc.poll() is None, proc.stderr.read()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert re.search(r"^viewer stopped by Ctrl-C after \d+ steps", out, re.M), out
        assert [p for p in children if _alive(p)] == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
