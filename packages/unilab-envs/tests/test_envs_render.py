"""Offscreen rendering of one world (`unilab_envs.render.Renderer`).

MuJoCo reads `MUJOCO_GL` once, when `mujoco` is first imported, and pytest has imported it long
before these tests run; so the rendering checks run this file as a script in a subprocess with
the offscreen backend `unilab_envs.testing.offscreen_gl_backend()` finds (`MUJOCO_GL=osmesa`,
software OpenGL on the CPU from `apt-get install -y libosmesa6`, or `MUJOCO_GL=egl` with a GPU
driver). The subprocess prints one JSON line of measurements that the tests assert on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from unilab_envs.testing import OFFSCREEN_GL_FIX, offscreen_gl_backend

_SIZE = (64, 48)  # width, height


def _run_script(scenario: str, gl: str, extra_env: dict[str, str] | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("PYOPENGL_PLATFORM", None)
    env.update({"MUJOCO_GL": gl, "OMP_NUM_THREADS": "1", **(extra_env or {})})
    proc = subprocess.run(
        [sys.executable, __file__, scenario],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"render subprocess failed:\n{proc.stdout}\n{proc.stderr}"
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert len(lines) == 1, proc.stdout
    return json.loads(lines[0][len("RESULT ") :])


# ----------------------------------------------------------------------- subprocess side
def _scenario_frames() -> dict:
    import numpy as np
    import torch
    import warp as wp

    import unilab_envs
    from unilab_envs.render import Renderer

    out: dict = {}
    w, h = _SIZE
    env = unilab_envs.make("cartpole-balance", num_envs=2, seed=0)
    env.reset()
    qpos = wp.to_torch(env.ctx.data.qpos)  # [2, 2]: cart x (m), pole angle (rad)
    qpos.copy_(torch.tensor([[0.0, 0.0], [0.0, 0.0]]))
    with Renderer(env, width=w, height=h) as r:
        a = r.frame(0)
        out["shape"], out["dtype"] = list(a.shape), str(a.dtype)
        out["same_state_equal"] = bool(np.array_equal(a, r.frame(0)))
        out["other_world_same_state_equal"] = bool(np.array_equal(a, r.frame(1)))
        qpos[0, 1] = 0.8  # tilt world 0's pole
        b = r.frame(0)
        out["tilted_pixels_changed"] = int((a != b).any(axis=2).sum())
        out["world1_unchanged"] = bool(np.array_equal(a, r.frame(1)))
        qpos[0, 1] = 0.0
        out["restored_equal"] = bool(np.array_equal(a, r.frame(0)))
        out["nonblank"] = int(a.max()) - int(a.min())
        env.step(torch.ones(2, env.action_dim))  # the warp step moves the state
        out["after_step_changed"] = int((a != r.frame(0)).any(axis=2).sum())
        try:
            r.frame(2)
        except ValueError as e:
            out["bad_world"] = str(e)
    try:
        r.frame(0)
    except RuntimeError as e:
        out["closed"] = str(e)
    r.close()  # idempotent

    # Bigger than MuJoCo's default 640x480 offscreen buffer: the renderer enlarges its copy.
    with Renderer(env, width=700, height=20) as r:
        out["wide_shape"] = list(r.frame(0).shape)
    out["env_offwidth_untouched"] = int(env.mjm.vis.global_.offwidth)

    # Floating base: the default camera follows the base body; a fixed camera does not.
    quad = unilab_envs.make("quadruped-velocity", num_envs=1, seed=0)
    quad.reset()
    q = wp.to_torch(quad.ctx.data.qpos)
    for name, cam in (("tracking", None), ("fixed", -1)):
        with Renderer(quad, width=w, height=h, camera=cam) as r:
            q[0, 0] = 0.0
            f0 = r.frame(0).astype(np.int64)
            q[0, 0] = 0.5  # move the base 0.5 m along x
            f1 = r.frame(0).astype(np.int64)
            q[0, 0] = 0.0
        out[f"{name}_mean_abs_diff"] = float(np.abs(f0 - f1).mean())
    return out


def _scenario_rough() -> dict:
    """World 0 of a rough task: the terrain's geoms are in the frame (hidden, the frame changes)."""
    import mujoco
    import numpy as np

    import unilab_envs
    from unilab_envs.render import Renderer

    terrain = {"num_rows": 2, "tile_size": (4.0, 4.0), "border_width": 1.0}
    env = unilab_envs.make("go1-velocity-rough", num_envs=2, device="cpu", terrain=terrain)
    env.reset()
    out: dict = {}
    with Renderer(env, width=160, height=120) as r:
        shown = r.frame(0).astype(np.int64)
        scene = r._renderer.scene
        kinds = {int(scene.geoms[i].type) for i in range(scene.ngeom)}
        out["scene_has_hfield"] = int(mujoco.mjtGeom.mjGEOM_HFIELD) in kinds
        # the terrain: the geoms welded to the world body
        statics = np.flatnonzero(r.mjm.body_weldid[r.mjm.geom_bodyid] == 0)
        out["terrain_geoms"] = int(statics.size)
        r.mjm.geom_rgba[statics, 3] = 0.0
        hidden = r.frame(0).astype(np.int64)
    out["nonblank"] = int(shown.max() - shown.min())
    out["terrain_pixels"] = int((shown != hidden).any(axis=2).sum())
    out["pixels"] = int(shown.shape[0] * shown.shape[1])
    return out


def _scenario_unavailable() -> dict:
    import unilab_envs
    from unilab_envs.render import Renderer, RendererUnavailableError

    env = unilab_envs.make("cartpole-balance", num_envs=1, seed=0)
    try:
        Renderer(env, width=32, height=24)
    except RendererUnavailableError as e:
        return {"error": str(e), "is_runtime_error": isinstance(e, RuntimeError)}
    return {"error": None}


# ----------------------------------------------------------------------- tests
@pytest.fixture(scope="module")
def frames() -> dict:
    gl = offscreen_gl_backend()
    if gl is None:
        pytest.skip(OFFSCREEN_GL_FIX)
    return _run_script("frames", gl)


def test_frame_shape_dtype_and_determinism(frames):
    w, h = _SIZE
    assert frames["shape"] == [h, w, 3]
    assert frames["dtype"] == "uint8"
    assert frames["nonblank"] > 50  # not a constant image
    assert frames["same_state_equal"] is True
    assert frames["other_world_same_state_equal"] is True
    assert frames["restored_equal"] is True


def test_frame_follows_the_warp_state(frames):
    assert frames["tilted_pixels_changed"] > 20
    assert frames["world1_unchanged"] is True
    assert frames["after_step_changed"] > 0


def test_bad_world_closed_renderer_and_large_size(frames):
    assert frames["bad_world"] == "world must be an int in [0, 2), got 2"
    assert frames["closed"] == "Renderer is closed"
    assert frames["wide_shape"] == [20, 700, 3]
    assert frames["env_offwidth_untouched"] == 640


def test_default_camera_tracks_floating_base(frames):
    tracking, fixed = frames["tracking_mean_abs_diff"], frames["fixed_mean_abs_diff"]
    assert fixed > 10.0
    assert tracking < 0.1 * fixed


def test_a_rough_task_renders_its_terrain():
    from unilab_envs.testing import mjlab_robot

    gl = offscreen_gl_backend()
    if gl is None:
        pytest.skip(OFFSCREEN_GL_FIX)
    mjlab_robot("go1")  # skip (or fail) with the reason when no go1.xml is found
    res = _run_script("rough", gl)
    assert res["scene_has_hfield"] is True  # the random-rough tiles
    assert res["terrain_geoms"] > 10  # the 2-row grid: heightfields, stair and box tiles, border
    assert res["nonblank"] > 50
    # hiding the terrain changes much of the frame: what the camera sees around the robot is
    # the terrain
    assert res["terrain_pixels"] > 0.3 * res["pixels"], res


def test_no_working_backend_raises_runtime_error_with_fix():
    # OSMesa asked for while PyOpenGL is pinned to EGL: MuJoCo cannot create any context.
    res = _run_script("unavailable", "osmesa", {"PYOPENGL_PLATFORM": "egl"})
    msg = res["error"]
    assert msg is not None, "Renderer was created although no GL backend works"
    assert res["is_runtime_error"] is True
    assert "MUJOCO_GL=osmesa" in msg and "MUJOCO_GL=egl" in msg
    assert "apt-get install -y libosmesa6" in msg


def test_the_backend_is_mujoco_gl_when_it_works_else_osmesa_then_egl(monkeypatch):
    import unilab_envs.testing as t

    works: set[str] = set()
    monkeypatch.setattr(t, "offscreen_gl_available", lambda backend: backend in works)
    monkeypatch.delenv("UNILAB_REQUIRE_RENDER", raising=False)
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    assert t.offscreen_gl_backend() is None
    works.add("egl")
    assert t.offscreen_gl_backend() == "egl"  # a GPU machine without libosmesa6
    works.add("osmesa")
    assert t.offscreen_gl_backend() == "osmesa"
    monkeypatch.setenv("MUJOCO_GL", "EGL")
    assert t.offscreen_gl_backend() == "egl"  # the user's choice first
    works.discard("egl")
    assert t.offscreen_gl_backend() is None  # chosen, not working: skip with the fix
    monkeypatch.setenv("UNILAB_REQUIRE_RENDER", "1")
    assert t.offscreen_gl_backend() == "egl"  # required: run, and fail with its error
    assert "MUJOCO_GL=egl" in t.OFFSCREEN_GL_FIX and "libosmesa6" in t.OFFSCREEN_GL_FIX


def test_bad_arguments_raise_before_any_gl_context():
    import unilab_envs
    from unilab_envs.render import Renderer

    env = unilab_envs.make("cartpole-balance", num_envs=1, seed=0)
    with pytest.raises(ValueError, match=r"unknown camera 'top'; the model's cameras: \[\]"):
        Renderer(env, camera="top")
    with pytest.raises(ValueError, match=r"camera id 3 out of range \[-1, 0\)"):
        Renderer(env, camera=3)
    with pytest.raises(TypeError, match="camera must be None, a name or an id, got float"):
        Renderer(env, camera=1.5)
    with pytest.raises(ValueError, match="Renderer width must be an int >= 1 pixels, got 0"):
        Renderer(env, width=0)
    with pytest.raises(ValueError, match=r"Renderer height must be an int >= 1 pixels, got 2\.5"):
        Renderer(env, height=2.5)


def test_load_world_copies_one_worlds_state_into_host_data():
    import mujoco
    import numpy as np
    import torch
    import warp as wp

    import unilab_envs
    from unilab_envs.render import load_world

    env = unilab_envs.make("cartpole-balance", num_envs=3, seed=0)
    env.reset()
    wp.to_torch(env.ctx.data.qpos).copy_(torch.tensor([[0.0, 0.1], [0.5, -0.3], [1.0, 0.2]]))
    wp.to_torch(env.ctx.data.qvel).copy_(torch.tensor([[0.0, 0.0], [2.0, 3.0], [0.0, 0.0]]))
    mjd = mujoco.MjData(env.mjm)
    assert load_world(env, mjd, 1) is mjd
    np.testing.assert_allclose(mjd.qpos, [0.5, -0.3], rtol=1e-6)
    np.testing.assert_allclose(mjd.qvel, [2.0, 3.0])
    mujoco.mj_kinematics(env.mjm, mjd)
    cart = mujoco.mj_name2id(env.mjm, mujoco.mjtObj.mjOBJ_BODY, "cart")
    assert abs(float(mjd.xpos[cart][0]) - 0.5) < 1e-6  # the cart's slide is along x
    for bad in (3, -1, True, 1.0):
        with pytest.raises(ValueError, match=r"world must be an int in \[0, 3\)"):
            load_world(env, mjd, bad)


if __name__ == "__main__":
    import torch

    torch.set_num_threads(1)
    scenario = {
        "frames": _scenario_frames,
        "rough": _scenario_rough,
        "unavailable": _scenario_unavailable,
    }[sys.argv[1]]
    print("RESULT " + json.dumps(scenario()), flush=True)
