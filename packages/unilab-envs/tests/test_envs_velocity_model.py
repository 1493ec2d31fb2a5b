"""Locomotion MJCFs and robot configs, checked with plain `mujoco` on CPU (no warp)."""

from __future__ import annotations

import re
from pathlib import Path

import mujoco
import numpy as np
import pytest

from unilab_envs.tasks.robots import (
    HUMANOID_JOINTS,
    QUADRUPED_JOINTS,
    RobotConfig,
    humanoid,
    quadruped,
)
from unilab_envs.tasks.velocity import build_robot_model


def _stand(robot: RobotConfig, seconds: float):
    """Start in the default pose at init_height, hold it with the PD actuators."""
    mjm = build_robot_model(robot)
    d = mujoco.MjData(mjm)
    jids = [mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_JOINT, n) for n in robot.joint_names]
    d.qpos[2] = robot.init_height
    for jid, q in zip(jids, robot.default_pose, strict=True):
        d.qpos[mjm.jnt_qposadr[jid]] = q
    acts = [int(np.flatnonzero(mjm.actuator_trnid[:, 0] == jid)[0]) for jid in jids]
    d.ctrl[acts] = robot.default_pose
    heights = []
    for _ in range(round(seconds / mjm.opt.timestep)):
        mujoco.mj_step(mjm, d)
        heights.append(d.qpos[2])
    return mjm, d, np.asarray(heights)


def _contact_bodies(mjm, d) -> set[str]:
    out = set()
    for i in range(d.ncon):
        g0, g1 = d.contact[i].geom
        for a, b in ((g0, g1), (g1, g0)):
            if mjm.geom_bodyid[a] == 0:
                out.add(mjm.body(mjm.geom_bodyid[b]).name)
    return out


def test_quadruped_model_is_go1_sized_with_pd_actuators():
    mjm = build_robot_model(quadruped())
    assert mjm.nq == 19 and mjm.nv == 18 and mjm.nu == 12
    assert 11.0 < mjm.body_subtreemass[1] < 14.0
    assert [mjm.joint(i).name for i in range(1, mjm.njnt)] == list(QUADRUPED_JOINTS)
    # position actuators: gain kp, bias (0, -kp, -kv)
    kp = mjm.actuator_gainprm[:, 0]
    np.testing.assert_allclose(kp, [40, 40, 80] * 4)
    np.testing.assert_allclose(mjm.actuator_biasprm[:, 1], -kp)
    np.testing.assert_allclose(mjm.actuator_biasprm[:, 2], [-1.0, -1.0, -2.0] * 4)
    np.testing.assert_allclose(mjm.actuator_forcerange[:, 1], [23.7, 23.7, 35.55] * 4)
    assert mjm.opt.timestep == 0.005


def test_quadruped_stands_in_default_pose():
    robot = quadruped()
    mjm, d, h = _stand(robot, 3.0)
    assert 0.24 < h[-1] < 0.29  # Go1-like standing height (m)
    assert np.ptp(h[-200:]) < 1e-3  # settled: last second moves < 1 mm
    assert _contact_bodies(mjm, d) == set(robot.foot_bodies)  # only the feet touch the floor
    up = d.xmat[1].reshape(3, 3)[:, 2]
    assert up[2] > 0.99  # trunk stays level


def test_humanoid_model_has_21_joints():
    mjm = build_robot_model(humanoid())
    assert mjm.nu == 21 and mjm.nv == 27
    assert 30.0 < mjm.body_subtreemass[1] < 36.0
    assert [mjm.joint(i).name for i in range(1, mjm.njnt)] == list(HUMANOID_JOINTS)
    assert [mjm.actuator(i).name + "_joint" for i in range(mjm.nu)] == list(HUMANOID_JOINTS)


def test_humanoid_stands_in_default_pose():
    robot = humanoid()
    mjm, d, h = _stand(robot, 4.0)
    assert 0.70 < h[-1] < 0.76
    assert np.ptp(h[-200:]) < 2e-3
    assert _contact_bodies(mjm, d) == {"left_foot", "right_foot"}
    assert d.xmat[1].reshape(3, 3)[2, 2] > 0.99


def _strip_actuators(src: str, dst) -> None:
    xml = Path(src).read_text()
    xml = re.sub(r"<actuator>.*?</actuator>", "", xml, flags=re.S)
    xml = re.sub(r"<keyframe>.*?</keyframe>", "", xml, flags=re.S)
    xml = re.sub(r'<geom name="floor"[^>]*/>', "", xml, flags=re.S)
    dst.write_text(xml)


def test_custom_mjcf_gets_pd_actuators_and_floor(tmp_path):
    path = tmp_path / "bare.xml"
    _strip_actuators(quadruped().mjcf, path)
    robot = RobotConfig(
        name="bare",
        mjcf=path,
        joint_names=QUADRUPED_JOINTS,
        default_pose=quadruped().default_pose,
        action_scale=0.25,
        base_body="trunk",
        foot_bodies=("FL_calf", "FR_calf", "RL_calf", "RR_calf"),
        init_height=0.29,
        kp=30.0,
        kv=(0.5,) * 12,
        effort_limit=20.0,
        armature=0.02,
    )
    mjm = build_robot_model(robot)
    assert mjm.nu == 12
    np.testing.assert_allclose(mjm.actuator_gainprm[:, 0], 30.0)
    np.testing.assert_allclose(mjm.actuator_biasprm[:, 1:3], [[-30.0, -0.5]] * 12)
    np.testing.assert_allclose(mjm.actuator_forcerange, [[-20.0, 20.0]] * 12)
    np.testing.assert_allclose(mjm.dof_armature[6:], 0.02)
    assert [mjm.actuator_trnid[a, 0] for a in range(12)] == list(range(1, 13))
    planes = [g for g in range(mjm.ngeom) if mjm.geom_type[g] == mujoco.mjtGeom.mjGEOM_PLANE]
    assert len(planes) == 1 and mjm.geom_bodyid[planes[0]] == 0


def test_missing_joints_are_named(tmp_path):
    path = tmp_path / "renamed.xml"
    path.write_text(Path(quadruped().mjcf).read_text().replace("FR_calf_joint", "FR_knee"))
    import attrs

    robot = attrs.evolve(quadruped(), mjcf=path)
    with pytest.raises(ValueError, match=r"lacks the joints \['FR_calf_joint'\]"):
        build_robot_model(robot)
    with pytest.raises(ValueError, match=r"lacks the bodies \['paw'\]"):
        build_robot_model(attrs.evolve(quadruped(), foot_bodies=("paw",)))
    with pytest.raises(ValueError, match="does not exist"):
        build_robot_model(attrs.evolve(quadruped(), mjcf=tmp_path / "nope.xml"))


def test_robot_config_validates_lengths():
    base = dict(name="r", mjcf="x.xml", base_body="b", foot_bodies=("f",), init_height=0.3)
    with pytest.raises(ValueError, match="default_pose has 1 values for 2 joints"):
        RobotConfig(joint_names=("a", "b"), default_pose=(0.0,), action_scale=1.0, **base)
    with pytest.raises(ValueError, match="kp has 3 values for 2 joints"):
        RobotConfig(
            joint_names=("a", "b"), default_pose=(0, 0), action_scale=1.0, kp=(1, 2, 3), **base
        )
    with pytest.raises(ValueError, match="kv/effort_limit/armature need kp"):
        RobotConfig(joint_names=("a",), default_pose=(0,), action_scale=1.0, kv=1.0, **base)
    with pytest.raises(TypeError, match="sequence of names"):
        RobotConfig(joint_names="a", default_pose=(0,), action_scale=1.0, **base)
    r = RobotConfig(joint_names=("a", "b"), default_pose=(0, 1), action_scale=0.5, **base)
    assert r.per_joint("action_scale") == (0.5, 0.5) and r.per_joint("kp") is None
