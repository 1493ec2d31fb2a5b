"""Offscreen rendering of one world of a `VecEnv` with MuJoCo's OpenGL renderer.

    import os; os.environ["MUJOCO_GL"] = "egl"   # before mujoco is imported: egl / osmesa
    import unilab_envs
    from unilab_envs.render import Renderer
    env = unilab_envs.make("cartpole-balance", num_envs=4)
    env.reset()
    with Renderer(env, width=320, height=240) as r:
        rgb = r.frame(world=0)                   # uint8 [240, 320, 3]

MJWarp runs the physics on the GPU (or warp's CPU device) and has no renderer of its own, so
`Renderer` copies one world's state (`qpos`, `qvel`, `mocap_pos`, `mocap_quat`) from the warp
data into a host `mujoco.MjData` of `env.mjm`, runs `mujoco.mj_forward` (kinematics) and
renders it with `mujoco.Renderer`. The OpenGL backend is the one MuJoCo picks from the
`MUJOCO_GL` environment variable, read once when `mujoco` is first imported: `egl` (headless,
GPU or Mesa), `osmesa` (software, CPU; `apt-get install libosmesa6`) or `glfw` (needs a
display; the default when `MUJOCO_GL` is unset). When none works, `Renderer(...)` raises
`RendererUnavailableError` (a RuntimeError) that says how to fix it. `load_world` is the state
copy alone (no OpenGL), for other host-side consumers of one world's poses.
"""

from __future__ import annotations

import copy
import os
from typing import TYPE_CHECKING

import mujoco
import numpy as np
import torch
import warp as wp

if TYPE_CHECKING:
    from unilab_envs._core.env import VecEnv

__all__ = ["Renderer", "RendererUnavailableError", "floating_base", "load_world"]


class RendererUnavailableError(RuntimeError):
    """No OpenGL context could be created for offscreen rendering (see the message's fix)."""


def _unavailable(cause: BaseException) -> RendererUnavailableError:
    backend = os.environ.get("MUJOCO_GL") or "unset (MuJoCo then uses glfw, which needs a display)"
    return RendererUnavailableError(
        f"no offscreen OpenGL renderer works here (MUJOCO_GL={backend}): "
        f"{type(cause).__name__}: {cause}. Fix: set MUJOCO_GL before Python starts, "
        "MUJOCO_GL=egl on a machine with a GPU driver (or Mesa's EGL), or MUJOCO_GL=osmesa for "
        "software rendering on the CPU (Debian/Ubuntu: apt-get install -y libosmesa6)"
    )


def floating_base(mjm: mujoco.MjModel) -> int | None:
    """The body of the model's first free joint (a floating base), or None."""
    for j in range(mjm.njnt):
        if int(mjm.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE):
            return int(mjm.jnt_bodyid[j])
    return None


def _row(arr: wp.array, world: int) -> np.ndarray:
    """float64 host copy of `arr[world]` (one row only, so a GPU env copies a few bytes)."""
    return wp.to_torch(arr)[world].detach().to("cpu", torch.float64).numpy()


def load_world(env: VecEnv, mjd: mujoco.MjData, world: int = 0) -> mujoco.MjData:
    """Copy world `world`'s state (`qpos`, `qvel`, `mocap_pos`, `mocap_quat`) from `env`'s warp
    data into `mjd`, a host `mujoco.MjData` of `env.mjm` (or of a copy of it); return `mjd`.

    Only one row of each array crosses from the device. Derived quantities (body and geom
    poses) are not computed: run `mujoco.mj_kinematics` (poses) or `mujoco.mj_forward` next.
    """
    n = env.num_envs
    if isinstance(world, bool) or not isinstance(world, int) or not 0 <= world < n:
        raise ValueError(f"world must be an int in [0, {n}), got {world!r}")
    data = env.ctx.data
    mjd.qpos[:] = _row(data.qpos, world)
    mjd.qvel[:] = _row(data.qvel, world)
    if mjd.mocap_pos.shape[0] > 0:
        mjd.mocap_pos[:] = _row(data.mocap_pos, world)
        mjd.mocap_quat[:] = _row(data.mocap_quat, world)
    return mjd


class Renderer:
    """Render RGB frames of one world of `env` (a `unilab_envs.VecEnv`).

    Args:
        env: the env; its `mjm` (host MjModel) and `ctx.data` (warp data, `nworld = N`) are read.
        width, height: frame size in pixels (>= 1 each).
        camera: None = a free camera that tracks the floating base (the body of the first free
            joint) when the model has one, else MuJoCo's default free camera looking at the
            model's center; a camera name of the MJCF; or a camera id in [0, ncam) (-1 = the
            default free camera).

    Raises:
        ValueError: bad size or unknown camera.
        RendererUnavailableError: no OpenGL backend works (message says how to fix it).
    """

    def __init__(
        self,
        env: VecEnv,
        width: int = 640,
        height: int = 480,
        camera: int | str | None = None,
    ) -> None:
        for name, value in (("width", width), ("height", height)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Renderer {name} must be an int >= 1 pixels, got {value!r}")
        self.env, self.width, self.height = env, width, height
        # A private copy of the host model: the offscreen buffer must hold width x height.
        mjm = copy.deepcopy(env.mjm)
        mjm.vis.global_.offwidth = max(int(mjm.vis.global_.offwidth), width)
        mjm.vis.global_.offheight = max(int(mjm.vis.global_.offheight), height)
        self.mjm = mjm
        self._camera = self._make_camera(mjm, camera)
        # Follow the floating base: a free camera re-aimed at the base every frame (MuJoCo's
        # own tracking camera low-pass filters its target, so equal states would not give
        # equal frames).
        self._track = floating_base(mjm) if camera is None else None
        self._mjd = mujoco.MjData(mjm)
        try:
            self._renderer: mujoco.Renderer | None = mujoco.Renderer(mjm, height, width)
        except Exception as e:  # ImportError, AttributeError, mujoco.FatalError, ...
            raise _unavailable(e) from e
        # One discarded render: the first one after the context is made can differ in a few
        # pixels (GL state set up lazily); after it, equal states render to equal frames.
        mujoco.mj_forward(mjm, self._mjd)
        self._renderer.update_scene(self._mjd, camera=self._camera)
        self._renderer.render()

    @staticmethod
    def _make_camera(mjm: mujoco.MjModel, camera: int | str | None) -> int | mujoco.MjvCamera:
        if camera is None:
            cam = mujoco.MjvCamera()
            mujoco.mjv_defaultFreeCamera(mjm, cam)
            if floating_base(mjm) is not None:
                cam.distance = 2.5 * float(mjm.stat.extent)
                cam.azimuth, cam.elevation = 135.0, -20.0
            return cam
        if isinstance(camera, str):
            cid = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_CAMERA, camera)
            if cid < 0:
                names = [
                    mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_CAMERA, i) for i in range(mjm.ncam)
                ]
                raise ValueError(f"unknown camera {camera!r}; the model's cameras: {names}")
            return cid
        if isinstance(camera, bool) or not isinstance(camera, int):
            raise TypeError(f"camera must be None, a name or an id, got {type(camera).__name__}")
        if not -1 <= camera < mjm.ncam:
            raise ValueError(f"camera id {camera} out of range [-1, {mjm.ncam}) for this model")
        return camera

    def sync(self, world: int = 0) -> mujoco.MjData:
        """Copy world `world`'s state into the host MjData and run `mj_forward`; return it."""
        mjd = load_world(self.env, self._mjd, world)
        mujoco.mj_forward(self.mjm, mjd)
        return mjd

    def frame(self, world: int = 0) -> np.ndarray:
        """RGB image of world `world` now: uint8 [height, width, 3] (a new array)."""
        if self._renderer is None:
            raise RuntimeError("Renderer is closed")
        mjd = self.sync(world)
        if self._track is not None:
            self._camera.lookat[:] = mjd.xpos[self._track]
        self._renderer.update_scene(mjd, camera=self._camera)
        return self._renderer.render()

    def close(self) -> None:
        """Free the OpenGL context (idempotent)."""
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

    def __enter__(self) -> Renderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
