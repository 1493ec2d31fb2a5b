"""Warp kernels of the velocity task (`tasks/velocity.py`) besides its terms: the command
timer (its draw is the library's `mdp.level_velocity_command`), the contact scan and the
reset. Its observations, rewards and terminations are library terms
(`unilab_envs.mdp`), compiled by the env (`unilab_envs.terms`).

Conventions: MuJoCo free joint: qpos[b:b+3] world position (m), qpos[b+3:b+7] quaternion
(w, x, y, z); qvel[v:v+3] world-frame linear velocity (m/s), qvel[v+3:v+6] body-frame angular
velocity (rad/s). Warp quaternions are (x, y, z, w).
"""

from __future__ import annotations

import warp as wp

from unilab_envs._core.rng import world_rng
from unilab_envs.mdp.commands import LevelVelocityCommandParams, level_velocity_command
from unilab_envs.terms.state import EnvState

STREAM_RESET = 100
STREAM_CMD_STEP = 101
STREAM_CMD_RESET = 102
STREAM_OBS_NOISE = 103  # the policy group's noise (the terms' observe kernel)


@wp.struct
class Params:
    """Scalars of one task instance: its commands and resets."""

    nj: int
    nfoot: int
    qb: int  # qpos address of the base free joint
    vb: int  # qvel address of the base free joint
    step_dt: float
    resample_s: float
    init_height: float
    reset_joint_noise: float  # rad
    reset_lin_vel: float  # m/s
    reset_ang_vel: float  # rad/s


@wp.func
def base_quat(qpos: wp.array2d(dtype=float), w: int, qb: int) -> wp.quat:
    return wp.quat(qpos[w, qb + 4], qpos[w, qb + 5], qpos[w, qb + 6], qpos[w, qb + 3])


@wp.kernel
def resample_commands(
    seed: int,
    counter: wp.array(dtype=wp.int32),
    p: Params,
    s: EnvState,
    cp: LevelVelocityCommandParams,
    time_left: wp.array(dtype=float),
):
    w = wp.tid()
    t = time_left[w] - p.step_dt
    if t <= 0.0:
        state = world_rng(seed, counter[0], w, STREAM_CMD_STEP)
        level_velocity_command.func(w, 0, True, state, s, cp)
        t = t + p.resample_s
    time_left[w] = t


@wp.kernel
def clear_contacts(
    nfoot: int, foot_contact: wp.array2d(dtype=float), bad_contact: wp.array(dtype=wp.int32)
):
    w = wp.tid()
    for f in range(nfoot):
        foot_contact[w, f] = 0.0
    bad_contact[w] = 0


@wp.kernel
def scan_contacts(
    nacon: wp.array(dtype=int),
    geom: wp.array(dtype=wp.vec2i),
    worldid: wp.array(dtype=int),
    ctype: wp.array(dtype=int),
    geom_ground: wp.array(dtype=wp.int32),
    geom_foot: wp.array(dtype=wp.int32),
    geom_term: wp.array(dtype=wp.int32),
    foot_contact: wp.array2d(dtype=float),
    bad_contact: wp.array(dtype=wp.int32),
):
    # One thread per contact slot; only robot-ground contacts of the solver count.
    i = wp.tid()
    if i >= nacon[0]:
        return
    if (ctype[i] & 1) == 0:
        return
    g = geom[i]
    if g[0] < 0 or g[1] < 0:
        return
    other = -1
    if geom_ground[g[0]] != 0:
        other = g[1]
    elif geom_ground[g[1]] != 0:
        other = g[0]
    if other < 0:
        return
    w = worldid[i]
    f = geom_foot[other]
    if f >= 0:
        foot_contact[w, f] = 1.0
    if geom_term[other] != 0:
        bad_contact[w] = 1


@wp.kernel
def reset_worlds(
    seed: int,
    counter: wp.array(dtype=wp.int32),
    mask: wp.array(dtype=wp.bool),
    p: Params,
    s: EnvState,
    cp: LevelVelocityCommandParams,
    qadr: wp.array(dtype=wp.int32),
    q0: wp.array(dtype=float),
    jnt_lo: wp.array(dtype=float),
    jnt_hi: wp.array(dtype=float),
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    time_left: wp.array(dtype=float),
    air_time: wp.array2d(dtype=float),
    foot_contact: wp.array2d(dtype=float),
    bad_contact: wp.array(dtype=wp.int32),
):
    w = wp.tid()
    if not mask[w]:
        return
    state = world_rng(seed, counter[0], w, STREAM_RESET)
    half_yaw = 0.5 * wp.randf(state, -wp.pi, wp.pi)
    qb = p.qb
    qpos[w, qb + 0] = 0.0
    qpos[w, qb + 1] = 0.0
    qpos[w, qb + 2] = p.init_height
    qpos[w, qb + 3] = wp.cos(half_yaw)
    qpos[w, qb + 4] = 0.0
    qpos[w, qb + 5] = 0.0
    qpos[w, qb + 6] = wp.sin(half_yaw)
    vb = p.vb
    for i in range(3):
        qvel[w, vb + i] = wp.randf(state, -p.reset_lin_vel, p.reset_lin_vel)
        qvel[w, vb + 3 + i] = wp.randf(state, -p.reset_ang_vel, p.reset_ang_vel)
    for j in range(p.nj):
        x = q0[j] + wp.randf(state, -p.reset_joint_noise, p.reset_joint_noise)
        qpos[w, qadr[j]] = wp.clamp(x, jnt_lo[j], jnt_hi[j])
    cstate = world_rng(seed, counter[0], w, STREAM_CMD_RESET)
    level_velocity_command.func(w, 0, True, cstate, s, cp)
    time_left[w] = p.resample_s
    for f in range(p.nfoot):
        air_time[w, f] = 0.0
        foot_contact[w, f] = 0.0
    bad_contact[w] = 0
