"""The viewer's scene building: MuJoCo geoms -> viser nodes, posed from a host MjData.

A real viser server (no browser) holds the nodes; the tests read their properties back and
compose each geom's world pose from its body frame and its local pose, against MuJoCo's own
`geom_xpos` / `geom_xmat`. Needs viser (`pip install "unilab-integration[viewer]"`).
"""

from __future__ import annotations

import contextlib
import io

import mujoco
import numpy as np
import pytest

viser = pytest.importorskip("viser", reason='needs pip install "unilab-integration[viewer]"')

from unilab_integration._viewer_scene import (  # noqa: E402
    WorldScene,
    capsule_mesh,
    geom_shape,
    hfield_mesh,
    is_terrain,
    visible_geoms,
)

# One geom of every drawn type, on a floating base and a hinged child; plus a collision geom
# (group 3) and an invisible one (alpha 0), which are not drawn.
_XML = """
<mujoco>
  <asset>
    <mesh name="wedge" vertex="0 0 0  0.3 0 0  0 0.2 0  0 0 0.1"/>
    <hfield name="ramp" nrow="3" ncol="4" size="1 0.5 0.4 0.1"
            elevation="0 0.1 0.2 0.3  0.4 0.5 0.6 0.7  0.8 0.9 1 0.5"/>
    <material name="red" rgba="0.8 0.2 0.2 1"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 0.1" rgba="0.2 0.3 0.4 1"/>
    <geom name="ramp" type="hfield" hfield="ramp" pos="3 0 0"/>
    <body name="base" pos="0 0 1">
      <freejoint/>
      <geom name="box" type="box" size="0.1 0.2 0.3" pos="0.1 0 0" material="red"/>
      <geom name="ball" type="sphere" size="0.05" pos="0 0.3 0"/>
      <geom name="egg" type="ellipsoid" size="0.1 0.05 0.02" pos="0 -0.3 0" euler="0 0 30"/>
      <geom name="hit" type="box" size="0.2 0.2 0.2" group="3"/>
      <geom name="ghost" type="sphere" size="0.2" rgba="1 1 1 0"/>
      <body name="arm" pos="0 0 0.4">
        <joint name="hinge" type="hinge" axis="0 1 0"/>
        <geom name="rod" type="capsule" size="0.02 0.15" pos="0 0 0.15"/>
        <geom name="can" type="cylinder" size="0.04 0.05" pos="0.1 0 0" euler="0 90 0"/>
        <geom name="wedge" type="mesh" mesh="wedge" pos="0 0.1 0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture(scope="module")
def server():
    with contextlib.redirect_stdout(io.StringIO()):
        s = viser.ViserServer(host="127.0.0.1", port=0, verbose=False)
    yield s
    with contextlib.redirect_stdout(io.StringIO()):
        s.stop()


def _gid(mjm, name: str) -> int:
    return mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_GEOM, name)


def _quat_mat(wxyz) -> np.ndarray:
    out = np.zeros(9)
    mujoco.mju_quat2Mat(out, np.asarray(wxyz, dtype=np.float64))
    return out.reshape(3, 3)


def test_every_geom_type_becomes_its_viser_node_posed_as_mujoco_places_it(server):
    mjm = mujoco.MjModel.from_xml_string(_XML)
    drawn = {mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_GEOM, g) for g in visible_geoms(mjm)}
    assert drawn == {"floor", "ramp", "box", "ball", "egg", "rod", "can", "wedge"}
    scene = WorldScene(server.scene, mjm, "/t0", static=True)
    handle = {n: scene.geoms[_gid(mjm, n)] for n in drawn}
    assert type(handle["box"][0]).__name__ == "BoxHandle"
    assert tuple(handle["box"][0].dimensions) == pytest.approx((0.2, 0.4, 0.6))
    assert tuple(handle["box"][0].color) == (204, 51, 51)  # the material's color
    assert type(handle["ball"][0]).__name__ == "IcosphereHandle"
    assert handle["ball"][0].radius == pytest.approx(0.05)
    assert tuple(handle["egg"][0].scale) == pytest.approx((0.1, 0.05, 0.02))
    assert type(handle["can"][0]).__name__ == "CylinderHandle"
    assert (handle["can"][0].radius, handle["can"][0].height) == pytest.approx((0.04, 0.1))
    for name in ("rod", "wedge", "ramp", "floor"):
        assert type(handle[name][0]).__name__ == "MeshHandle", name
    assert type(handle["floor"][1]).__name__ == "GridHandle"  # the floor's 1 m grid
    np.testing.assert_allclose(handle["wedge"][0].vertices, mjm.mesh_vert, rtol=1e-6)
    floor = handle["floor"][0].vertices
    assert floor.min(axis=0)[:2] == pytest.approx((-50, -50))  # infinite: 50 m each way

    mjd = mujoco.MjData(mjm)
    rng = np.random.default_rng(0)
    mjd.qpos[:3] = rng.uniform(-1, 1, 3)
    quat = rng.normal(size=4)
    mjd.qpos[3:7] = quat / np.linalg.norm(quat)
    mjd.qpos[7] = 0.7
    mujoco.mj_kinematics(mjm, mjd)
    scene.update(mjd)
    for name in drawn:
        g = _gid(mjm, name)
        body = scene.bodies[int(mjm.geom_bodyid[g])]
        geom = handle[name][0]
        rot_b = _quat_mat(body.wxyz)
        pos = np.asarray(body.position) + rot_b @ np.asarray(geom.position)
        rot = rot_b @ _quat_mat(geom.wxyz)
        np.testing.assert_allclose(pos, mjd.geom_xpos[g], atol=1e-6, err_msg=name)
        np.testing.assert_allclose(rot, mjd.geom_xmat[g].reshape(3, 3), atol=1e-6, err_msg=name)
    moving = WorldScene(server.scene, mjm, "/t1", static=False)  # side by side: its own copy
    assert set(moving.bodies) == {1, 2}  # no static geoms


def test_heightfield_mesh_heights_are_where_mujoco_collides():
    mjm = mujoco.MjModel.from_xml_string(_XML)
    mjd = mujoco.MjData(mjm)
    mjd.qpos[2] = 10.0  # the robot out of the way
    mujoco.mj_forward(mjm, mjd)
    verts, faces = hfield_mesh(mjm, 0)
    assert verts.shape == (12, 3) and faces.shape == (12, 3)
    ramp = _gid(mjm, "ramp")
    geomid = np.array([-1], dtype=np.int32)
    for x, y, z in verts[[0, 3, 5, 9, 11]]:
        start = np.array([3.0 + x, y, 5.0])  # the ramp geom sits at x = 3
        dist = mujoco.mj_ray(mjm, mjd, start, np.array([0.0, 0, -1]), None, 1, 1, geomid)
        assert int(geomid[0]) == ramp
        assert 5.0 - dist == pytest.approx(z, abs=1e-6)
    assert geom_shape(mjm, ramp).kind == "hfield"


def test_capsule_mesh_size_and_outward_winding():
    verts, faces = capsule_mesh(0.1, 0.3)
    np.testing.assert_allclose(verts.min(axis=0), [-0.1, -0.1, -0.4], atol=1e-3)
    np.testing.assert_allclose(verts.max(axis=0), [0.1, 0.1, 0.4], atol=1e-3)
    a, b, c = (verts[faces[:, i]] for i in range(3))
    normal = np.cross(b - a, c - a)
    area = np.linalg.norm(normal, axis=1)
    centroid = (a + b + c) / 3
    real = area > 1e-12  # the poles' degenerate triangles have no direction
    assert real.sum() > 0.9 * len(faces)
    assert bool(((normal * centroid).sum(axis=1)[real] > 0).all())  # every face points out


def test_terrain_models_are_shown_in_place(server):
    import unilab_envs
    from unilab_envs.terrain import TerrainConfig, add_terrain

    spec = mujoco.MjSpec()
    add_terrain(spec, TerrainConfig(seed=0))
    rough = spec.compile()
    assert is_terrain(rough)
    kinds = {geom_shape(rough, g).kind for g in visible_geoms(rough)}
    assert "hfield" in kinds and "box" in kinds
    scene = WorldScene(server.scene, rough, "/rough", static=True)
    assert len(scene.geoms) == rough.ngeom and not scene.moving  # a static "terrain" body
    assert not is_terrain(unilab_envs.make_task("cartpole-balance").build_model())
    assert not is_terrain(
        mujoco.MjModel.from_xml_string(
            _XML.replace('type="hfield"', 'type="box" size="1 1 1"').replace('hfield="ramp"', "")
        )
    )


@pytest.mark.parametrize(
    ("task", "meshes"),
    [
        ("cartpole-balance", 0),
        ("quadruped-velocity", 0),
        ("humanoid-velocity", 0),
        ("go1-velocity-flat", 13),
        ("g1-velocity-flat", 35),
    ],
)
def test_the_tasks_models_are_drawn_whole(server, task, meshes):
    import unilab_envs
    from unilab_envs.testing import mjlab_robot

    if task.startswith(("go1", "g1")):
        mjlab_robot(task.split("-")[0])  # skip (or fail) with the reason when no MJCF is found
    mjm = unilab_envs.make_task(task).build_model()
    scene = WorldScene(server.scene, mjm, f"/{task}", static=True)
    assert set(scene.geoms) == set(visible_geoms(mjm))
    kinds = [geom_shape(mjm, g).kind for g in scene.geoms]
    assert kinds.count("mesh") == meshes
    assert all(int(mjm.geom_group[g]) < 3 for g in scene.geoms)
