"""`EnvState`: what every term function reads, one warp struct of the env's per-world arrays.

A term is a `warp.func` whose first arguments are the world index `w` (an observation term
also gets the column `k` of its own output) and `s: EnvState`; MuJoCo Warp's data arrays hold
the state after the last physics substep (rewards and terminations) or after the step's
`forward` (observations of tasks with `forward_after_reset`). Joint quantities index the
robot's J driven joints in action order through `joint_qadr` / `joint_dadr`.
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np
import warp as wp

__all__ = ["EnvState", "robot_state"]


@wp.struct
class EnvState:
    """Per-world arrays ([N, ...], N worlds) and robot constants a term reads.

    Attributes:
        qpos, qvel: MuJoCo Warp's generalized positions [N, nq] and velocities [N, nv].
        xpos, xmat: body positions [N, nbody] (vec3, m) and orientations (mat33, world frame).
        cvel: body velocities [N, nbody] (spatial vectors: angular, then linear at the
            subtree's center of mass, world frame).
        subtree_com: subtree centers of mass [N, nbody] (vec3, m).
        site_xpos: site positions [N, nsite] (vec3, m).
        sensordata: sensor values [N, nsensordata].
        qacc: generalized accelerations [N, nv]; actuator_force: actuator forces [N, nu]
            (both as the last physics substep computed them).
        action, last_action: this step's and the previous step's actions [N, A].
        episode_length: control steps in the world's episode [N] (int32).
        command: the task's command [N, C] (C = 0 without one).
        terminated: this step's terminal flags [N] (bool): the termination terms (other than
            time-outs) run before the rewards, which may read it.
        joint_qadr, joint_dadr: qpos / qvel address of each driven joint [J] (int32).
        joint_actuator: the actuator driving each driven joint [J] (int32; -1: none).
        encoder_bias: each driven joint's simulated encoder offset [N, J] (rad; zeros
            without one): what a biased joint position observation adds.
        default_joint_pos: the robot's default pose [J] (rad or m).
        soft_joint_lo, soft_joint_hi: soft joint limits [J] (the range shrunk about its
            middle by the robot's soft limit factor; +-1e6 for a joint without limits).
        joint_lo, joint_hi: the joints' full range [J] (the model's; +-1e6 for a joint
            without limits).
        root_body: body id of the floating base; root_qadr, root_dadr: its free joint's
            qpos / qvel addresses.
        root_from_joint: 1: the base's pose and velocity are read from its free joint's
            qpos / qvel (the state the last substep integrated to); 0: from the kinematics
            (xpos, xmat, cvel), as MJLab reads them (`unilab_envs.mdp.frames`).
        step_dt, physics_dt: control and physics periods (s).
        max_episode_steps: control steps of an episode before the time limit.
        curriculum_level: the task curriculum's level [1] in [0, 1] (0 without one; the
            env sets it before each step and reset, `Task.curriculum`).
    """

    qpos: wp.array2d(dtype=float)
    qvel: wp.array2d(dtype=float)
    xpos: wp.array2d(dtype=wp.vec3)
    xmat: wp.array2d(dtype=wp.mat33)
    cvel: wp.array2d(dtype=wp.spatial_vector)
    subtree_com: wp.array2d(dtype=wp.vec3)
    site_xpos: wp.array2d(dtype=wp.vec3)
    sensordata: wp.array2d(dtype=float)
    qacc: wp.array2d(dtype=float)
    actuator_force: wp.array2d(dtype=float)
    action: wp.array2d(dtype=float)
    last_action: wp.array2d(dtype=float)
    episode_length: wp.array(dtype=wp.int32)
    command: wp.array2d(dtype=float)
    terminated: wp.array(dtype=wp.bool)
    joint_qadr: wp.array(dtype=wp.int32)
    joint_dadr: wp.array(dtype=wp.int32)
    joint_actuator: wp.array(dtype=wp.int32)
    encoder_bias: wp.array2d(dtype=float)
    default_joint_pos: wp.array(dtype=float)
    soft_joint_lo: wp.array(dtype=float)
    soft_joint_hi: wp.array(dtype=float)
    joint_lo: wp.array(dtype=float)
    joint_hi: wp.array(dtype=float)
    root_body: int
    root_qadr: int
    root_dadr: int
    root_from_joint: int
    step_dt: float
    physics_dt: float
    max_episode_steps: int
    curriculum_level: wp.array(dtype=float)


def robot_state(
    ctx: Any,
    joint_ids: list[int],
    default_pose: Any,
    soft_limit_factor: float,
    root_body: int,
    command: wp.array,
    encoder_bias: wp.array,
    root_from_joint: bool = False,
) -> EnvState:
    """The `EnvState` of a floating-base robot in `ctx` (`TaskContext`): its driven joints
    `joint_ids` (model joint ids, action order) with their default pose, soft limits (the
    range shrunk about its middle by `soft_limit_factor`; +-1e6 for a joint without limits),
    the base body (with a free joint), the task's command [N, C] and encoder bias [N, J].
    `root_from_joint`: the terms read the base's pose and velocity from its free joint, not
    from the kinematics (`EnvState`)."""
    mjm, dev, d, spec = ctx.mjm, ctx.device, ctx.data, ctx.spec
    free = [i for i in range(mjm.njnt) if mjm.jnt_bodyid[i] == root_body and mjm.jnt_type[i] == 0]
    if not free:
        name = mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_BODY, root_body)
        raise ValueError(f"the base body {name!r} has no free joint")
    rng = mjm.jnt_range[joint_ids].astype(np.float64)
    rng[~mjm.jnt_limited[joint_ids].astype(bool)] = (-1e6, 1e6)  # no limit: never outside
    mid, half = rng.mean(axis=1), 0.5 * (rng[:, 1] - rng[:, 0]) * soft_limit_factor

    def arr(values: Any, dtype: Any) -> wp.array:
        return wp.array(np.asarray(values), dtype=dtype, device=dev)

    s = EnvState()
    s.qpos, s.qvel, s.xpos, s.xmat, s.cvel = d.qpos, d.qvel, d.xpos, d.xmat, d.cvel
    s.subtree_com, s.site_xpos, s.sensordata = d.subtree_com, d.site_xpos, d.sensordata
    s.qacc, s.actuator_force = d.qacc, d.actuator_force
    s.terminated = wp.zeros(ctx.num_envs, dtype=wp.bool, device=dev)  # the env's, once bound
    s.action, s.last_action, s.episode_length = ctx.action, ctx.last_action, ctx.episode_length
    s.command, s.encoder_bias = command, encoder_bias
    s.joint_qadr = arr(mjm.jnt_qposadr[joint_ids].astype(np.int32), wp.int32)
    s.joint_dadr = arr(mjm.jnt_dofadr[joint_ids].astype(np.int32), wp.int32)
    s.joint_actuator = arr(_joint_actuators(mjm, joint_ids), wp.int32)
    s.default_joint_pos = arr(np.asarray(default_pose, np.float32), float)
    s.soft_joint_lo = arr((mid - half).astype(np.float32), float)
    s.soft_joint_hi = arr((mid + half).astype(np.float32), float)
    s.joint_lo = arr(rng[:, 0].astype(np.float32), float)
    s.joint_hi = arr(rng[:, 1].astype(np.float32), float)
    s.root_body = int(root_body)
    s.root_qadr, s.root_dadr = int(mjm.jnt_qposadr[free[0]]), int(mjm.jnt_dofadr[free[0]])
    s.root_from_joint = int(root_from_joint)
    s.step_dt, s.physics_dt = spec.step_dt, spec.physics_dt
    s.max_episode_steps = spec.max_episode_steps
    s.curriculum_level = ctx.curriculum_level
    return s


def _joint_actuators(mjm: mujoco.MjModel, joint_ids: list[int]) -> np.ndarray:
    """The first actuator that drives each joint directly, -1 where none does."""
    direct = mjm.actuator_trntype == mujoco.mjtTrn.mjTRN_JOINT
    out = [np.flatnonzero(direct & (mjm.actuator_trnid[:, 0] == j)) for j in joint_ids]
    return np.asarray([a[0] if len(a) else -1 for a in out], np.int32)
