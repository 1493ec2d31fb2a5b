"""Warp kernels of the MJLab velocity tasks (`tasks/mjlab_velocity.py`).

Which MuJoCo state each term reads follows MJLab 1.6.0's `ManagerBasedRlEnv.step`:
rewards and terminations read the derived fields left by the last `mujoco_warp.step`
(`xmat`, `xpos`, `cvel`, `subtree_com`, `site_xpos`: one substep stale, as in MJLab, which
calls `forward` only before observing); observations read them after the env's `forward`
(the task sets `forward_after_reset`, so the env runs one `forward` per step, as MJLab does).
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
STREAM_OBS_NOISE = 113
STREAM_STARTUP = 114

# MJLab's reward terms of the velocity tasks, in its order (velocity_env_cfg.py, then the
# robot's additions; `air_time` has weight 0 for both robots and is not implemented; the
# last two are Go1 rough's terrain-touch penalties). A task
# logs the terms with a non-zero weight (MJLab skips zero-weight terms), in this order:
# `Params.log_row[i]` is term i's row of `log`, or -1.
TERMS = (
    "track_linear_velocity",
    "track_angular_velocity",
    "upright",
    "pose",
    "body_ang_vel",
    "angular_momentum",
    "dof_pos_limits",
    "action_rate_l2",
    "foot_clearance",
    "foot_swing_height",
    "foot_slip",
    "soft_landing",
    "self_collisions",
    "shank_collision",
    "trunk_head_collision",
)
NUM_TERMS = len(TERMS)
vec_terms = wp.types.vector(NUM_TERMS, float)
vec_rows = wp.types.vector(NUM_TERMS, wp.int32)

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
    upright_body: int  # body whose tilt `upright` rewards
    ang_vel_body: int  # body whose world-frame roll/pitch rate `body_ang_vel` penalizes
    step_dt: float
    physics_dt: float
    # rewards (weights; MJLab multiplies each weighted term by step_dt)
    w: vec_terms
    log_row: vec_rows
    inv_var_lin: float
    inv_var_ang: float
    inv_var_upright: float
    walking_threshold: float
    running_threshold: float
    clearance_target: float
    clearance_cmd_threshold: float
    swing_target: float
    swing_cmd_threshold: float
    slip_cmd_threshold: float
    landing_cmd_threshold: float
    cos_limit_angle: float  # fell_over: acos(-g_z) > limit  <=>  -g_z < cos(limit)
    height_max: float  # foot height sensor max_distance (m)
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
    # observation noise (uniform +- value); noise = 0 turns it off
    noise: int
    noise_lin_vel: float
    noise_ang_vel: float
    noise_gravity: float
    noise_joint_pos: float
    noise_joint_vel: float
    # sensordata addresses of the IMU, the root subtree angular momentum (-1: none) and
    # the self-collision contact force (-1: none)
    imu_gyro: int
    imu_vel: int
    angmom_adr: int
    self_force_adr: int
    self_force_threshold: float  # N
    # rough terrain (all 0 / off on flat)
    nscan: int  # terrain_scan rays in the observations (0: none)
    scan_scale: float  # 1 / terrain_scan max_distance
    scan_max: float  # terrain_scan max_distance (m)
    noise_height_scan: float
    foot_rays: int  # 1: foot heights come from the foot ray scan (else clamp(site z, 0, max))
    upright_normal: int  # 1: upright against the terrain_scan plane fit (Go1 rough)
    oob: int  # 1: out_of_terrain_bounds time-out
    oob_x: float  # |x| limit (m)
    oob_y: float
    fell_over: int  # 1: bad_orientation terminates
    # ground-touch sensors (force history [N, G, H]): shank [0, touch_a), trunk/head
    # [touch_a, touch_b), thigh [touch_b, touch_c) (illegal_contact)
    touch_a: int
    touch_b: int
    touch_c: int
    touch_threshold: float  # N, self_collision_cost's force_threshold
    illegal_threshold: float  # N, illegal_contact's force_threshold


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
def command_speed(c: wp.vec3) -> float:
    return wp.sqrt(c[0] * c[0] + c[1] * c[1]) + wp.abs(c[2])


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


@wp.func
def touch_hits(touch: wp.array3d(dtype=float), w: int, g0: int, g1: int, threshold: float) -> float:
    # self_collision_cost with a force history: substeps in which any geom of [g0, g1) has a
    # contact force above `threshold`.
    hits = float(0.0)  # noqa: UP018
    for i in range(touch.shape[2]):
        hit = int(0)  # noqa: UP018, RUF046 (warp: a mutable variable)
        for g in range(g0, g1):
            if touch[w, g, i] > threshold:
                hit = 1
        hits += float(hit)
    return hits


@wp.func
def terrain_normal(
    w: int,
    pnt: wp.array2d(dtype=wp.vec3),
    vec: wp.array2d(dtype=wp.vec3),
    dist: wp.array2d(dtype=float),
    idx: wp.array(dtype=wp.int32),
    max_distance: float,
) -> wp.vec3:
    # MJLab's terrain_normal_from_sensors + fit_terrain_normal: the plane through the hits of
    # the subsampled rays `idx` (the smallest-eigenvalue eigenvector of their covariance, up),
    # or (0, 0, 1) with fewer than 3 hits or a degenerate (line- or point-like) cloud.
    n = int(0)  # noqa: UP018, RUF046 (warp: a mutable variable)
    c = wp.vec3()
    for k in range(idx.shape[0]):
        i = idx[k]
        dd = dist[w, i]
        if dd >= 0.0 and dd <= max_distance:
            c += pnt[w, i] + vec[w, i] * dd
            n += 1
    up = wp.vec3(0.0, 0.0, 1.0)
    if n < 3:
        return up
    c = c / float(n)
    cov = wp.mat33()
    for k in range(idx.shape[0]):
        i = idx[k]
        dd = dist[w, i]
        if dd >= 0.0 and dd <= max_distance:
            e = pnt[w, i] + vec[w, i] * dd - c
            cov += wp.outer(e, e)
    q = wp.mat33()
    ev = wp.vec3()
    wp.eig3(cov, q, ev)
    # sort the eigenvalues: e0 <= e1 <= e2, normal = eigenvector of e0 (a column of q)
    i0 = int(0)  # noqa: UP018, RUF046 (warp: a mutable variable)
    if ev[1] < ev[i0]:
        i0 = 1
    if ev[2] < ev[i0]:
        i0 = 2
    i2 = (i0 + 1) % 3
    j = (i0 + 2) % 3
    if ev[j] > ev[i2]:
        i2 = j
    i1 = 3 - i0 - i2
    e0, e1, e2 = ev[i0], ev[i1], ev[i2]
    nrm = wp.vec3(q[0, i0], q[1, i0], q[2, i0])
    nrm = nrm / wp.max(wp.length(nrm), 1.0e-8)
    if nrm[2] < 0.0:
        nrm = -nrm
    eps = 1.1920929e-07
    plane_like = e0 / wp.max(e1, eps) < 0.1
    spread = e1 > wp.max(e2, eps) * 1.0e-6
    if plane_like and spread and wp.isfinite(nrm[0] + nrm[1] + nrm[2]):
        return nrm
    return up


@wp.kernel
def count_step(step: wp.array(dtype=wp.int32)):
    step[0] = step[0] + 1


@wp.kernel
def evaluate(
    p: Params,
    qpos: wp.array2d(dtype=float),
    xpos: wp.array2d(dtype=wp.vec3),
    xmat: wp.array2d(dtype=wp.mat33),
    cvel: wp.array2d(dtype=wp.spatial_vector),
    subtree_com: wp.array2d(dtype=wp.vec3),
    site_xpos: wp.array2d(dtype=wp.vec3),
    sensordata: wp.array2d(dtype=float),
    action: wp.array2d(dtype=float),
    last_action: wp.array2d(dtype=float),
    cmd: wp.array(dtype=wp.vec3),
    qadr: wp.array(dtype=wp.int32),
    q0: wp.array(dtype=float),
    soft_lo: wp.array(dtype=float),
    soft_hi: wp.array(dtype=float),
    std_stand: wp.array(dtype=float),
    std_walk: wp.array(dtype=float),
    std_run: wp.array(dtype=float),
    foot_site: wp.array(dtype=wp.int32),
    foot_body: wp.array(dtype=wp.int32),
    found_adr: wp.array(dtype=wp.int32),
    force_adr: wp.array(dtype=wp.int32),
    contact_time: wp.array2d(dtype=float),
    foot_height: wp.array2d(dtype=float),
    self_force: wp.array2d(dtype=float),
    touch: wp.array3d(dtype=float),
    scan_pnt: wp.array2d(dtype=wp.vec3),
    scan_vec: wp.array2d(dtype=wp.vec3),
    scan_dist: wp.array2d(dtype=float),
    normal_idx: wp.array(dtype=wp.int32),
    peak: wp.array2d(dtype=float),
    reward: wp.array(dtype=float),
    terminated: wp.array(dtype=wp.bool),
    time_out: wp.array(dtype=wp.bool),
    log: wp.array2d(dtype=float),
):
    w = wp.tid()
    rb = p.root
    rt = wp.transpose(xmat[w, rb])
    com = subtree_com[w, rb]
    v = rt @ link_lin_vel_w(cvel[w, rb], xpos[w, rb], com)
    om = rt @ wp.spatial_top(cvel[w, rb])
    g = rt @ wp.vec3(0.0, 0.0, -1.0)
    c = cmd[w]
    speed = command_speed(c)

    t = vec_terms()
    lin_err = (c[0] - v[0]) * (c[0] - v[0]) + (c[1] - v[1]) * (c[1] - v[1]) + v[2] * v[2]
    t[0] = wp.exp(-lin_err * p.inv_var_lin)
    ang_err = (c[2] - om[2]) * (c[2] - om[2]) + om[0] * om[0] + om[1] * om[1]
    t[1] = wp.exp(-ang_err * p.inv_var_ang)
    gu = wp.transpose(xmat[w, p.upright_body]) @ wp.vec3(0.0, 0.0, -1.0)
    if p.upright_normal != 0:  # tilt against the terrain plane under the base (rough Go1)
        nrm = terrain_normal(w, scan_pnt, scan_vec, scan_dist, normal_idx, p.scan_max)
        gu = wp.transpose(xmat[w, p.upright_body]) @ nrm
    t[2] = wp.exp(-(gu[0] * gu[0] + gu[1] * gu[1]) * p.inv_var_upright)

    posture = float(0.0)  # noqa: UP018 (warp: mutable loop variable)
    limits = float(0.0)  # noqa: UP018
    rate = float(0.0)  # noqa: UP018
    for j in range(p.nj):
        qj = qpos[w, qadr[j]]
        std = std_run[j]
        if speed < p.walking_threshold:
            std = std_stand[j]
        elif speed < p.running_threshold:
            std = std_walk[j]
        e = qj - q0[j]
        posture += e * e / (std * std)
        limits += wp.max(soft_lo[j] - qj, 0.0) + wp.max(qj - soft_hi[j], 0.0)
        da = action[w, j] - last_action[w, j]
        rate += da * da
    t[3] = wp.exp(-posture / float(p.nj))
    wb = wp.spatial_top(cvel[w, p.ang_vel_body])  # world frame
    t[4] = wb[0] * wb[0] + wb[1] * wb[1]
    if p.angmom_adr >= 0:
        a = p.angmom_adr
        lv = wp.vec3(sensordata[w, a], sensordata[w, a + 1], sensordata[w, a + 2])
        t[5] = wp.dot(lv, lv)
    t[6] = limits
    t[7] = rate

    clearance = float(0.0)  # noqa: UP018
    swing = float(0.0)  # noqa: UP018
    slip = float(0.0)  # noqa: UP018
    landing = float(0.0)  # noqa: UP018
    for f in range(p.nfoot):
        b = foot_body[f]
        vs = link_lin_vel_w(cvel[w, b], site_xpos[w, foot_site[f]], com)
        vxy2 = vs[0] * vs[0] + vs[1] * vs[1]
        h = foot_height[w, f]
        clearance += wp.abs(h - p.clearance_target) * wp.sqrt(vxy2)
        found = sensordata[w, found_adr[f]] > 0.0
        if not found:
            peak[w, f] = wp.max(peak[w, f], h)
        ct = contact_time[w, f]
        first = ct > 0.0 and ct < p.step_dt + 1.0e-6
        if first:
            e = peak[w, f] / p.swing_target - 1.0
            swing += e * e
            fa = force_adr[f]
            fv = wp.vec3(sensordata[w, fa], sensordata[w, fa + 1], sensordata[w, fa + 2])
            landing += wp.length(fv)
            peak[w, f] = 0.0
        if found:
            slip += vxy2
    t[8] = wp.where(speed > p.clearance_cmd_threshold, clearance, 0.0)
    t[9] = wp.where(speed > p.swing_cmd_threshold, swing, 0.0)
    t[10] = wp.where(speed > p.slip_cmd_threshold, slip, 0.0)
    t[11] = wp.where(speed > p.landing_cmd_threshold, landing, 0.0)
    hits = float(0.0)  # noqa: UP018
    for i in range(self_force.shape[1]):
        if self_force[w, i] > p.self_force_threshold:
            hits += 1.0
    t[12] = hits  # self_collision_cost: substeps of the history with a force above threshold
    t[13] = touch_hits(touch, w, 0, p.touch_a, p.touch_threshold)
    t[14] = touch_hits(touch, w, p.touch_a, p.touch_b, p.touch_threshold)

    total = float(0.0)  # noqa: UP018
    for i in range(NUM_TERMS):
        row = p.log_row[i]
        if row >= 0:
            x = p.w[i] * t[i] * p.step_dt
            if not wp.isfinite(x):  # MJLab: nan_to_num per weighted term
                x = 0.0
            log[row, w] = x
            total += x
    reward[w] = total
    term = False
    if p.fell_over != 0:
        term = -g[2] < p.cos_limit_angle
    if p.touch_c > p.touch_b:  # illegal_contact: any thigh force above threshold, any substep
        term = term or touch_hits(touch, w, p.touch_b, p.touch_c, p.illegal_threshold) > 0.0
    terminated[w] = term
    if p.oob != 0:  # out_of_terrain_bounds (a time-out: the env truncates)
        pb = xpos[w, rb]
        time_out[w] = wp.abs(pb[0]) > p.oob_x or wp.abs(pb[1]) > p.oob_y


@wp.kernel
def observe(
    seed: int,
    counter: wp.array(dtype=wp.int32),
    p: Params,
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    xmat: wp.array2d(dtype=wp.mat33),
    site_xpos: wp.array2d(dtype=wp.vec3),
    sensordata: wp.array2d(dtype=float),
    action: wp.array2d(dtype=float),
    episode_length: wp.array(dtype=wp.int32),
    cmd: wp.array(dtype=wp.vec3),
    qadr: wp.array(dtype=wp.int32),
    dadr: wp.array(dtype=wp.int32),
    q0: wp.array(dtype=float),
    bias: wp.array2d(dtype=float),
    foot_site: wp.array(dtype=wp.int32),
    found_adr: wp.array(dtype=wp.int32),
    force_adr: wp.array(dtype=wp.int32),
    air: wp.array2d(dtype=float),
    scan: wp.array2d(dtype=float),
    foot_height: wp.array2d(dtype=float),
    actor: wp.array2d(dtype=float),
    critic: wp.array2d(dtype=float),
):
    # actor  [base_lin_vel 3, base_ang_vel 3, projected_gravity 3, joint_pos (biased) J,
    #         joint_vel J, actions J, command 3, height_scan S (rough: (h + noise) / max_d)]
    #                                       (noise on all but actions and command)
    # critic [the same, joint_pos unbiased, no noise; foot_height F, foot_air_time F,
    #         foot_contact F, foot_contact_forces 3F (sign(f) log1p|f|)]
    # One thread per (world, actor column); column 0 also writes the critic's foot terms.
    w, k = wp.tid()
    nj = p.nj
    value = float(0.0)  # noqa: UP018
    unbiased = float(0.0)  # noqa: UP018
    noise = float(0.0)  # noqa: UP018
    scale = float(1.0)  # noqa: UP018
    if k < 3:
        value = sensordata[w, p.imu_vel + k]
        noise = p.noise_lin_vel
    elif k < 6:
        value = sensordata[w, p.imu_gyro + k - 3]
        noise = p.noise_ang_vel
    elif k < 9:
        g = wp.transpose(xmat[w, p.root]) @ wp.vec3(0.0, 0.0, -1.0)
        value = g[k - 6]
        noise = p.noise_gravity
    elif k < 9 + nj:
        j = k - 9
        unbiased = qpos[w, qadr[j]] - q0[j]
        value = unbiased + bias[w, j]
        noise = p.noise_joint_pos
    elif k < 9 + 2 * nj:
        value = qvel[w, dadr[k - 9 - nj]]
        noise = p.noise_joint_vel
    elif k < 9 + 3 * nj:
        value = wp.where(episode_length[w] == 0, 0.0, action[w, k - 9 - 2 * nj])
    elif k < 12 + 3 * nj:
        value = cmd[w][k - 9 - 3 * nj]
    else:
        value = scan[w, k - 12 - 3 * nj]
        noise = p.noise_height_scan
        scale = p.scan_scale
    critic[w, k] = wp.where(k >= 9 and k < 9 + nj, unbiased, value) * scale
    if p.noise != 0 and noise > 0.0:
        state = world_rng(seed, counter[0], w * actor.shape[1] + k, STREAM_OBS_NOISE)
        value = value + wp.randf(state, -noise, noise)
    actor[w, k] = value * scale
    if k == 0:
        base = 12 + 3 * nj + p.nscan
        nf = p.nfoot
        for f in range(nf):
            h = foot_height[w, f]  # rough: the foot ray scan's clearance, cast before this
            if p.foot_rays == 0:  # a plane at z = 0: the clearance is the site height
                h = wp.clamp(site_xpos[w, foot_site[f]][2], 0.0, p.height_max)
                foot_height[w, f] = h
            critic[w, base + f] = h
            critic[w, base + nf + f] = air[w, f]
            critic[w, base + 2 * nf + f] = wp.where(sensordata[w, found_adr[f]] > 0.0, 1.0, 0.0)
            for i in range(3):
                x = sensordata[w, force_adr[f] + i]
                critic[w, base + 3 * nf + 3 * f + i] = wp.sign(x) * wp.log(1.0 + wp.abs(x))


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
