"""A floating-base robot's MuJoCo model for the tasks (`RobotConfig` -> `MjSpec`/`MjModel`) and
the deployment facts of a joint-position action around its default pose."""

from __future__ import annotations

import os
from typing import Any

import mujoco
import numpy as np

from unilab_envs._core.task import observation_term
from unilab_envs.tasks.robots import RobotConfig, apply_physics

__all__ = [
    "build_robot_model",
    "joint_position_info",
    "named_ids",
    "position_gains",
    "robot_spec",
]


def named_ids(mjm: mujoco.MjModel, obj: mujoco.mjtObj, names, what: str, path: str) -> list[int]:
    ids = [mujoco.mj_name2id(mjm, obj, n) for n in names]
    missing = [n for n, i in zip(names, ids, strict=True) if i < 0]
    if missing:
        raise ValueError(f"MJCF {path!r} lacks the {what} {missing} named in the robot config")
    return ids


def position_gains(
    mjm: mujoco.MjModel, joint_names: tuple[str, ...]
) -> tuple[list[float], list[float]] | None:
    """(kp, kv) per joint of the `position` actuators driving `joint_names` in `mjm`, or None
    when one of them is not a position actuator (then it has no PD gains to report)."""
    kp, kv = [], []
    for name in joint_names:
        jid = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_JOINT, name)
        acts = np.flatnonzero(
            (mjm.actuator_trntype == mujoco.mjtTrn.mjTRN_JOINT) & (mjm.actuator_trnid[:, 0] == jid)
        )
        if len(acts) != 1:
            return None
        a = int(acts[0])
        gain, bias = mjm.actuator_gainprm[a], mjm.actuator_biasprm[a]
        if (
            mjm.actuator_gaintype[a] != mujoco.mjtGain.mjGAIN_FIXED
            or mjm.actuator_biastype[a] != mujoco.mjtBias.mjBIAS_AFFINE
            or bias[1] != -gain[0]
        ):
            return None
        kp.append(float(gain[0]))
        kv.append(float(-bias[2]))
    return kp, kv


def joint_position_info(
    robot: RobotConfig, mjm: mujoco.MjModel, observations: dict[str, list[tuple[str, int]]]
) -> dict[str, Any]:
    """The deployment facts of a task whose action is a joint position target around the
    robot's default pose (`Task.deployment_info`): joints, default pose, scale and offset, the
    compiled model's PD gains (when its actuators are position actuators) and the observation
    terms, `observations` = {group: [(term, size), ...]} in the order the task writes them."""
    info: dict[str, Any] = {
        "action_type": "joint_position",
        "joint_names": list(robot.joint_names),
        "default_joint_pos": list(robot.default_pose),
        "action_scale": list(robot.per_joint("action_scale")),
        "action_offset": list(robot.default_pose),
    }
    gains = position_gains(mjm, robot.joint_names)
    if gains is not None:
        info["joint_stiffness"], info["joint_damping"] = gains
    info["observations"] = {
        group: [observation_term(name, size) for name, size in terms]
        for group, terms in observations.items()
    }
    return info


def build_robot_model(robot: RobotConfig) -> mujoco.MjModel:
    """Load `robot.mjcf`, check the named joints/bodies, add PD actuators, apply the robot's
    collision setup and solver options (`apply_physics`), add a floor if needed.

    Raises ValueError naming the missing joints or bodies, or a joint without an actuator.
    """
    return robot_spec(robot).compile()


def robot_spec(robot: RobotConfig, *, floor: bool = True) -> mujoco.MjSpec:
    """`build_robot_model` before compiling: the spec, for tasks that add to it (sensors).
    `floor=False`: no ground plane is added (the task adds its own ground, e.g. terrain)."""
    path = robot.mjcf
    if not os.path.isfile(path):
        raise ValueError(f"robot {robot.name!r}: MJCF file {path!r} does not exist")
    spec = mujoco.MjSpec.from_file(path)
    joints = {j.name for j in spec.joints}
    missing = [n for n in robot.joint_names if n not in joints]
    if missing:
        raise ValueError(f"MJCF {path!r} lacks the joints {missing} named in the robot config")
    bodies = {b.name for b in spec.bodies}
    wanted = [robot.base_body, *robot.foot_bodies, *(robot.termination_bodies or ())]
    missing = [n for n in dict.fromkeys(wanted) if n not in bodies]
    if missing:
        raise ValueError(f"MJCF {path!r} lacks the bodies {missing} named in the robot config")
    geoms = {g.name for g in spec.geoms}
    missing = [n for n in robot.foot_geoms or () if n not in geoms]
    if missing:
        raise ValueError(f"MJCF {path!r} lacks the geoms {missing} named in the robot config")
    if robot.kp is not None:
        _replace_actuators(spec, robot)
    apply_physics(spec, robot)
    if floor and not any(g.type == mujoco.mjtGeom.mjGEOM_PLANE for g in spec.worldbody.geoms):
        spec.worldbody.add_geom(
            name="unilab_floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05]
        )
    return spec


def _replace_actuators(spec: mujoco.MjSpec, robot: RobotConfig) -> None:
    names = set(robot.joint_names)
    for act in list(spec.actuators):
        if act.trntype == mujoco.mjtTrn.mjTRN_JOINT and act.target in names:
            spec.delete(act)
    kp, kv = robot.per_joint("kp"), robot.per_joint("kv") or (0.0,) * robot.num_joints
    effort, armature = robot.per_joint("effort_limit"), robot.per_joint("armature")
    damping, frictionloss = robot.per_joint("damping"), robot.per_joint("frictionloss")
    by_name = {j.name: j for j in spec.joints}
    for i, name in enumerate(robot.joint_names):
        act = spec.add_actuator(name=f"{name}_pd", target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.set_to_position(kp=kp[i], kv=kv[i])
        if effort is not None:
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
            act.forcerange = [-effort[i], effort[i]]
        if armature is not None:
            by_name[name].armature = armature[i]
        if damping is not None:
            by_name[name].damping[0] = damping[i]
        if frictionloss is not None:
            by_name[name].frictionloss = frictionloss[i]
