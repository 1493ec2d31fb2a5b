"""`unilab play RUN --viewer`: the played worlds streamed live to a web viewer (viser).

    unilab play runs/go1-velocity-flat_ppo_*/ --viewer --port 8080   # open the printed URL

`view_policy` starts a viser server, then plays the checkpoint's deterministic policy with
`play_episodes` (the loop `unilab play` runs) until Ctrl-C, `steps` control steps or
`episodes` episodes. `PolicyViewer`, the loop's observer, draws the shown worlds after every
step (`unilab_envs.render.load_world` + `mujoco.mj_kinematics` on a host copy of the model;
the scene itself: `_viewer_scene`), paces the loop to `speed` x real time (one control step
per `env.step_dt` seconds, when the simulation keeps up), and holds it while paused.

GUI: pause, one step while paused, speed; the first shown world and how many are shown side
by side (next to each other along y; on a terrain, where the worlds are already apart, each
where it is); whether the camera follows the first shown world's floating base. For velocity
tasks (a task with `velocity_tracking(obs)`), two arrows above each shown base: the command
(green) and the base's actual velocity (blue) in the horizontal plane, 1 m per m/s, and the
numbers (vx, vy in the heading frame, yaw rate) of the first shown world in the panel.

viser is an optional dependency: `pip install "unilab-integration[viewer]"`.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import socket
import sys
import time
from typing import Any, TextIO

import mujoco
import numpy as np

from ._play import PlayResult, play_episodes
from ._viewer_scene import WorldScene, is_terrain, visible_geoms

__all__ = ["PolicyViewer", "view_policy", "viser_module"]

VIEWER_HINT = 'pip install "unilab-integration[viewer]"'
MAX_SIDE_BY_SIDE = 16
_COMMAND_RGB, _ACTUAL_RGB = (40, 200, 60), (40, 110, 240)


def viser_module() -> Any:
    """The `viser` module, or an ImportError that names the extra to install."""
    try:
        import viser
    except ImportError as e:
        raise ImportError(f"--viewer needs the viser package ({e}): {VIEWER_HINT}") from e
    return viser


def view_policy(
    checkpoint: str | os.PathLike | dict[str, Any],
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    num_envs: int = 8,
    seed: int = 0,
    device: str = "cpu",
    steps: int | None = None,
    episodes: int | None = None,
    out: TextIO = sys.stdout,
) -> PlayResult:
    """Play `checkpoint` with its worlds streamed to a viser server on `host`:`port` (0: a
    free port) until Ctrl-C, `steps` control steps or `episodes` finished episodes; the URL is
    printed on `out` first. The server and its threads are stopped before this returns, also
    when the loop raises. Ctrl-C ends the loop normally (`result.interrupted`)."""
    viser = viser_module()
    with contextlib.redirect_stdout(io.StringIO()):  # viser's banner: the line below says it
        server = viser.ViserServer(host=host, port=port, label="unilab play", verbose=False)
    try:
        shown = socket.gethostname() if host in ("0.0.0.0", "::", "") else host
        print(
            f"viewer: http://{shown}:{server.get_port()} (open it in a browser; Ctrl-C stops)",
            file=out,
            flush=True,
        )
        viewer = PolicyViewer(server, num_envs=num_envs)
        return play_episodes(
            checkpoint,
            episodes=episodes,
            num_envs=num_envs,
            seed=seed,
            device=device,
            max_steps=steps,
            observer=viewer,
            stop_on_interrupt=True,
        )
    finally:
        with contextlib.redirect_stdout(io.StringIO()):  # "(viser) Server stopped"
            server.stop()


class PolicyViewer:
    """A `play_episodes` observer that shows the env's worlds on a viser server (module doc).

    The scene is built at the first call, from the env's host model; every call then poses the
    shown worlds, updates the panel, waits out the pacing and holds while paused.
    """

    def __init__(self, server: Any, *, num_envs: int) -> None:
        self.server, self.num_envs = server, num_envs
        gui = server.gui
        self.status = gui.add_markdown("starting: building the env (first run: compiling)")
        with gui.add_folder("Playback"):
            self.paused = gui.add_checkbox("Pause", initial_value=False)
            self.step_button = gui.add_button("Step (while paused)")
            self.speed = gui.add_slider(
                "Speed (x real time)", min=0.1, max=8.0, step=0.1, initial_value=1.0
            )
        with gui.add_folder("Worlds"):
            last = max(num_envs - 1, 1)
            self.first = gui.add_slider(
                "First world", min=0, max=last, step=1, initial_value=0, disabled=num_envs == 1
            )
            self.count = gui.add_slider(
                "Side by side",
                min=1,
                max=max(min(num_envs, MAX_SIDE_BY_SIDE), 2),
                step=1,
                initial_value=1,
                disabled=num_envs == 1,
            )
            self.follow = gui.add_checkbox("Camera follows the base", initial_value=True)
        self.velocity_text = gui.add_markdown("")
        self._steps_requested = 0
        self.step_button.on_click(self._request_step)
        self.mjm: mujoco.MjModel | None = None
        self.steps = 0  # control steps played
        self.frames = 0  # scene updates sent (one per step, more while paused)
        self._slots: list[WorldScene] = []
        self._arrows: list[Any] = []
        self._next_time: float | None = None
        self._last_target: np.ndarray | None = None
        self._last_episode: dict[int, str] = {}

    def _request_step(self, _event: Any) -> None:
        self._steps_requested += 1

    # ------------------------------------------------------------------ observer
    def __call__(self, env: Any, obs: Any, step: Any) -> None:
        if self.mjm is None:
            self._build(env)
        self.steps += 1
        self._note_episodes(step)
        self._show(env, step)
        self._pace(env.step_dt)
        while self.paused.value and self._steps_requested == 0:
            time.sleep(0.03)
            self._show(env, step)  # a changed selection shows at once
            self._next_time = None
        self._steps_requested = max(self._steps_requested - 1, 0) if self.paused.value else 0

    def _pace(self, step_dt: float) -> None:
        now = time.perf_counter()
        period = float(step_dt) / max(float(self.speed.value), 1e-3)
        if self._next_time is None or now - self._next_time > 0.25:
            self._next_time = now  # behind by more than a moment: do not rush to catch up
        self._next_time += period
        wait = self._next_time - now
        if wait > 0:
            time.sleep(wait)

    # ------------------------------------------------------------------ scene
    def _build(self, env: Any) -> None:
        from unilab_envs.render import floating_base

        mjm = self.mjm = env.mjm
        self.mjd = mujoco.MjData(mjm)
        self.base = floating_base(mjm)
        self.terrain = is_terrain(mjm)
        self.spacing = 0.0 if self.terrain else _spacing(mjm)
        self.tracking = callable(getattr(env.task, "velocity_tracking", None))
        if self.terrain:  # the world body once, shared by every shown world
            WorldScene(self.server.scene, mjm, "/terrain", static=True)
        extent = float(mjm.stat.extent) * (2.5 if self.base is not None else 1.2)
        self._view = np.array([0.7, -0.7, 0.5]) * extent  # camera position - target
        self._aim(self.server.initial_camera, np.zeros(3))
        self.server.on_client_connect(self._on_connect)

    def _slot(self, k: int) -> WorldScene:
        """The scene of the k-th shown world (built when first needed)."""
        while len(self._slots) <= k:
            i = len(self._slots)
            slot = WorldScene(self.server.scene, self.mjm, f"/world{i}", static=not self.terrain)
            slot.frame.position = (0.0, i * self.spacing, 0.0)
            self._slots.append(slot)
            if self.tracking and self.base is not None:
                self._arrows.append(
                    self.server.scene.add_arrows(
                        f"/world{i}/velocity",
                        points=np.zeros((2, 2, 3), np.float32),
                        colors=np.array([_COMMAND_RGB, _ACTUAL_RGB], np.uint8),
                        shaft_radius=0.015,
                        head_radius=0.04,
                        head_length=0.08,
                    )
                )
        return self._slots[k]

    def shown_worlds(self) -> list[int]:
        """The worlds shown now, in slot order."""
        first = min(int(self.first.value), self.num_envs - 1)
        count = min(int(self.count.value), self.num_envs - first)
        return list(range(first, first + count))

    def _show(self, env: Any, step: Any) -> None:
        from unilab_envs.render import load_world

        worlds = self.shown_worlds()
        track = env.task.velocity_tracking(step) if self.tracking else None
        lines = []
        with self.server.atomic():
            for k, w in enumerate(worlds):
                slot = self._slot(k)
                load_world(env, self.mjd, w)
                mujoco.mj_kinematics(self.mjm, self.mjd)
                slot.update(self.mjd)
                slot.set_visible(True)
                if k == 0 and self.base is not None:
                    self._follow(self.mjd.xpos[self.base] + slot.frame.position)
                if track is not None and self.base is not None:
                    lines.append(self._velocity(k, w, track))
            for k in range(len(worlds), len(self._slots)):
                self._slots[k].set_visible(False)
        self.frames += 1
        self.status.content = (
            f"**step {self.steps}**, worlds {worlds[0]}-{worlds[-1]} of "
            f"{self.num_envs}" + "".join(f"  \n{t}" for t in self._last_episode.values())
        )
        self.velocity_text.content = "  \n".join(lines[:1])

    def _velocity(self, k: int, w: int, track: dict) -> str:
        """Pose slot k's arrows for world w (the host data holds w's state); its panel line."""
        c = track["command"][w].detach().to("cpu").double().numpy()
        v = track["lin_vel"][w].detach().to("cpu").double().numpy()
        wz = float(track["ang_vel"][w][2])
        rot = self.mjd.xmat[self.base].reshape(3, 3)
        yaw = math.atan2(rot[1, 0], rot[0, 0])
        heading = np.array([[math.cos(yaw), -math.sin(yaw)], [math.sin(yaw), math.cos(yaw)]])
        v_world = rot @ v
        v_heading = heading.T @ v_world[:2]
        start = self.mjd.xpos[self.base] + np.array([0.0, 0.0, 0.25])
        points = np.zeros((2, 2, 3), np.float32)
        points[:, 0] = start
        points[0, 1] = start + np.array([*(heading @ c[:2]), 0.0])
        points[1, 1] = start + np.array([*v_world[:2], 0.0])
        self._arrows[k].points = points
        return (
            f"world {w}: command vx {c[0]:+.2f} vy {c[1]:+.2f} m/s, yaw {c[2]:+.2f} rad/s; "
            f"actual vx {v_heading[0]:+.2f} vy {v_heading[1]:+.2f} m/s, yaw {wz:+.2f} rad/s"
        )

    def _aim(self, camera: Any, target: np.ndarray) -> None:
        # position first: a client camera's position setter also shifts its look_at
        camera.position = tuple(target + self._view)
        camera.look_at = tuple(target)

    def _on_connect(self, client: Any) -> None:
        """A new browser tab starts looking at the first shown base."""
        if self._last_target is not None:
            with client.atomic():
                self._aim(client.camera, self._last_target)

    def _follow(self, target: np.ndarray) -> None:
        """Move every client's camera by the first shown base's displacement (keeps the view
        angle and distance the user chose); the first time, aim them all at it."""
        target = np.asarray(target, dtype=np.float64).copy()
        last, self._last_target = self._last_target, target
        if last is None:
            self._aim(self.server.initial_camera, target)
            for client in self.server.get_clients().values():
                with client.atomic():
                    self._aim(client.camera, target)
            return
        if not self.follow.value:
            return
        delta = target - last
        if not np.any(delta):
            return
        for client in self.server.get_clients().values():
            client.camera.position = client.camera.position + delta  # look_at moves with it

    def _note_episodes(self, step: Any) -> None:
        done = step["done"]
        for w in self.shown_worlds():
            if bool(done[w]):
                ret = float(step["episode", "return"][w])
                length = int(step["episode", "length"][w])
                self._last_episode[w] = f"world {w}: last episode return {ret:.3f}, {length} steps"
        shown = set(self.shown_worlds())
        self._last_episode = {w: t for w, t in self._last_episode.items() if w in shown}


def _spacing(mjm: mujoco.MjModel) -> float:
    """Distance between worlds shown side by side: the model's width across y at its initial
    pose plus a margin, in whole metres (so the floors' 1 m grids of the worlds coincide)."""
    mjd = mujoco.MjData(mjm)
    mujoco.mj_kinematics(mjm, mjd)
    width = 0.0
    for g in visible_geoms(mjm):
        if int(mjm.geom_type[g]) == int(mujoco.mjtGeom.mjGEOM_PLANE):
            continue
        width = max(width, abs(float(mjd.geom_xpos[g][1])) + float(mjm.geom_rbound[g]))
    return float(max(1, math.ceil(2.5 * width)))
