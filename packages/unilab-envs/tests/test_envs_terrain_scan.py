"""Height scans on warp's CPU device: heightfield and box hits against the analytic height,
the grid pattern and its yaw alignment, misses, each with and without a `RayScene`; the scene's
hits equal the brute-force ones on the generated rough terrain. (CUDA-graph capture tests are
marked gpu.)"""

from __future__ import annotations

import math

import mujoco
import mujoco_warp as mjw
import numpy as np
import pytest
import warp as wp

from unilab_envs.terrain import PyramidStairsTerrain, TerrainConfig, Tile, add_terrain
from unilab_envs.terrain.scan import GridPattern, HeightScan, RayScene, RingPattern


def _add_probe(spec: mujoco.MjSpec) -> None:
    body = spec.worldbody.add_body(name="probe")
    body.add_freejoint()
    body.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.05, 0, 0], group=1)


def _scan(mjm, poses, pattern, device="cpu", bvh=False):
    """Place the probe at each (x, y, z, yaw) (one world each), cast, return the scan
    (with `bvh`, through a RayScene of the terrain's group)."""
    with wp.ScopedDevice(device):
        m = mjw.put_model(mjm)
        d = mjw.put_data(mjm, mujoco.MjData(mjm), nworld=len(poses))
        q = d.qpos.numpy()
        for w, (x, y, z, yaw) in enumerate(poses):
            q[w, :7] = [x, y, z, math.cos(yaw / 2), 0, 0, math.sin(yaw / 2)]
        d.qpos.assign(q)
        mjw.kinematics(m, d)
        scene = RayScene(mjm, len(poses), (0,)) if bvh else None
        scan = HeightScan(len(poses), mjm.body("probe").id, pattern, scene=scene)
        scan.cast(m, d)
        return scan


def test_grid_pattern_matches_mjlab_default():
    p = GridPattern()
    off = p.offsets()
    assert off.shape == (17 * 11, 3)
    np.testing.assert_allclose(off[0], [-0.8, -0.5, 0.0], atol=1e-6)
    np.testing.assert_allclose(off[1], [-0.7, -0.5, 0.0], atol=1e-6)  # x varies fastest
    np.testing.assert_allclose(off[-1], [0.8, 0.5, 0.0], atol=1e-6)


@pytest.mark.parametrize("bvh", [False, True], ids=["brute", "bvh"])
def test_heightfield_hits_equal_analytic_heights(bvh):
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
    scan = _scan(mjm, poses, pattern, bvh=bvh)
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


@pytest.mark.parametrize("bvh", [False, True], ids=["brute", "bvh"])
def test_box_stair_heights_and_yaw_alignment(bvh):
    mjm = _stairs_model()
    # Tile [-4, 4]^2, 1 m frame at 0, rings of 0.3 m climbing 0.1 m, platform at 0.6 m.
    pattern = GridPattern(size=(0.2, 0.0), resolution=0.1, alignment="yaw")
    poses = [(-2.25, 0.0, 2.0, 0.0), (0.0, -2.25, 2.0, math.pi / 2), (0.0, 0.0, 1.5, 0.7)]
    scan = _scan(mjm, poses, pattern, bvh=bvh)
    hit_z = scan.hit_z.numpy()
    # World 0: rays at x = -2.35, -2.25, -2.15: ring 2 (x in [-2.4, -2.1]) -> top 0.3 m.
    np.testing.assert_allclose(hit_z[0], [0.3, 0.3, 0.3], atol=1e-5)
    # World 1, heading +y: the grid's x axis points along +y, so rays go down the y ring.
    np.testing.assert_allclose(scan.pnt.numpy()[1, :, :2], [[0, -2.35], [0, -2.25], [0, -2.15]], atol=1e-5)  # fmt: skip
    np.testing.assert_allclose(hit_z[1], [0.3, 0.3, 0.3], atol=1e-5)
    np.testing.assert_allclose(scan.heights.numpy()[2], [0.9, 0.9, 0.9], atol=1e-5)


@pytest.mark.parametrize("bvh", [False, True], ids=["brute", "bvh"])
def test_miss_reports_max_distance(bvh):
    mjm = _stairs_model()
    pattern = GridPattern(size=(0.0, 0.0), alignment="world", max_distance=1.0)
    # Off the terrain entirely, and 3 m above the floor (beyond max_distance).
    scan = _scan(mjm, [(20.0, 0.0, 1.0, 0.0), (-2.25, 0.0, 3.3, 0.0)], pattern, bvh=bvh)
    np.testing.assert_allclose(scan.heights.numpy()[:, 0], [1.0, 1.0])
    assert scan.dist.numpy()[0, 0] == -1.0
    assert scan.dist.numpy()[1, 0] == pytest.approx(3.0, abs=1e-5)


def test_scene_hits_equal_brute_force_on_the_rough_terrain():
    """Every sub-terrain type of the default grid (heightfields, boxes, pits, stones): grid and
    ring rays from random base poses (tilted ones included, alignment "base") hit the same geom
    at the same distance with and without the hierarchy. (Origins stay above the surface: a ray
    that starts inside a heightfield's solid hits its base box without the hierarchy and misses
    with it, which tests only the triangles.)"""
    spec = mujoco.MjSpec()
    layout = add_terrain(spec, TerrainConfig(num_rows=3, num_cols=6))
    _add_probe(spec)
    mjm = spec.compile()
    rng = np.random.default_rng(3)
    n = 48
    lo, hi = layout.origins[..., :2].min((0, 1)) - 4.0, layout.origins[..., :2].max((0, 1)) + 4.0
    with wp.ScopedDevice("cpu"):
        m = mjw.put_model(mjm)
        d = mjw.put_data(mjm, mujoco.MjData(mjm), nworld=n)
        q = d.qpos.numpy()
        q[:, :2] = rng.uniform(lo, hi, (n, 2))
        q[:, 2] = rng.uniform(1.2, 2.0, n)
        quat = rng.normal(size=(n, 4)) * [1.0, 0.15, 0.15, 1.0]
        q[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
        d.qpos.assign(q)
        mjw.kinematics(m, d)
        scene = RayScene(mjm, n, (0,))
        assert not scene.dynamic and scene.num_geoms == int((mjm.geom_group == 0).sum())
        body = mjm.body("probe").id
        for pattern in (GridPattern(), GridPattern(alignment="base"), RingPattern()):
            brute = HeightScan(n, body, pattern)
            fast = HeightScan(n, body, pattern, scene=scene)
            brute.cast(m, d)
            fast.cast(m, d)
            hit = brute.dist.numpy() >= 0.0
            assert hit.mean() > 0.9
            np.testing.assert_array_equal(fast.dist.numpy() >= 0.0, hit)
            np.testing.assert_allclose(fast.dist.numpy(), brute.dist.numpy(), atol=1e-4)
            np.testing.assert_allclose(fast.heights.numpy(), brute.heights.numpy(), atol=1e-4)


def test_scene_refuses_a_scan_group_it_lacks():
    mjm = _stairs_model()
    with wp.ScopedDevice("cpu"):
        scene = RayScene(mjm, 2, (0,))
        with pytest.raises(ValueError, match="not all in its RayScene"):
            HeightScan(2, mjm.body("probe").id, GridPattern(), geom_groups=(0, 1), scene=scene)
    with pytest.raises(ValueError, match="no geom in groups"):
        RayScene(mjm, 2, (5,))


@pytest.mark.gpu
@pytest.mark.parametrize("bvh", [False, True], ids=["brute", "bvh"])
def test_cast_replays_in_a_cuda_graph(bvh):
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
        scene = RayScene(mjm, 4, (0,)) if bvh else None
        scan = HeightScan(4, mjm.body("probe").id, pattern, scene=scene)
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
