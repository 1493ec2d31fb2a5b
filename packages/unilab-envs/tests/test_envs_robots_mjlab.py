"""MJLab 1.6.0's Unitree Go1 and G1 (`robots.go1`, `robots.g1`): constants, MJCF resolution,
the robot cache filled from MJLab's wheel, the missing-file error, and the compiled model's
solver options, collisions and actuators.

Small MJCFs with MJLab's joint, body and geom names stand in for the real files (meshes are not
needed); mjlab and Menagerie are faked on disk, never fetched. One test uses the real go1.xml
of an installed mjlab 1.6.0 (its files, found without importing it).
"""

from __future__ import annotations

import importlib.util
import math
import os
import zipfile
from pathlib import Path

import attrs
import mujoco
import numpy as np
import pytest

from unilab_envs import robot_files
from unilab_envs.tasks import robots
from unilab_envs.tasks.velocity import build_robot_model

LEGS = ("FR", "FL", "RR", "RL")


def _go1_leg(leg: str, y: float, menagerie: bool) -> str:
    def name(n: str) -> str:
        return "" if menagerie else f' name="{leg}_{n}"'

    foot = f' name="{leg}"' if menagerie else f' name="{leg}_foot_collision"'
    return f"""
      <body name="{leg}_hip" pos="{0.19 if leg[0] == "F" else -0.19} {y} 0">
        <joint name="{leg}_hip_joint" axis="1 0 0" range="-0.863 0.863"/>
        <geom class="collision"{name("hip_collision")} size="0.04" fromto="0 0 0 0 {y / 2} 0"/>
        <body name="{leg}_thigh" pos="0 {y} 0">
          <joint name="{leg}_thigh_joint" range="-0.686 4.501"/>
          <geom class="visual" type="box" size="0.02 0.02 0.1" pos="0 0 -0.1"/>
          <geom class="collision"{name("thigh_collision1")} size="0.015" fromto="0 0 0 0 0 -0.2"/>
          <body name="{leg}_calf" pos="0 0 -0.213">
            <joint name="{leg}_calf_joint" range="-2.818 -0.888"/>
            <geom class="collision"{name("calf_collision1")} size="0.01" fromto="0 0 0 0 0 -0.2"/>
            <geom class="collision"{foot} type="sphere" size="0.023" pos="0 0 -0.213"/>
          </body>
        </body>
      </body>"""


def go1_xml(menagerie: bool = False) -> str:
    """A Go1 with MJLab's names (or Menagerie's: unnamed collision geoms, feet FR..RL)."""
    legs = "".join(_go1_leg(leg, 0.05 if leg[1] == "L" else -0.05, menagerie) for leg in LEGS)
    trunk = "" if menagerie else ' name="trunk_collision"'
    option = '<option cone="elliptic" impratio="100"/>' if menagerie else ""
    joint = (
        '<joint axis="0 1 0" damping="2" frictionloss="0.2"/>'
        if menagerie
        else '<joint axis="0 1 0"/>'
    )
    margin = ' margin="0.001"' if menagerie else ""
    return f"""<mujoco model="go1">
  {option}
  <default>
    <default class="go1">
      {joint}
      <geom{margin}/>
      <default class="visual"><geom contype="0" conaffinity="0" group="2"/></default>
      <default class="collision"><geom group="3" type="capsule"/></default>
    </default>
  </default>
  <worldbody>
    <body name="trunk" pos="0 0 0.445" childclass="go1">
      <freejoint{"" if menagerie else ' name="floating_base_joint"'}/>
      <inertial pos="0 0 0" mass="5.2" diaginertia="0.07 0.06 0.017"/>
      <geom class="visual" type="box" size="0.13 0.09 0.05"/>
      <geom class="collision"{trunk} type="box" size="0.13 0.09 0.05"/>{legs}
    </body>
  </worldbody>
</mujoco>
"""


def _chain(joints: list[str], leaf: str, inner: str = "") -> str:
    """Nested bodies, one per joint (the last one named `leaf`, holding `inner`)."""
    out = ""
    for i, joint in enumerate(joints):
        body = leaf if i == len(joints) - 1 else joint.replace("_joint", "_link")
        out += f'<body name="{body}" pos="0 0 -0.05">'
        out += f'<joint name="{joint}" axis="0 1 0" range="-1 1"/><geom size="0.02" mass="0.5"/>'
    return out + inner + "</body>" * len(joints)


def g1_xml() -> str:
    """A G1 with MJLab's 29 joint names, each on its own small body; 7 foot spheres per foot."""
    legs = arms = ""
    for side in ("left", "right"):
        feet = "".join(
            f'<geom name="{side}_foot{k}_collision" class="collision" type="sphere" '
            f'size="0.005" pos="{0.02 * k - 0.08} 0 -0.02"/>'
            for k in range(1, 8)
        )
        leg = [j for j in robots.G1_JOINTS[:12] if j.startswith(side)]
        legs += _chain(leg, f"{side}_ankle_roll_link", feet)
        arm = [j for j in robots.G1_JOINTS[15:] if j.startswith(side)]
        arms += _chain(arm, f"{side}_wrist_yaw_link")
    torso = f'<geom name="torso_collision" class="collision" size="0.1" mass="7"/>{arms}'
    waist = _chain(list(robots.G1_JOINTS[12:15]), "torso_link", torso)
    return f"""<mujoco model="g1">
  <default>
    <default class="collision"><geom group="3" contype="1" conaffinity="1"/></default>
  </default>
  <worldbody>
    <body name="pelvis" pos="0 0 0.8">
      <freejoint name="floating_base_joint"/>
      <geom name="pelvis_collision" class="collision" size="0.07" mass="3.8"/>
      <geom size="0.05" contype="0" conaffinity="0" group="2"/>
      {legs}{waist}
    </body>
  </worldbody>
</mujoco>
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def geom(mjm: mujoco.MjModel, name: str) -> int:
    gid = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_GEOM, name)
    assert gid >= 0, name
    return gid


# ----------------------------------------------------------------------------- constants
def test_go1_constants_equal_mjlab():
    # mjlab/asset_zoo/robots/unitree_go1/go1_constants.py: reflected inertia 0.000111842 *
    # gear^2 (6 hip/thigh, 9 knee), w = 10 * 2 * 3.1415926535, zeta = 2.
    r = robots.go1(mjcf=robots.__file__)  # any existing path: constants only
    hip = (15.89524265323492, 1.0119225759919113, 0.004026312, 23.7, 30.1)
    knee = (35.76429596977857, 2.2768257959818006, 0.009059202, 35.55, 20.06)
    for field, k in (("kp", 0), ("kv", 1), ("armature", 2), ("effort_limit", 3)):
        np.testing.assert_allclose(r.per_joint(field), (hip[k], hip[k], knee[k]) * 4, rtol=1e-12)
    np.testing.assert_allclose(r.velocity_limit, (30.1, 30.1, 20.06) * 4)
    # GO1_ACTION_SCALE: 0.25 * effort / stiffness.
    np.testing.assert_allclose(
        r.action_scale, (0.3727530387083568, 0.3727530387083568, 0.24850202580557115) * 4
    )
    assert r.joint_names == tuple(f"{g}_{p}_joint" for g in LEGS for p in ("hip", "thigh", "calf"))
    # INIT_STATE: pos z 0.278; ".*R_hip_joint" 0.1, ".*L_hip_joint" -0.1, thigh 0.9, calf -1.8.
    assert r.default_pose == (0.1, 0.9, -1.8, -0.1, 0.9, -1.8, 0.1, 0.9, -1.8, -0.1, 0.9, -1.8)
    assert r.init_height == 0.278
    assert r.base_body == "trunk"
    assert r.foot_bodies == ("FR_calf", "FL_calf", "RR_calf", "RL_calf")
    assert r.foot_geoms == tuple(f"{g}_foot_collision" for g in LEGS)
    # tasks/velocity/config/go1/env_cfgs.py (flat): only fell_over at 70 degrees; njmax 300.
    assert r.termination_bodies == () and r.min_base_height == 0.0
    assert r.max_tilt == pytest.approx(math.radians(70.0))
    assert (r.njmax, r.damping, r.frictionloss) == (300, 0.0, 0.0)
    p = r.physics
    assert (p.timestep, p.integrator, p.cone, p.impratio) == (0.005, "implicitfast", "elliptic", 10)
    assert (p.iterations, p.ls_iterations, p.ccd_iterations, p.tolerance) == (10, 20, 50, 1e-8)
    assert (p.jacobian, p.solver, p.ls_tolerance) == ("auto", "newton", 0.01)


def test_g1_constants_equal_mjlab():
    # mjlab/asset_zoo/robots/unitree_g1/g1_constants.py: two-stage planetary reflected inertia
    # r0 (g1 g2)^2 + r1 g2^2 + r2 per motor; waist roll/pitch and ankles = 2 x 5020.
    r = robots.g1(mjcf=robots.__file__)
    motors = {  # armature, kp, kv, effort, velocity limit
        "5020": (0.003609725, 14.25062309787429, 0.907222843292423, 25.0, 37.0),
        "7520_14": (0.01017752004132231, 40.17923863450712, 2.557889775413375, 88.0, 32.0),
        "7520_22": (0.025101924999999997, 99.09842777666111, 6.308801853496639, 139.0, 20.0),
        "4010": (0.00425, 16.77832748089279, 1.06814150219, 5.0, 22.0),
    }
    motors["2x5020"] = (*(2 * v for v in motors["5020"][:4]), 37.0)
    leg = ["7520_14", "7520_22", "7520_14", "7520_22", "2x5020", "2x5020"]
    arm = ["5020"] * 5 + ["4010"] * 2
    per_joint = [motors[m] for m in leg * 2 + ["7520_14", "2x5020", "2x5020"] + arm * 2]
    for k, field in enumerate(("armature", "kp", "kv", "effort_limit", "velocity_limit")):
        np.testing.assert_allclose(r.per_joint(field), [m[k] for m in per_joint], rtol=1e-12)
    np.testing.assert_allclose(r.action_scale, [0.25 * m[3] / m[1] for m in per_joint])
    assert len(r.joint_names) == 29 and r.joint_names[12:15] == (
        "waist_yaw_joint",
        "waist_roll_joint",
        "waist_pitch_joint",
    )
    # KNEES_BENT_KEYFRAME: pos z 0.76.
    pose = dict(zip(r.joint_names, r.default_pose, strict=True))
    assert r.init_height == 0.76
    assert pose["left_hip_pitch_joint"] == pose["right_hip_pitch_joint"] == -0.312
    assert pose["left_knee_joint"] == 0.669 and pose["right_ankle_pitch_joint"] == -0.363
    assert pose["left_elbow_joint"] == pose["right_elbow_joint"] == 0.6
    assert pose["left_shoulder_roll_joint"] == 0.2 and pose["right_shoulder_roll_joint"] == -0.2
    assert pose["left_shoulder_pitch_joint"] == pose["right_shoulder_pitch_joint"] == 0.2
    assert sum(v != 0.0 for v in r.default_pose) == 12
    assert r.foot_bodies == ("left_ankle_roll_link", "right_ankle_roll_link")
    assert r.base_body == "pelvis" and r.termination_bodies == ()
    assert (r.njmax, r.nconmax) == (300, 70)
    p = r.physics
    assert (p.timestep, p.cone, p.impratio, p.iterations, p.ls_iterations) == (
        0.005,
        "pyramidal",
        1.0,
        10,
        20,
    )


# ----------------------------------------------------------------------------- resolution
def _fake_mjlab(root: Path, text: str) -> str:
    """A directory holding an importable-looking `mjlab` package with go1.xml."""
    (root / "mjlab").mkdir(parents=True)
    (root / "mjlab" / "__init__.py").write_text("")
    return write(root, "mjlab/asset_zoo/robots/unitree_go1/xmls/go1.xml", text)


def _fake_menagerie_cache(cache_dir: Path, text: str) -> str:
    """A published Menagerie model directory, as `mujoco_menagerie.Cache` lays it out."""
    mm = pytest.importorskip("mujoco_menagerie", reason="needs unilab-envs[menagerie]")
    cache = mm.Cache(dir=cache_dir)
    model_dir = cache.model_path(mm.get("unitree_go1"))
    path = write(model_dir, "go1.xml", text)
    (model_dir / ".complete").write_text('{"oid": "test", "files": {}}')
    return path


@pytest.fixture(autouse=True)
def _empty_robot_cache(tmp_path, monkeypatch):
    # a robot cache of this machine's user must not decide the resolution tests
    monkeypatch.setenv("UNILAB_ROBOTS_DIR", str(tmp_path / "robot-cache"))


def _hide(monkeypatch, *names: str) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        robot_files.importlib.util, "find_spec", lambda n, *a: None if n in names else real(n, *a)
    )


def test_resolution_order_path_then_mjlab(tmp_path, monkeypatch):
    _hide(monkeypatch, "mujoco_menagerie")
    mjlab_xml = _fake_mjlab(tmp_path / "site", go1_xml())
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(__import__("sys").modules, "mjlab", raising=False)
    explicit = write(tmp_path, "mine/go1.xml", go1_xml())
    assert robots.find_mjcf("go1", explicit) == robots.MjcfSource(explicit, "path")
    assert robots.go1().mjcf == mjlab_xml
    assert robots.go1(explicit).mjcf == explicit
    with pytest.raises(robots.RobotFileNotFoundError, match="does not exist"):
        robots.go1(tmp_path / "nope.xml")


def test_resolution_mjlab_before_menagerie_then_menagerie(tmp_path, monkeypatch):
    cached = _fake_menagerie_cache(tmp_path / "cache", go1_xml(menagerie=True))
    monkeypatch.setenv("MENAGERIE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("MENAGERIE_ROOT", raising=False)
    mjlab_xml = _fake_mjlab(tmp_path / "site", go1_xml())
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert robots.find_mjcf("go1").origin == "mjlab"
    assert robots.go1().mjcf == mjlab_xml
    _hide(monkeypatch, "mjlab")
    source = robots.find_mjcf("go1")
    assert source == robots.MjcfSource(cached, "menagerie")
    r = robots.go1()
    assert r.mjcf == cached and r.foot_geoms == LEGS
    assert r.collisions == (robots._unitree.GO1_MENAGERIE_COLLISION,)


def test_missing_file_names_the_ways_that_change_no_package(monkeypatch):
    _hide(monkeypatch, "mjlab", "mujoco_menagerie")
    for make, robot, file in ((robots.go1, "go1", "go1.xml"), (robots.g1, "g1", "g1.xml")):
        with pytest.raises(FileNotFoundError) as err:
            make()
        text = str(err.value)
        assert "mjcf=PATH" in text and file in text
        assert f"`unilab robots get {robot}`" in text
        assert robot_files.robot_cache_dir() in text
        assert "unilab-envs[menagerie]" in text
        # `pip install mjlab` would replace torch and downgrade mujoco and mujoco-warp
        assert "pip install" not in text


def _mjlab_wheel(path: Path) -> Path:
    """A wheel laid out as MJLab's: code, dist-info and both robots' xmls/ folders (an MJCF
    and a mesh each)."""
    tetra = "v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nv 0 0 0.1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("mjlab/__init__.py", "")
        zf.writestr("mjlab/envs/manager_based_rl_env.py", "")
        zf.writestr("mjlab-1.6.0.dist-info/METADATA", "Name: mjlab\nVersion: 1.6.0\n")
        for robot, text in (("go1", go1_xml()), ("g1", g1_xml())):
            xml = "mjlab/" + robot_files.MJLAB_FILES[robot]
            mesh = '<asset><mesh name="tetra" file="tetra.obj"/></asset>'
            text = text.replace("<worldbody>", f'<compiler meshdir="assets"/>{mesh}<worldbody>', 1)
            text = text.replace(
                "</worldbody>",
                '<body><geom type="mesh" mesh="tetra" group="2"/></body></worldbody>',
            )
            zf.writestr(xml, text)
            zf.writestr(os.path.dirname(xml) + "/assets/tetra.obj", tetra)
        zf.writestr("mjlab/asset_zoo/robots/unitree_go1/go1_constants.py", "")
    return path


def test_robot_files_from_a_wheel_are_kept_in_the_cache_and_found_first(tmp_path, monkeypatch):
    _hide(monkeypatch, "mujoco_menagerie")
    _fake_mjlab(tmp_path / "site", go1_xml())  # an installed mjlab: the cache comes first
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    (tmp_path / "wheels").mkdir()
    wheel = _mjlab_wheel(tmp_path / "wheels" / "mjlab-1.6.0-py3-none-any.whl")
    cache = Path(robot_files.robot_cache_dir())
    paths = robot_files.fetch_robot_files(["go1", "g1", "go1"], tmp_path / "wheels")
    assert paths == {r: str(cache / "mjlab" / robot_files.MJLAB_FILES[r]) for r in ("go1", "g1")}
    kept = sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file())
    assert kept == sorted(
        f"mjlab/{os.path.dirname(robot_files.MJLAB_FILES[r])}/{f}"
        for r in ("go1", "g1")
        for f in (os.path.basename(robot_files.MJLAB_FILES[r]), "assets/tetra.obj")
    )
    assert robots.find_mjcf("go1") == robots.MjcfSource(paths["go1"], "cache")
    for robot, make in (("go1", robots.go1), ("g1", robots.g1)):
        r = make()
        assert r.mjcf == paths[robot]
        assert build_robot_model(r).nmesh == 1  # the mesh came along
    # again, from the wheel file itself: the earlier copy is replaced
    (cache / "mjlab" / robot_files.MJLAB_FILES["go1"]).write_text("stale")
    robot_files.fetch_robot_files(["go1"], wheel)
    assert "stale" not in Path(paths["go1"]).read_text()


def test_fetch_refuses_a_wheel_without_the_robot_and_unknown_robots(tmp_path):
    bare = tmp_path / "mjlab-1.6.0-py3-none-any.whl"
    with zipfile.ZipFile(bare, "w") as zf:
        zf.writestr("mjlab/__init__.py", "")
    with pytest.raises(ValueError, match=r"no mjlab/asset_zoo/robots/unitree_go1/xmls/go1\.xml"):
        robot_files.fetch_robot_files(["go1"], bare)
    with pytest.raises(ValueError, match="unknown robot 'h1'"):
        robot_files.fetch_robot_files(["h1"], bare)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"no mjlab-1\.6\.0-\*\.whl in this folder"):
        robot_files.fetch_robot_files(["go1"], tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match="no such wheel file or folder"):
        robot_files.fetch_robot_files(["go1"], tmp_path / "nowhere.whl")
    assert not os.path.exists(robot_files.robot_cache_dir())


# ----------------------------------------------------------------------------- the model
def test_go1_model_has_mjlab_physics(tmp_path):
    r = robots.go1(write(tmp_path, "go1.xml", go1_xml()))
    mjm = build_robot_model(r)
    opt = mjm.opt
    assert opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC and opt.impratio == 10.0
    assert opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert (opt.iterations, opt.ls_iterations, opt.ccd_iterations) == (10, 20, 50)
    assert (opt.tolerance, opt.ls_tolerance, opt.timestep) == (1e-8, 0.01, 0.005)
    # FULL_COLLISION: every *_collision geom collides with everything (self too), solref 0.01.
    for leg in LEGS:
        for name in (f"{leg}_hip_collision", f"{leg}_thigh_collision1", f"{leg}_calf_collision1"):
            g = geom(mjm, name)
            assert (mjm.geom_contype[g], mjm.geom_conaffinity[g]) == (1, 1)
            assert (mjm.geom_condim[g], mjm.geom_priority[g]) == (1, 0)
            np.testing.assert_allclose(mjm.geom_solref[g], (0.01, 1.0))
        foot = geom(mjm, f"{leg}_foot_collision")
        assert (mjm.geom_condim[foot], mjm.geom_priority[foot]) == (6, 1)
        np.testing.assert_allclose(mjm.geom_friction[foot], (1.0, 5e-3, 5e-4))
        np.testing.assert_allclose(mjm.geom_solref[foot], (0.01, 1.0))
    visual = [g for g in range(mjm.ngeom) if mjm.geom_group[g] == 2]
    assert visual and not mjm.geom_contype[visual].any() and not mjm.geom_conaffinity[visual].any()
    floor = geom(mjm, "unilab_floor")
    assert (mjm.geom_contype[floor], mjm.geom_conaffinity[floor]) == (1, 1)
    # Position actuators: gain kp, bias (0, -kp, -kv), force limits, armature on the joints.
    assert mjm.nu == 12
    kp, kv, effort = r.per_joint("kp"), r.per_joint("kv"), r.per_joint("effort_limit")
    for i, joint in enumerate(r.joint_names):
        jid = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_JOINT, joint)
        a = next(a for a in range(mjm.nu) if mjm.actuator_trnid[a, 0] == jid)
        assert mjm.actuator_gainprm[a, 0] == pytest.approx(kp[i])
        np.testing.assert_allclose(mjm.actuator_biasprm[a, :3], (0.0, -kp[i], -kv[i]))
        np.testing.assert_allclose(mjm.actuator_forcerange[a], (-effort[i], effort[i]))
        assert mjm.actuator_forcelimited[a] and not mjm.actuator_ctrllimited[a]
        dof = mjm.jnt_dofadr[jid]
        assert mjm.dof_armature[dof] == pytest.approx(r.armature[i])
        assert (mjm.dof_damping[dof], mjm.dof_frictionloss[dof]) == (0.0, 0.0)


def test_go1_menagerie_file_gets_the_same_physics(tmp_path):
    path = write(tmp_path, "go1.xml", go1_xml(menagerie=True))
    # What go1() returns for Menagerie's file (tested above), here from an explicit path.
    r = attrs.evolve(
        robots.go1(path),
        collisions=(robots._unitree.GO1_MENAGERIE_COLLISION,),
        foot_geoms=LEGS,
    )
    mjm = build_robot_model(r)
    assert mjm.opt.impratio == 10.0  # the file's 100 overwritten
    for leg in LEGS:
        foot = geom(mjm, leg)
        assert (mjm.geom_condim[foot], mjm.geom_priority[foot], mjm.geom_margin[foot]) == (6, 1, 0)
        np.testing.assert_allclose(mjm.geom_friction[foot], (1.0, 5e-3, 5e-4))
        np.testing.assert_allclose(mjm.geom_solimp[foot], (0.9, 0.95, 0.001, 0.5, 2.0))
    coll = [g for g in range(mjm.ngeom) if mjm.geom_group[g] == 3 and mjm.geom_condim[g] == 1]
    assert len(coll) == 1 + 3 * 4  # trunk + hip, thigh, calf capsules per leg
    assert (mjm.geom_contype[coll] == 1).all() and (mjm.geom_margin[coll] == 0).all()
    np.testing.assert_allclose(mjm.geom_solref[coll], [(0.01, 1.0)] * len(coll))
    assert not mjm.geom_contype[mjm.geom_group == 2].any()
    assert not mjm.dof_damping[6:].any() and not mjm.dof_frictionloss[6:].any()


def test_g1_model_has_mjlab_physics(tmp_path):
    r = robots.g1(write(tmp_path, "g1.xml", g1_xml()))
    mjm = build_robot_model(r)
    assert mjm.opt.cone == mujoco.mjtCone.mjCONE_PYRAMIDAL and mjm.opt.impratio == 1.0
    assert (mjm.opt.iterations, mjm.opt.ls_iterations, mjm.opt.ccd_iterations) == (10, 20, 50)
    assert mjm.nu == 29
    for side in ("left", "right"):
        for k in range(1, 8):
            g = geom(mjm, f"{side}_foot{k}_collision")
            assert (mjm.geom_condim[g], mjm.geom_priority[g], mjm.geom_contype[g]) == (3, 1, 1)
            assert mjm.geom_friction[g][0] == pytest.approx(0.6)
    for name in ("pelvis_collision", "torso_collision"):
        g = geom(mjm, name)
        assert (mjm.geom_condim[g], mjm.geom_priority[g], mjm.geom_contype[g]) == (1, 0, 1)
    unnamed = [
        g
        for g in range(mjm.ngeom)
        if mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_GEOM, g) is None and mjm.geom_bodyid[g] != 0
    ]
    assert unnamed and not mjm.geom_contype[unnamed].any()
    knee = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_JOINT, "left_knee_joint")
    a = next(a for a in range(mjm.nu) if mjm.actuator_trnid[a, 0] == knee)
    assert mjm.actuator_gainprm[a, 0] == pytest.approx(99.09842777666111)
    np.testing.assert_allclose(mjm.actuator_forcerange[a], (-139.0, 139.0))
    assert mjm.dof_armature[mjm.jnt_dofadr[knee]] == pytest.approx(0.025101925)


def test_mjlab_physics_xml_writes_the_same_model(tmp_path):
    src = write(tmp_path, "in/go1.xml", go1_xml())
    dst = robots.mjlab_physics_xml(src, str(tmp_path / "out.xml"))
    plain = attrs.evolve(robots.go1(dst), collisions=(), physics=None)
    a, b = build_robot_model(plain), build_robot_model(robots.go1(src))
    for field in (
        "geom_contype",
        "geom_conaffinity",
        "geom_condim",
        "geom_priority",
        "geom_friction",
        "geom_solref",
        "actuator_gainprm",
    ):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
    assert (a.opt.cone, a.opt.impratio, a.opt.iterations) == (b.opt.cone, 10.0, 10)


def test_foot_geoms_decide_foot_contact(tmp_path):
    from unilab_envs.tasks.velocity import VelocityTask

    task = VelocityTask(robots.go1(write(tmp_path, "go1.xml", go1_xml())))
    mjm = task.build_model()
    foot = task._host["geom_foot"]
    for k, leg in enumerate(LEGS):
        assert foot[geom(mjm, f"{leg}_foot_collision")] == k
        assert foot[geom(mjm, f"{leg}_calf_collision1")] == -1
    assert not task._host["geom_term"].any()


MJLAB = importlib.util.find_spec("mjlab")


@pytest.mark.skipif(
    MJLAB is None,
    reason="mjlab is not installed: `pip install --no-deps mjlab==1.6.0` (its files suffice)",
)
def test_real_mjlab_go1_xml():
    root = MJLAB.submodule_search_locations[0]
    mjm = build_robot_model(robots.go1(os.path.join(root, robot_files.MJLAB_FILES["go1"])))
    colliding = {
        mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_GEOM, g)
        for g in range(mjm.ngeom)
        if mjm.geom_contype[g]
    }
    assert len(colliding) == 1 + 2 + 4 * 7  # floor, trunk + head, per leg hip 3 thigh 2 calf foot
    assert {mjm.geom_condim[geom(mjm, f"{leg}_foot_collision")] for leg in LEGS} == {6}
    assert mjm.nu == 12 and mjm.opt.impratio == 10.0
