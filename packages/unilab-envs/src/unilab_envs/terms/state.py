"""`EnvState`: what every term function reads, one warp struct of the env's per-world arrays.

A term is a `warp.func` whose first arguments are the world index `w` (an observation term
also gets the column `k` of its own output) and `s: EnvState`; MuJoCo Warp's data arrays hold
the state after the last physics substep (rewards and terminations) or after the step's
`forward` (observations of tasks with `forward_after_reset`). Joint quantities index the
robot's J driven joints in action order through `joint_qadr` / `joint_dadr`.
"""

from __future__ import annotations

import warp as wp

__all__ = ["EnvState"]


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
        action, last_action: this step's and the previous step's actions [N, A].
        episode_length: control steps in the world's episode [N] (int32).
        command: the task's command [N, C] (C = 0 without one).
        joint_qadr, joint_dadr: qpos / qvel address of each driven joint [J] (int32).
        default_joint_pos: the robot's default pose [J] (rad or m).
        soft_joint_lo, soft_joint_hi: soft joint limits [J] (the range shrunk about its
            middle by the robot's soft limit factor).
        root_body: body id of the floating base; root_qadr, root_dadr: its free joint's
            qpos / qvel addresses.
        step_dt, physics_dt: control and physics periods (s).
        max_episode_steps: control steps of an episode before the time limit.
    """

    qpos: wp.array2d(dtype=float)
    qvel: wp.array2d(dtype=float)
    xpos: wp.array2d(dtype=wp.vec3)
    xmat: wp.array2d(dtype=wp.mat33)
    cvel: wp.array2d(dtype=wp.spatial_vector)
    subtree_com: wp.array2d(dtype=wp.vec3)
    site_xpos: wp.array2d(dtype=wp.vec3)
    sensordata: wp.array2d(dtype=float)
    action: wp.array2d(dtype=float)
    last_action: wp.array2d(dtype=float)
    episode_length: wp.array(dtype=wp.int32)
    command: wp.array2d(dtype=float)
    joint_qadr: wp.array(dtype=wp.int32)
    joint_dadr: wp.array(dtype=wp.int32)
    default_joint_pos: wp.array(dtype=float)
    soft_joint_lo: wp.array(dtype=float)
    soft_joint_hi: wp.array(dtype=float)
    root_body: int
    root_qadr: int
    root_dadr: int
    step_dt: float
    physics_dt: float
    max_episode_steps: int
