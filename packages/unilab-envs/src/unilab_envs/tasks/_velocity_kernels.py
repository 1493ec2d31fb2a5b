"""Warp kernels of the velocity task (`tasks/velocity.py`); all per-step work lives here.

Conventions: MuJoCo free joint: qpos[b:b+3] world position (m), qpos[b+3:b+7] quaternion
(w, x, y, z); qvel[v:v+3] world-frame linear velocity (m/s), qvel[v+3:v+6] body-frame angular
velocity (rad/s). Warp quaternions are (x, y, z, w).
"""

from __future__ import annotations

import warp as wp

from unilab_envs._core.rng import world_rng

STREAM_RESET = 100
STREAM_CMD_STEP = 101
STREAM_CMD_RESET = 102
STREAM_OBS_NOISE = 103

# Order of the log terms (rows of `log`); each is its weighted, step_dt-scaled reward share.
LOG_TERMS = (
    "track_lin_vel",
    "track_ang_vel",
    "lin_vel_z",
    "ang_vel_xy",
    "orientation",
    "torques",
    "joint_acc",
    "action_rate",
    "joint_limits",
    "feet_air_time",
    "joint_deviation",
    "termination",
)


@wp.struct
class Params:
    """Scalars of one task instance (weights already include nothing but the user's value)."""

    nj: int
    nfoot: int
    qb: int  # qpos address of the base free joint
    vb: int  # qvel address of the base free joint
    step_dt: float
    w_lin: float
    w_ang: float
    inv_var_lin: float  # 1 / std^2 of the tracking kernels
    inv_var_ang: float
    w_lin_z: float
    w_ang_xy: float
    w_orient: float
    w_torque: float
    w_acc: float
    w_rate: float
    w_limits: float
    w_air: float
    air_threshold: float  # s
    air_min_command: float  # m/s: no air-time reward below this planar command
    w_dev: float
    w_term: float
    min_height: float
    cos_max_tilt: float
    resample_s: float
    standing_prob: float
    cmd_lo: wp.vec3  # |command| bound per axis (vx, vy, yaw rate) at curriculum level 0
    cmd_hi: wp.vec3  # ... at curriculum level 1
    init_height: float
    reset_joint_noise: float  # rad
    reset_lin_vel: float  # m/s
    reset_ang_vel: float  # rad/s
    noise: int  # 1: add uniform noise to the policy observations
    noise_ang_vel: float
    noise_gravity: float
    noise_joint_pos: float
    noise_joint_vel: float


@wp.func
def base_quat(qpos: wp.array2d(dtype=float), w: int, qb: int) -> wp.quat:
    return wp.quat(qpos[w, qb + 4], qpos[w, qb + 5], qpos[w, qb + 6], qpos[w, qb + 3])


@wp.func
def draw_command(state: wp.uint32, p: Params, level: float) -> wp.vec3:
    bound = p.cmd_lo + level * (p.cmd_hi - p.cmd_lo)
    cmd = wp.vec3(
        wp.randf(state, -bound[0], bound[0]),
        wp.randf(state, -bound[1], bound[1]),
        wp.randf(state, -bound[2], bound[2]),
    )
    if wp.randf(state) < p.standing_prob:
        cmd = wp.vec3(0.0, 0.0, 0.0)
    return cmd


@wp.kernel
def apply_action(
    action: wp.array2d(dtype=float),
    act_id: wp.array(dtype=wp.int32),
    q0: wp.array(dtype=float),
    scale: wp.array(dtype=float),
    ctrl: wp.array2d(dtype=float),
):
    w, j = wp.tid()
    ctrl[w, act_id[j]] = q0[j] + scale[j] * action[w, j]


@wp.kernel
def resample_commands(
    seed: int,
    counter: wp.array(dtype=wp.int32),
    level: wp.array(dtype=float),
    p: Params,
    time_left: wp.array(dtype=float),
    cmd: wp.array(dtype=wp.vec3),
):
    w = wp.tid()
    t = time_left[w] - p.step_dt
    if t <= 0.0:
        state = world_rng(seed, counter[0], w, STREAM_CMD_STEP)
        cmd[w] = draw_command(state, p, level[0])
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
def evaluate(
    p: Params,
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    qacc: wp.array2d(dtype=float),
    act_force: wp.array2d(dtype=float),
    action: wp.array2d(dtype=float),
    last_action: wp.array2d(dtype=float),
    cmd: wp.array(dtype=wp.vec3),
    foot_contact: wp.array2d(dtype=float),
    bad_contact: wp.array(dtype=wp.int32),
    qadr: wp.array(dtype=wp.int32),
    dadr: wp.array(dtype=wp.int32),
    act_id: wp.array(dtype=wp.int32),
    q0: wp.array(dtype=float),
    soft_lo: wp.array(dtype=float),
    soft_hi: wp.array(dtype=float),
    dev_weight: wp.array(dtype=float),
    air_time: wp.array2d(dtype=float),
    reward: wp.array(dtype=float),
    terminated: wp.array(dtype=wp.bool),
    log: wp.array2d(dtype=float),
):
    w = wp.tid()
    q = base_quat(qpos, w, p.qb)
    v = wp.quat_rotate_inv(q, wp.vec3(qvel[w, p.vb], qvel[w, p.vb + 1], qvel[w, p.vb + 2]))
    om = wp.vec3(qvel[w, p.vb + 3], qvel[w, p.vb + 4], qvel[w, p.vb + 5])
    grav = wp.quat_rotate_inv(q, wp.vec3(0.0, 0.0, -1.0))
    c = cmd[w]

    ex = c[0] - v[0]
    ey = c[1] - v[1]
    ez = c[2] - om[2]
    track_lin = wp.exp(-(ex * ex + ey * ey) * p.inv_var_lin)
    track_ang = wp.exp(-(ez * ez) * p.inv_var_ang)

    torques = float(0.0)  # noqa: UP018 (warp: mutable loop variable)
    acc = float(0.0)  # noqa: UP018 (warp: mutable loop variable)
    rate = float(0.0)  # noqa: UP018 (warp: mutable loop variable)
    limits = float(0.0)  # noqa: UP018 (warp: mutable loop variable)
    dev = float(0.0)  # noqa: UP018 (warp: mutable loop variable)
    for j in range(p.nj):
        tau = act_force[w, act_id[j]]
        torques += tau * tau
        a = qacc[w, dadr[j]]
        acc += a * a
        da = action[w, j] - last_action[w, j]
        rate += da * da
        qj = qpos[w, qadr[j]]
        limits += wp.max(soft_lo[j] - qj, 0.0) + wp.max(qj - soft_hi[j], 0.0)
        dev += dev_weight[j] * wp.abs(qj - q0[j])

    air = float(0.0)  # noqa: UP018 (warp: mutable loop variable)
    for f in range(p.nfoot):
        t_air = air_time[w, f]
        if foot_contact[w, f] > 0.0:
            if t_air > 0.0:
                air += t_air - p.air_threshold
            air_time[w, f] = 0.0
        else:
            air_time[w, f] = t_air + p.step_dt
    if c[0] * c[0] + c[1] * c[1] < p.air_min_command * p.air_min_command:
        air = 0.0

    term = bad_contact[w] != 0 or grav[2] > -p.cos_max_tilt or qpos[w, p.qb + 2] < p.min_height
    dt = p.step_dt
    log[0, w] = p.w_lin * track_lin * dt
    log[1, w] = p.w_ang * track_ang * dt
    log[2, w] = p.w_lin_z * v[2] * v[2] * dt
    log[3, w] = p.w_ang_xy * (om[0] * om[0] + om[1] * om[1]) * dt
    log[4, w] = p.w_orient * (grav[0] * grav[0] + grav[1] * grav[1]) * dt
    log[5, w] = p.w_torque * torques * dt
    log[6, w] = p.w_acc * acc * dt
    log[7, w] = p.w_rate * rate * dt
    log[8, w] = p.w_limits * limits * dt
    log[9, w] = p.w_air * air * dt
    log[10, w] = p.w_dev * dev * dt
    log[11, w] = wp.where(term, p.w_term * dt, 0.0)
    total = float(0.0)  # noqa: UP018 (warp: mutable loop variable)
    for i in range(12):
        total += log[i, w]
    reward[w] = total
    terminated[w] = term


@wp.kernel
def observe(
    seed: int,
    counter: wp.array(dtype=wp.int32),
    p: Params,
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    action: wp.array2d(dtype=float),
    episode_length: wp.array(dtype=wp.int32),
    cmd: wp.array(dtype=wp.vec3),
    foot_contact: wp.array2d(dtype=float),
    qadr: wp.array(dtype=wp.int32),
    dadr: wp.array(dtype=wp.int32),
    q0: wp.array(dtype=float),
    policy: wp.array2d(dtype=float),
    critic: wp.array2d(dtype=float),
):
    # policy: [ang_vel_b 3, gravity_b 3, command 3, q - q0 J, qd J, last action J]
    # critic: [the same without noise, lin_vel_b 3, base height 1, foot contact F]
    # One thread per (world, critic column): neighbouring threads write neighbouring columns
    # of one row, so the stores coalesce (one thread per world wrote ~150 strided values).
    # Each policy column draws its noise from its own counter-based stream.
    w, k = wp.tid()
    nj = p.nj
    base = 9 + 3 * nj
    value = float(0.0)  # noqa: UP018 (warp: mutable variable)
    noise = float(0.0)  # noqa: UP018
    if k < 3:
        value = qvel[w, p.vb + 3 + k]
        noise = p.noise_ang_vel
    elif k < 6:
        grav = wp.quat_rotate_inv(base_quat(qpos, w, p.qb), wp.vec3(0.0, 0.0, -1.0))
        value = grav[k - 3]
        noise = p.noise_gravity
    elif k < 9:
        value = cmd[w][k - 6]
    elif k < 9 + nj:
        j = k - 9
        value = qpos[w, qadr[j]] - q0[j]
        noise = p.noise_joint_pos
    elif k < 9 + 2 * nj:
        value = qvel[w, dadr[k - 9 - nj]]
        noise = p.noise_joint_vel
    elif k < base:
        value = wp.where(episode_length[w] == 0, 0.0, action[w, k - 9 - 2 * nj])
    elif k < base + 3:
        q = base_quat(qpos, w, p.qb)
        v = wp.quat_rotate_inv(q, wp.vec3(qvel[w, p.vb], qvel[w, p.vb + 1], qvel[w, p.vb + 2]))
        value = v[k - base]
    elif k == base + 3:
        value = qpos[w, p.qb + 2]
    else:
        value = foot_contact[w, k - base - 4]
    critic[w, k] = value
    if k < base:
        if p.noise != 0 and noise > 0.0:
            state = world_rng(seed, counter[0], w * base + k, STREAM_OBS_NOISE)
            value = value + wp.randf(state, -noise, noise)
        policy[w, k] = value


@wp.kernel
def reset_worlds(
    seed: int,
    counter: wp.array(dtype=wp.int32),
    mask: wp.array(dtype=wp.bool),
    level: wp.array(dtype=float),
    p: Params,
    qadr: wp.array(dtype=wp.int32),
    q0: wp.array(dtype=float),
    jnt_lo: wp.array(dtype=float),
    jnt_hi: wp.array(dtype=float),
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    cmd: wp.array(dtype=wp.vec3),
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
    cmd[w] = draw_command(cstate, p, level[0])
    time_left[w] = p.resample_s
    for f in range(p.nfoot):
        air_time[w, f] = 0.0
        foot_contact[w, f] = 0.0
    bad_contact[w] = 0
