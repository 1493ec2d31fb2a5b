"""Height scans on warp's CPU device: heightfield and box hits against the analytic height,
the grid pattern and its yaw alignment, misses. (A CUDA-graph capture test is marked gpu.)"""

from __future__ import annotations

import math

import mujoco
import mujoco_warp as mjw
import numpy as np
import pytest
import warp as wp

from unilab_envs.terrain import PyramidStairsTerrain, TerrainConfig, Tile, add_terrain
from unilab_envs.terrain.scan import GridPattern, HeightScan


def _add_probe(spec: mujoco.MjSpec) -> None:
    body = spec.worldbody.add_body(name="probe")
    body.add_freejoint()
    body.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.05, 0, 0], group=1)


def _scan(mjm, poses, pattern, device="cpu"):
    """Place the probe at each (x, y, z, yaw) (one world each), cast, return the scan."""
    with wp.ScopedDevice(device):
        m = mjw.put_model(mjm)
        d = mjw.put_data(mjm, mujoco.MjData(mjm), nworld=len(poses))
        q = d.qpos.numpy()
        for w, (x, y, z, yaw) in enumerate(poses):
            q[w, :7] = [x, y, z, math.cos(yaw / 2), 0, 0, math.sin(yaw / 2)]
        d.qpos.assign(q)
        mjw.kinematics(m, d)
        scan = HeightScan(len(poses), mjm.body("probe").id, pattern)
        scan.cast(m, d)
        return scan


def test_grid_pattern_matches_mjlab_default():
    p = GridPattern()
    off = p.offsets()
    assert off.shape == (17 * 11, 3)
    np.testing.assert_allclose(off[0], [-0.8, -0.5, 0.0], atol=1e-6)
    np.testing.assert_allclose(off[1], [-0.7, -0.5, 0.0], atol=1e-6)  # x varies fastest
    np.testing.assert_allclose(off[-1], [0.8, 0.5, 0.0], atol=1e-6)


def test_heightfield_hits_equal_analytic_heights():
    spec = mujoco.MjSpec()
    body = spec.worldbody.add_body(name="terrain")
    xs = ys = np.linspace(0.0, 4.0, 41)

    def tile(name, corner):
        return Tile(spec=spec, body=body, corner=corner, size=(4.0, 4.0), difficulty=0.0,
                    name=name, group=0)  # fmt: skip

    # A plane z = 0.2 + 0.05 x + 0.03 y (tile coordinates): MuJoCo's triangles are exact
    # anywhere on it. A random field: exact at the vertices.
    plane = 0.2 + 0.05 * xs[None, :] + 0.03 * ys[:, None]
    tile("plane", (-4.0, -2.0, 0.0)).heightfield(plane, 1.0, (1, 1, 1, 1))
    rough = np.random.default_rng(0).uniform(0.0, 0.3, (41, 41))
    tile("rough", (0.0, -2.0, 0.1)).heightfield(rough, 1.0, (1, 1, 1, 1))
    _add_probe(spec)
    mjm = spec.compile()
    pattern = GridPattern(size=(0.6, 0.4), resolution=0.1, alignment="world")
    poses = [(-2.033, 0.017, 2.0, 0.3), (2.0, 0.0, 2.0, 1.0)]
    scan = _scan(mjm, poses, pattern)
    off = pattern.offsets()
    hit_z, heights = scan.hit_z.numpy(), scan.heights.numpy()
    # World 0 on the plane (tile corner at (-4, -2)).
    tx, ty = poses[0][0] + off[:, 0] + 4.0, poses[0][1] + off[:, 1] + 2.0
    np.testing.assert_allclose(hit_z[0], 0.2 + 0.05 * tx + 0.03 * ty, atol=2e-5)
    np.testing.assert_allclose(heights[0], 2.0 - hit_z[0], atol=1e-5)
    # World 1 on the random field's vertices (corner (0, -2, 0.1)); "world" ignores the yaw.
    ix = np.rint((poses[1][0] + off[:, 0]) / 0.1).astype(int)
    iy = np.rint((poses[1][1] + off[:, 1] + 2.0) / 0.1).astype(int)
    np.testing.assert_allclose(hit_z[1], 0.1 + rough[iy, ix], atol=2e-5)


def _stairs_model():
    spec = mujoco.MjSpec()
    stairs = PyramidStairsTerrain(name="stairs", step_height_range=(0.1, 0.1))
    add_terrain(spec, TerrainConfig(sub_terrains=(stairs,), num_rows=1, border_width=0.0))
    _add_probe(spec)
    return spec.compile()


def test_box_stair_heights_and_yaw_alignment():
    mjm = _stairs_model()
    # Tile [-4, 4]^2, 1 m frame at 0, rings of 0.3 m climbing 0.1 m, platform at 0.6 m.
    pattern = GridPattern(size=(0.2, 0.0), resolution=0.1, alignment="yaw")
    poses = [(-2.25, 0.0, 2.0, 0.0), (0.0, -2.25, 2.0, math.pi / 2), (0.0, 0.0, 1.5, 0.7)]
    scan = _scan(mjm, poses, pattern)
    hit_z = scan.hit_z.numpy()
    # World 0: rays at x = -2.35, -2.25, -2.15: ring 2 (x in [-2.4, -2.1]) -> top 0.3 m.
    np.testing.assert_allclose(hit_z[0], [0.3, 0.3, 0.3], atol=1e-5)
    # World 1, heading +y: the grid's x axis points along +y, so rays go down the y ring.
    np.testing.assert_allclose(scan.pnt.numpy()[1, :, :2], [[0, -2.35], [0, -2.25], [0, -2.15]], atol=1e-5)  # fmt: skip
    np.testing.assert_allclose(hit_z[1], [0.3, 0.3, 0.3], atol=1e-5)
    np.testing.assert_allclose(scan.heights.numpy()[2], [0.9, 0.9, 0.9], atol=1e-5)


def test_miss_reports_max_distance():
    mjm = _stairs_model()
    pattern = GridPattern(size=(0.0, 0.0), alignment="world", max_distance=1.0)
    # Off the terrain entirely, and 3 m above the floor (beyond max_distance).
    scan = _scan(mjm, [(20.0, 0.0, 1.0, 0.0), (-2.25, 0.0, 3.3, 0.0)], pattern)
    np.testing.assert_allclose(scan.heights.numpy()[:, 0], [1.0, 1.0])
    assert scan.dist.numpy()[0, 0] == -1.0
    assert scan.dist.numpy()[1, 0] == pytest.approx(3.0, abs=1e-5)


@pytest.mark.gpu
def test_cast_replays_in_a_cuda_graph():
    if not wp.is_cuda_available():
        pytest.skip("needs CUDA")
    mjm = _stairs_model()
    pattern = GridPattern()
    with wp.ScopedDevice("cuda:0"):
        m = mjw.put_model(mjm)
        d = mjw.put_data(mjm, mujoco.MjData(mjm), nworld=4)
        q = d.qpos.numpy()
        q[:, :7] = [-2.25, 0.0, 2.0, 1, 0, 0, 0]
        d.qpos.assign(q)
        mjw.kinematics(m, d)
        scan = HeightScan(4, mjm.body("probe").id, pattern)
        scan.cast(m, d)  # compile eagerly
        eager = scan.heights.numpy().copy()
        scan.heights.zero_()
        with wp.ScopedCapture() as capture:
            scan.cast(m, d)
        wp.capture_launch(capture.graph)
        assert np.array_equal(scan.heights.numpy(), eager)
        q[:, 2] = 2.5
        d.qpos.assign(q)
        mjw.kinematics(m, d)
        wp.capture_launch(capture.graph)
        np.testing.assert_allclose(scan.heights.numpy(), eager + 0.5, atol=1e-5)
