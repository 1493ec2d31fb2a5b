"""`Task.deployment_info()`: plain data, every field the task really has, none it lacks."""

from __future__ import annotations

import json

import mujoco
import numpy as np
import pytest

from unilab_envs import Task, TaskSpec, make_task
from unilab_envs.testing import mjlab_robot

SPEC_KEYS = {"task", "action_dim", "control_dt", "physics_dt", "decimation", "action_bound"}


def _check_plain(task: Task, info: dict) -> None:
    assert json.loads(json.dumps(info)) == info  # JSON-ready: no tuples, numpy or torch
    spec = task.spec
    assert info["task"] == spec.name and info["action_dim"] == spec.action_dim
    assert info["control_dt"] == pytest.approx(spec.step_dt)
    for group, terms in info.get("observations", {}).items():
        assert sum(t["size"] * t["history"] for t in terms) == spec.observation_dims[group]
    for key in ("joint_names", "action_scale", "action_offset", "default_joint_pos"):
        if key in info:
            assert len(info[key]) == info["action_dim"], key


def test_cartpole_has_its_motor_and_state_terms_only():
    task = make_task("cartpole-balance")
    info = task.deployment_info()
    _check_plain(task, info)
    assert info == {
        "task": "cartpole-balance",
        "action_dim": 1,
        "control_dt": pytest.approx(0.02),
        "physics_dt": 0.01,
        "decimation": 2,
        "action_bound": 1.0,
        "action_type": "joint_effort",
        "joint_names": ["slider"],
        "action_scale": [20.0],  # the motor's gear: N per unit action
        "action_offset": [0.0],
        "observations": {
            g: [
                {"name": n, "size": 1, "scale": 1.0, "history": 1}
                for n in (
                    "cart_pos",
                    "cos_pole_angle",
                    "sin_pole_angle",
                    "cart_vel",
                    "pole_ang_vel",
                )
            ]
            for g in ("policy", "critic")
        },
    }  # no default pose, gains or commands: cart-pole has none


def test_quadruped_velocity_reads_the_gains_of_its_mjcf():
    task = make_task("quadruped-velocity", curriculum=True)
    info = task.deployment_info()
    _check_plain(task, info)
    r = task.robot
    assert info["joint_names"] == list(r.joint_names)
    assert info["default_joint_pos"] == info["action_offset"] == list(r.default_pose)
    assert info["action_scale"] == [0.5] * 12
    assert info["action_type"] == "joint_position" and info["action_bound"] == 1.0
    # quadruped.xml: kp 40 (hips), 40 (thighs), 80 (knees), kv 1, 1, 2
    assert info["joint_stiffness"] == [40.0, 40.0, 80.0] * 4
    assert info["joint_damping"] == [1.0, 1.0, 2.0] * 4
    names = [t["name"] for t in info["observations"]["policy"]]
    assert names == ["base_ang_vel", "projected_gravity", "command", "joint_pos", "joint_vel",
                     "actions"]  # fmt: skip
    c = task.config
    assert info["command_names"] == ["lin_vel_x", "lin_vel_y", "ang_vel_z"]
    assert info["command_ranges"] == {
        "lin_vel_x": [-c.command_bounds_max[0], c.command_bounds_max[0]],
        "lin_vel_y": [-c.command_bounds_max[1], c.command_bounds_max[1]],
        "ang_vel_z": [-c.command_bounds_max[2], c.command_bounds_max[2]],
    }
    assert info["command_ranges_initial"]["lin_vel_x"] == [-1.0, 1.0]
    assert "heading_range" not in info  # it commands a yaw rate only
    flat = make_task("quadruped-velocity", curriculum=False).deployment_info()
    assert "command_ranges_initial" not in flat
    assert flat["command_ranges"] == info["command_ranges"]  # no curriculum: the full range


def test_humanoid_velocity_gains_follow_its_actuators():
    task = make_task("humanoid-velocity")
    info = task.deployment_info()
    _check_plain(task, info)
    mjm = task.build_model()
    for name, kp, kv in zip(
        info["joint_names"], info["joint_stiffness"], info["joint_damping"], strict=True
    ):
        jid = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_JOINT, name)
        (a,) = np.flatnonzero(mjm.actuator_trnid[:, 0] == jid)
        assert kp == mjm.actuator_gainprm[a, 0] and kv == -mjm.actuator_biasprm[a, 2]


def test_go1_velocity_flat_is_mjlabs_action_and_command():
    robot = mjlab_robot("go1")
    task = make_task("go1-velocity-flat")
    info = task.deployment_info()
    _check_plain(task, info)
    assert info["action_bound"] is None  # MJLab's policies act unbounded
    assert info["joint_stiffness"] == pytest.approx(list(robot.kp))
    assert info["joint_damping"] == pytest.approx(list(robot.kv))
    assert info["action_scale"] == list(robot.action_scale)
    assert [t["name"] for t in info["observations"]["policy"]][-1] == "command"
    assert info["command_ranges"] == {
        "lin_vel_x": [-2.0, 3.0], "lin_vel_y": [-1.0, 1.0], "ang_vel_z": [-0.7, 0.7]
    }  # fmt: skip
    assert info["command_ranges_initial"]["lin_vel_x"] == [-1.0, 1.0]
    assert info["heading_range"] == pytest.approx([-np.pi, np.pi])


def test_a_task_without_an_override_gives_what_its_spec_knows():
    class Custom(Task):
        spec = TaskSpec(
            name="custom",
            action_dim=2,
            observation_dims={"policy": 3},
            decimation=5,
            physics_dt=0.002,
            max_episode_steps=10,
            success_threshold=1.0,
            action_bound=None,
        )
        build_model = apply_action = evaluate = observe = reset_worlds = None

    task = Custom()
    info = task.deployment_info()
    _check_plain(task, info)
    assert set(info) == SPEC_KEYS
    assert info["control_dt"] == pytest.approx(0.01) and info["action_bound"] is None


def test_g1_velocity_flat_has_its_29_joints_and_mjlab_terms():
    robot = mjlab_robot("g1")
    task = make_task("g1-velocity-flat")
    info = task.deployment_info()
    _check_plain(task, info)
    assert info["joint_names"] == list(robot.joint_names) and info["action_dim"] == 29
    assert info["joint_stiffness"] == pytest.approx(list(robot.kp))
    assert info["action_bound"] is None and "heading_range" in info


def test_an_episode_longer_than_the_int32_step_counter_is_refused_naming_the_fix():
    fields = dict(
        name="long", action_dim=1, observation_dims={"policy": 1}, decimation=1,
        physics_dt=0.01, success_threshold=0.0,
    )  # fmt: skip
    assert TaskSpec(**fields, max_episode_steps=2**31 - 1).max_episode_steps == 2**31 - 1
    # an "infinite" episode such as MJLab's play configs use (1e9 s) would wrap the counter
    with pytest.raises(ValueError, match=r"max_episode_steps 50000000000 exceeds .*int32"):
        TaskSpec(**fields, max_episode_steps=50_000_000_000)
    mjlab_robot("go1")  # skips (or fails under UNILAB_REQUIRE_MJLAB=1) without the MJCF
    with pytest.raises(ValueError, match="episode_length_s"):
        make_task("go1-velocity-flat", episode_length_s=1e9)
