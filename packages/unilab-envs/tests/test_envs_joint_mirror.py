"""Joint mirror maps from MJLab's Go1 and G1: the mirrored pose is the reflected pose."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from unilab_envs.joint_mirror import joint_mirror, mirror_name
from unilab_envs.testing import mjlab_robot


def test_mirror_name() -> None:
    assert mirror_name("FL_hip_joint") == "FR_hip_joint"
    assert mirror_name("RR_calf") == "RL_calf"
    assert mirror_name("left_hip_pitch_joint") == "right_hip_pitch_joint"
    assert mirror_name("waist_yaw_joint") == "waist_yaw_joint"


@pytest.mark.parametrize("robot", ["go1", "g1"])
def test_mirrored_pose_is_reflection(robot: str) -> None:
    cfg = mjlab_robot(robot)
    model = mujoco.MjModel.from_xml_path(str(cfg.mjcf))
    joints = list(cfg.joint_names)
    index, sign = joint_mirror(model, joints)
    assert sorted(index) == list(range(len(joints)))
    assert -1.0 in sign and 1.0 in sign

    q = np.random.default_rng(0).uniform(-0.5, 0.5, len(joints))
    q_m = np.asarray(sign) * q[list(index)]
    base = model.body(cfg.base_body).id

    def positions(values: np.ndarray) -> np.ndarray:
        data = mujoco.MjData(model)
        data.qpos[:] = model.qpos0
        data.qpos[model.jnt_qposadr[model.body_jntadr[base]] + 1] = 0.0  # base on y = 0
        for name, v in zip(joints, values, strict=True):
            data.qpos[model.jnt_qposadr[model.joint(name).id]] = v
        mujoco.mj_kinematics(model, data)
        return data.xpos.copy()

    orig, mirrored = positions(q), positions(q_m)
    for b in range(1, model.nbody):
        partner = model.body(mirror_name(model.body(b).name)).id
        expect = orig[partner] * np.array([1.0, -1.0, 1.0])
        # 0.1 mm: G1's MJCF gives left and right offsets that differ by a few micrometres;
        # a wrong sign moves a body by centimetres.
        np.testing.assert_allclose(mirrored[b], expect, atol=1e-4, err_msg=model.body(b).name)
