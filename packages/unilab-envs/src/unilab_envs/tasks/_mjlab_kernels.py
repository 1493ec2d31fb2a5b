"""Warp kernels of the MJLab velocity tasks (`tasks/mjlab_velocity.py`) besides their terms
(`tasks/mjlab_terms.py`): the action, the contact sensors' per-substep state, the command,
the reset and interval events and the startup draws.

The terms read the state as MJLab 1.6.0's `ManagerBasedRlEnv.step` does: rewards and
terminations the derived fields left by the last `mujoco_warp.step` (`xmat`, `xpos`, `cvel`,
`subtree_com`, `site_xpos`: one substep stale, as in MJLab, which calls `forward` only before
observing); observations after the env's `forward` (the task sets `forward_after_reset`).
Foot heights (MJLab's terrain-height raycast, `clamp(site_z, 0, max_distance)` on a plane) are
sampled at observation time and used by the next step's rewards, as MJLab's sensor cache is.
MuJoCo free joint: qpos[b:b+3] position, qpos[b+3:b+7] quaternion (w, x, y, z); qvel[v:v+3]
world-frame linear velocity of the body origin, qvel[v+3:v+6] body-frame angular velocity.
"""

from __future__ import annotations

import warp as wp

from unilab_envs._core.rng import world_rng
from unilab_envs.mdp.frames import link_lin_vel_w
from unilab_envs.tasks._velocity_kernels import base_quat

STREAM_RESET = 110
STREAM_CMD = 111
STREAM_PUSH = 112
STREAM_STARTUP = 114

FLAG_HEADING = 1
FLAG_STANDING = 2
FLAG_FORWARD = 4


@wp.struct
class Params:
    nj: int
    nfoot: int
    qb: int
    vb: int
    root: int  # body id of the base
    step_dt: float
    physics_dt: float
    # command
    resample_lo: float
    resample_hi: float
    rel_standing: float
    rel_heading: float
    rel_forward: float
    forward_min: float
    heading_stiffness: float
    heading_command: int
    lin_vel_y: wp.vec2
    heading_range: wp.vec2
    nstage: int
    # events
    pose_x: wp.vec2
    pose_y: wp.vec2
    pose_z: wp.vec2
    pose_yaw: wp.vec2
    init_z: float
    push_lo: float
    push_hi: float
    push_lin: wp.vec3  # +- range per axis (m/s), world frame
    push_ang: wp.vec3  # +- range per axis (rad/s), world frame
    # sensordata address of the self-collision contact force (-1: none)
    self_force_adr: int


@wp.func
def stage_ranges(
    p: Params, step: int, stage_step: wp.array(dtype=wp.int32), stage: wp.array(dtype=wp.vec4)
) -> wp.vec4:
    # (x_lo, x_hi, yaw_lo, yaw_hi) of the last stage whose step is reached (commands_vel).
    r = stage[0]
    for i in range(p.nstage):
        if step >= stage_step[i]:
            r = stage[i]
    return r


@wp.func
def wrap_to_pi(a: float) -> float:
    return wp.atan2(wp.sin(a), wp.cos(a))


@wp.kernel
def apply_action(
    action: wp.array2d(dtype=float),
    act_id: wp.array(dtype=wp.int32),
    q0: wp.array(dtype=float),
    scale: wp.array(dtype=float),
    bias: wp.array2d(dtype=float),
    ctrl: wp.array2d(dtype=float),
):
    # JointPositionAction: target = default + scale * action - encoder bias.
    w, j = wp.tid()
    ctrl[w, act_id[j]] = q0[j] + scale[j] * action[w, j] - bias[w, j]


@wp.kernel
def track_contacts(
    p: Params,
    sensordata: wp.array2d(dtype=float),
    found_adr: wp.array(dtype=wp.int32),
    touch_adr: wp.array(dtype=wp.int32),
    air: wp.array2d(dtype=float),
    contact: wp.array2d(dtype=float),
    self_force: wp.array2d(dtype=float),
    touch: wp.array3d(dtype=float),
):
    # Once per physics substep: ContactSensor._update_air_time_tracking of the feet, and the
    # force histories (`_update_history`, newest first; kept as |f|) of the self-collision
    # sensor and of the ground-touch sensors (one per geom).
    w = wp.tid()
    for f in range(p.nfoot):
        if sensordata[w, found_adr[f]] > 0.0:
            air[w, f] = 0.0
            contact[w, f] = contact[w, f] + p.physics_dt
        else:
            air[w, f] = air[w, f] + p.physics_dt
            contact[w, f] = 0.0
    nh = self_force.shape[1]
    if p.self_force_adr >= 0 and nh > 0:
        for i in range(nh - 1):
            self_force[w, nh - 1 - i] = self_force[w, nh - 2 - i]
        a = p.self_force_adr
        fv = wp.vec3(sensordata[w, a], sensordata[w, a + 1], sensordata[w, a + 2])
        self_force[w, 0] = wp.length(fv)
    th = touch.shape[2]
    for g in range(touch_adr.shape[0]):
        for i in range(th - 1):
            touch[w, g, th - 1 - i] = touch[w, g, th - 2 - i]
        a = touch_adr[g]
        fv = wp.vec3(sensordata[w, a], sensordata[w, a + 1], sensordata[w, a + 2])
        touch[w, g, 0] = wp.length(fv)


@wp.kernel
def count_step(step: wp.array(dtype=wp.int32)):
    step[0] = step[0] + 1


@wp.func
def draw_command(
    w: int,
    seed: int,
    counter: int,
    p: Params,
    r: wp.vec4,
    cmd: wp.array(dtype=wp.vec3),
    heading_target: wp.array(dtype=float),
    flags: wp.array(dtype=wp.int32),
    time_left: wp.array(dtype=float),
):
    # CommandTerm._resample + UniformVelocityCommand._resample_command.
    state = world_rng(seed, counter, w, STREAM_CMD)
    time_left[w] = wp.randf(state, p.resample_lo, p.resample_hi)
    c = wp.vec3(
        wp.randf(state, r[0], r[1]),
        wp.randf(state, p.lin_vel_y[0], p.lin_vel_y[1]),
        wp.randf(state, r[2], r[3]),
    )
    fl = 0
    if p.heading_command != 0:
        heading_target[w] = wp.randf(state, p.heading_range[0], p.heading_range[1])
        if wp.randf(state) <= p.rel_heading:
            fl = fl | FLAG_HEADING
    if wp.randf(state) <= p.rel_standing:
        fl = fl | FLAG_STANDING
    if wp.randf(state) <= p.rel_forward:
        fl = fl | FLAG_FORWARD
        c = wp.vec3(wp.max(wp.abs(c[0]), p.forward_min), 0.0, 0.0)
    cmd[w] = c
    flags[w] = fl


@wp.kernel
def reset_and_command(
    seed: int,
    counter: wp.array(dtype=wp.int32),
    mask: wp.array(dtype=wp.bool),
    step: wp.array(dtype=wp.int32),
    p: Params,
    stage_step: wp.array(dtype=wp.int32),
    stage: wp.array(dtype=wp.vec4),
    qadr: wp.array(dtype=wp.int32),
    q0: wp.array(dtype=float),
    soft_lo: wp.array(dtype=float),
    soft_hi: wp.array(dtype=float),
    xpos: wp.array2d(dtype=wp.vec3),
    xmat: wp.array2d(dtype=wp.mat33),
    cvel: wp.array2d(dtype=wp.spatial_vector),
    subtree_com: wp.array2d(dtype=wp.vec3),
    origin: wp.array(dtype=wp.vec3),
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    push_time: wp.array(dtype=float),
    air: wp.array2d(dtype=float),
    contact: wp.array2d(dtype=float),
    self_force: wp.array2d(dtype=float),
    touch: wp.array3d(dtype=float),
    cmd: wp.array(dtype=wp.vec3),
    heading_target: wp.array(dtype=float),
    flags: wp.array(dtype=wp.int32),
    time_left: wp.array(dtype=float),
):
    # The end of MJLab's step for one world, before its forward: the interval push (on
    # worlds that are not reset: a reset world's push would be overwritten), the reset events
    # of reset worlds, then the command update (timers, resampling, heading control and
    # standing) that MJLab runs right after its forward (it reads only the base heading,
    # taken here from the normalized qpos quaternion, equal to forward's xquat).
    w = wp.tid()
    n = counter[0]
    r = stage_ranges(p, step[0], stage_step, stage)
    qb, vb = p.qb, p.vb
    dt = p.step_dt
    if mask[w]:
        dt = 0.0
        state = world_rng(seed, n, w, STREAM_RESET)
        yaw = wp.randf(state, p.pose_yaw[0], p.pose_yaw[1])
        o = wp.vec3()  # the world's terrain origin (rough; flat: 0)
        if origin.shape[0] > 0:
            o = origin[w]
        qpos[w, qb + 0] = o[0] + wp.randf(state, p.pose_x[0], p.pose_x[1])
        qpos[w, qb + 1] = o[1] + wp.randf(state, p.pose_y[0], p.pose_y[1])
        qpos[w, qb + 2] = o[2] + p.init_z + wp.randf(state, p.pose_z[0], p.pose_z[1])
        qpos[w, qb + 3] = wp.cos(0.5 * yaw)
        qpos[w, qb + 4] = 0.0
        qpos[w, qb + 5] = 0.0
        qpos[w, qb + 6] = wp.sin(0.5 * yaw)
        for i in range(6):
            qvel[w, vb + i] = 0.0
        for j in range(p.nj):
            qpos[w, qadr[j]] = wp.clamp(q0[j], soft_lo[j], soft_hi[j])
        for f in range(p.nfoot):
            air[w, f] = 0.0
            contact[w, f] = 0.0
        for i in range(self_force.shape[1]):
            self_force[w, i] = 0.0  # ContactSensor.reset clears the history
        for g in range(touch.shape[1]):
            for i in range(touch.shape[2]):
                touch[w, g, i] = 0.0
        push_time[w] = wp.randf(state, p.push_lo, p.push_hi)
        draw_command(w, seed, n, p, r, cmd, heading_target, flags, time_left)
    else:
        t = push_time[w] - dt
        if t < 1.0e-6:
            state = world_rng(seed, n, w, STREAM_PUSH)
            t = wp.randf(state, p.push_lo, p.push_hi)
            rb = p.root
            v = link_lin_vel_w(cvel[w, rb], xpos[w, rb], subtree_com[w, rb])
            om = wp.spatial_top(cvel[w, rb])
            for i in range(3):
                v[i] = v[i] + wp.randf(state, -p.push_lin[i], p.push_lin[i])
            for i in range(3):
                om[i] = om[i] + wp.randf(state, -p.push_ang[i], p.push_ang[i])
            q = wp.normalize(base_quat(qpos, w, qb))
            om_b = wp.quat_rotate_inv(q, om)
            for i in range(3):
                qvel[w, vb + i] = v[i]
                qvel[w, vb + 3 + i] = om_b[i]
        push_time[w] = t
        left = time_left[w] - dt
        time_left[w] = left
        if left <= 0.0:
            draw_command(w, seed, n, p, r, cmd, heading_target, flags, time_left)
    fl = flags[w]
    if (fl & FLAG_HEADING) != 0:
        q = wp.normalize(base_quat(qpos, w, qb))
        fwd = wp.quat_rotate(q, wp.vec3(1.0, 0.0, 0.0))
        err = wrap_to_pi(heading_target[w] - wp.atan2(fwd[1], fwd[0]))
        c = cmd[w]
        cmd[w] = wp.vec3(c[0], c[1], wp.clamp(p.heading_stiffness * err, r[2], r[3]))
    if (fl & FLAG_STANDING) != 0:
        cmd[w] = wp.vec3(0.0, 0.0, 0.0)


@wp.kernel
def startup_draws(
    seed: int,
    p: Params,
    foot_geoms: wp.array(dtype=wp.int32),
    friction_lo: wp.vec3,
    friction_hi: wp.vec3,
    friction_log: wp.vec3i,
    friction_axes: wp.vec3i,
    com_body: int,
    com_lo: wp.vec3,
    com_hi: wp.vec3,
    bias_lo: float,
    bias_hi: float,
    nominal_ipos: wp.vec3,
    geom_friction: wp.array2d(dtype=wp.vec3),
    body_ipos: wp.array2d(dtype=wp.vec3),
    bias: wp.array2d(dtype=float),
):
    # MJLab's startup events: foot friction on the drawn axes ("abs", one draw shared by the
    # foot geoms; uniform or log-uniform per axis; the other axes keep the geom's value), base
    # COM offset ("add"), encoder bias per joint.
    w = wp.tid()
    state = world_rng(seed, 0, w, STREAM_STARTUP)
    fr = wp.vec3()
    for i in range(3):
        if friction_log[i] != 0:
            fr[i] = wp.exp(wp.randf(state, wp.log(friction_lo[i]), wp.log(friction_hi[i])))
        else:
            fr[i] = wp.randf(state, friction_lo[i], friction_hi[i])
    for k in range(foot_geoms.shape[0]):
        g = geom_friction[w, foot_geoms[k]]
        for i in range(3):
            if friction_axes[i] != 0:
                g[i] = fr[i]
        geom_friction[w, foot_geoms[k]] = g
    off = wp.vec3()
    for i in range(3):
        off[i] = wp.randf(state, com_lo[i], com_hi[i])
    body_ipos[w, com_body] = nominal_ipos + off
    for j in range(p.nj):
        bias[w, j] = wp.randf(state, bias_lo, bias_hi)
