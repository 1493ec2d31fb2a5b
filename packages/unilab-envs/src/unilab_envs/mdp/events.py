"""Event terms (MJLab 1.6.0's `mjlab/envs/mdp/events.py` and `envs/mdp/dr/`): `warp.func`s
`(w, rng, s, p) -> rng` that change world w's state, or at startup its per-world model
fields (given as `Ref`s of the task's arrays), drawing from `rng` and returning it after
their draws (`terms.EventTerm`: modes "startup", "reset", "interval")."""

from __future__ import annotations

import numpy as np
import warp as wp

from unilab_envs.mdp.frames import link_lin_vel_w
from unilab_envs.terms.config import term
from unilab_envs.terms.state import EnvState


@wp.struct
class RootStateParams:
    """pose_x, pose_y, pose_z, pose_roll, pose_pitch, pose_yaw: (low, high) of the base's
    offsets (m, rad) from (origin x, origin y, origin z + height) and from upright (MJLab's
    pose_range; a roll or pitch range of width 0 draws nothing, upright by default); origin:
    each world's origin [N] (e.g. a terrain tile's, a `Ref`; empty: 0). velocity_x,
    velocity_y, velocity_z (m/s), velocity_roll, velocity_pitch, velocity_yaw (rad/s): (low,
    high) of the base's velocity, world frame (MJLab's velocity_range; a range of width 0 draws
    nothing); body_frame_ang_vel: 1: the roll, pitch and yaw rate ranges are the base frame's
    (the free joint's own coordinates) instead of the world's."""

    pose_x: wp.vec2
    pose_y: wp.vec2
    pose_z: wp.vec2
    pose_roll: wp.vec2
    pose_pitch: wp.vec2
    pose_yaw: wp.vec2
    height: float
    origin: wp.array(dtype=wp.vec3)
    velocity_x: wp.vec2
    velocity_y: wp.vec2
    velocity_z: wp.vec2
    velocity_roll: wp.vec2
    velocity_pitch: wp.vec2
    velocity_yaw: wp.vec2
    body_frame_ang_vel: int


@wp.func
def quat_from_euler_xyz(roll: float, pitch: float, yaw: float) -> wp.quat:
    """The rotation of Euler angles roll, pitch, yaw (rad; x, then y, then z axis, fixed
    frame: R = Rz(yaw) Ry(pitch) Rx(roll)), as MJLab's `quat_from_euler_xyz` composes it."""
    cr, sr = wp.cos(0.5 * roll), wp.sin(0.5 * roll)
    cp, sp = wp.cos(0.5 * pitch), wp.sin(0.5 * pitch)
    cy, sy = wp.cos(0.5 * yaw), wp.sin(0.5 * yaw)
    return wp.quat(
        cy * sr * cp - sy * cr * sp,
        cy * cr * sp + sy * sr * cp,
        sy * cr * cp - cy * sr * sp,
        cy * cr * cp + sy * sr * sp,
    )


@term(
    defaults={
        "pose_x": (0.0, 0.0),
        "pose_y": (0.0, 0.0),
        "pose_z": (0.0, 0.0),
        "pose_roll": (0.0, 0.0),
        "pose_pitch": (0.0, 0.0),
        "pose_yaw": (0.0, 0.0),
        "origin": np.zeros((0, 3), np.float32),
        "velocity_x": (0.0, 0.0),
        "velocity_y": (0.0, 0.0),
        "velocity_z": (0.0, 0.0),
        "velocity_roll": (0.0, 0.0),
        "velocity_pitch": (0.0, 0.0),
        "velocity_yaw": (0.0, 0.0),
        "body_frame_ang_vel": 0,
    }
)
@wp.func
def reset_root_state_uniform(w: int, rng: wp.uint32, s: EnvState, p: RootStateParams) -> wp.uint32:
    """The base at its origin plus offsets uniform in the ranges (yaw drawn first, then x,
    y, z, roll, pitch), turned by the Euler angles roll, pitch, yaw from upright (MJLab's
    composition), at a velocity uniform in the velocity ranges (drawn after the pose, x to
    yaw; at rest with the default ranges)."""
    yaw = wp.randf(rng, p.pose_yaw[0], p.pose_yaw[1])
    o = wp.vec3()
    if p.origin.shape[0] > 0:
        o = p.origin[w]
    b, v = s.root_qadr, s.root_dadr
    s.qpos[w, b + 0] = o[0] + wp.randf(rng, p.pose_x[0], p.pose_x[1])
    s.qpos[w, b + 1] = o[1] + wp.randf(rng, p.pose_y[0], p.pose_y[1])
    s.qpos[w, b + 2] = o[2] + p.height + wp.randf(rng, p.pose_z[0], p.pose_z[1])
    # roll and pitch after the position (MJLab's order x, y, z, roll, pitch, yaw, but for
    # yaw). Every optional draw is written out here rather than in a helper `wp.func`: a
    # function gets a copy of `rng` and would not advance it, so its draws would repeat.
    roll, pitch = p.pose_roll[0], p.pose_pitch[0]
    if p.pose_roll[1] > p.pose_roll[0]:
        roll = wp.randf(rng, p.pose_roll[0], p.pose_roll[1])
    if p.pose_pitch[1] > p.pose_pitch[0]:
        pitch = wp.randf(rng, p.pose_pitch[0], p.pose_pitch[1])
    q = quat_from_euler_xyz(roll, pitch, yaw)  # MuJoCo's qpos holds (w, x, y, z)
    s.qpos[w, b + 3] = q[3]
    s.qpos[w, b + 4] = q[0]
    s.qpos[w, b + 5] = q[1]
    s.qpos[w, b + 6] = q[2]
    # the velocities, x to yaw, each drawn only when its range has width
    lx, ly, lz = p.velocity_x[0], p.velocity_y[0], p.velocity_z[0]
    if p.velocity_x[1] > p.velocity_x[0]:
        lx = wp.randf(rng, p.velocity_x[0], p.velocity_x[1])
    if p.velocity_y[1] > p.velocity_y[0]:
        ly = wp.randf(rng, p.velocity_y[0], p.velocity_y[1])
    if p.velocity_z[1] > p.velocity_z[0]:
        lz = wp.randf(rng, p.velocity_z[0], p.velocity_z[1])
    ax, ay, az = p.velocity_roll[0], p.velocity_pitch[0], p.velocity_yaw[0]
    if p.velocity_roll[1] > p.velocity_roll[0]:
        ax = wp.randf(rng, p.velocity_roll[0], p.velocity_roll[1])
    if p.velocity_pitch[1] > p.velocity_pitch[0]:
        ay = wp.randf(rng, p.velocity_pitch[0], p.velocity_pitch[1])
    if p.velocity_yaw[1] > p.velocity_yaw[0]:
        az = wp.randf(rng, p.velocity_yaw[0], p.velocity_yaw[1])
    lin = wp.vec3(lx, ly, lz)
    ang = wp.vec3(ax, ay, az)
    if p.body_frame_ang_vel == 0 and wp.length_sq(ang) > 0.0:
        # the free joint holds the base frame's angular velocity (at rest: exact zeros)
        ang = wp.quat_rotate_inv(q, ang)
    for i in range(3):
        s.qvel[w, v + i] = lin[i]
        s.qvel[w, v + 3 + i] = ang[i]
    return rng


@wp.struct
class JointOffsetParams:
    """position_range, velocity_range: (low, high) of the offsets added to the default pose
    (rad or m) and to zero velocity; a range of width 0 draws nothing. soft_limits: 1: the
    positions are clamped to the soft limits (MJLab), 0: to the joints' full range."""

    position_range: wp.vec2
    velocity_range: wp.vec2
    soft_limits: int


@term(defaults={"position_range": (0.0, 0.0), "velocity_range": (0.0, 0.0), "soft_limits": 1})
@wp.func
def reset_joints_by_offset(w: int, rng: wp.uint32, s: EnvState, p: JointOffsetParams) -> wp.uint32:
    """The driven joints at the default pose plus an offset, clamped to the soft limits (or
    the full range), and at the offset velocity."""
    lo, hi = p.position_range[0], p.position_range[1]
    for j in range(s.joint_qadr.shape[0]):
        q = s.default_joint_pos[j]
        if hi > lo:
            q = q + wp.randf(rng, lo, hi)
        if p.soft_limits != 0:
            q = wp.clamp(q, s.soft_joint_lo[j], s.soft_joint_hi[j])
        else:
            q = wp.clamp(q, s.joint_lo[j], s.joint_hi[j])
        s.qpos[w, s.joint_qadr[j]] = q
    vlo, vhi = p.velocity_range[0], p.velocity_range[1]
    for j in range(s.joint_dadr.shape[0]):
        dq = wp.float32(0.0)
        if vhi > vlo:
            dq = wp.randf(rng, vlo, vhi)
        s.qvel[w, s.joint_dadr[j]] = dq
    return rng


@wp.struct
class PushParams:
    """lin_vel, ang_vel: +- range per axis of the velocity added (world frame; m/s, rad/s)."""

    lin_vel: wp.vec3
    ang_vel: wp.vec3


@term()
@wp.func
def push_by_setting_velocity(w: int, rng: wp.uint32, s: EnvState, p: PushParams) -> wp.uint32:
    """Adds velocities uniform in +-lin_vel, +-ang_vel to the base's (world frame), read from
    the kinematics of the last forward."""
    rb, b, vb = s.root_body, s.root_qadr, s.root_dadr
    v = link_lin_vel_w(s.cvel[w, rb], s.xpos[w, rb], s.subtree_com[w, rb])
    om = wp.spatial_top(s.cvel[w, rb])
    for i in range(3):
        v[i] = v[i] + wp.randf(rng, -p.lin_vel[i], p.lin_vel[i])
    for i in range(3):
        om[i] = om[i] + wp.randf(rng, -p.ang_vel[i], p.ang_vel[i])
    q = wp.quat(s.qpos[w, b + 4], s.qpos[w, b + 5], s.qpos[w, b + 6], s.qpos[w, b + 3])
    om_b = wp.quat_rotate_inv(wp.normalize(q), om)
    for i in range(3):
        s.qvel[w, vb + i] = v[i]
        s.qvel[w, vb + 3 + i] = om_b[i]
    return rng


@wp.struct
class GeomFrictionParams:
    """geoms: geom ids; low, high: the range per axis (slide, spin, roll); log_uniform: 1 per
    axis drawn log-uniformly; axes: 1 per axis set (the others keep the geom's value);
    geom_friction: the model's per-world field [N, ngeom] (a `Ref`)."""

    geoms: wp.array(dtype=wp.int32)
    low: wp.vec3
    high: wp.vec3
    log_uniform: wp.vec3i
    axes: wp.vec3i
    geom_friction: wp.array2d(dtype=wp.vec3)


@term(defaults={"log_uniform": (0, 0, 0), "axes": (1, 0, 0)})
@wp.func
def geom_friction(w: int, rng: wp.uint32, s: EnvState, p: GeomFrictionParams) -> wp.uint32:
    """Sets ("abs") the geoms' friction on the chosen axes to one draw per axis shared by
    the geoms (all three axes are drawn, in order)."""
    fr = wp.vec3()
    for i in range(3):
        if p.log_uniform[i] != 0:
            fr[i] = wp.exp(wp.randf(rng, wp.log(p.low[i]), wp.log(p.high[i])))
        else:
            fr[i] = wp.randf(rng, p.low[i], p.high[i])
    for k in range(p.geoms.shape[0]):
        g = p.geom_friction[w, p.geoms[k]]
        for i in range(3):
            if p.axes[i] != 0:
                g[i] = fr[i]
        p.geom_friction[w, p.geoms[k]] = g
    return rng


@wp.struct
class ComOffsetParams:
    """body: the body; low, high: the offset range per axis (m); body_ipos: the model's
    per-world field [N, nbody] (a `Ref`)."""

    body: int
    low: wp.vec3
    high: wp.vec3
    body_ipos: wp.array2d(dtype=wp.vec3)


@term()
@wp.func
def body_com_offset(w: int, rng: wp.uint32, s: EnvState, p: ComOffsetParams) -> wp.uint32:
    """Adds ("add") an offset uniform per axis to the body's center of mass (its `body_ipos`);
    a task recomputes what depends on it (MuJoCo Warp's `set_const`) after the startup."""
    off = wp.vec3()
    for i in range(3):
        off[i] = wp.randf(rng, p.low[i], p.high[i])
    p.body_ipos[w, p.body] = p.body_ipos[w, p.body] + off
    return rng


@wp.struct
class EncoderBiasParams:
    """low, high: the range of each joint's encoder offset (rad or m)."""

    low: float
    high: float


@term()
@wp.func
def encoder_bias(w: int, rng: wp.uint32, s: EnvState, p: EncoderBiasParams) -> wp.uint32:
    """Each driven joint's encoder offset (`s.encoder_bias`), uniform in [low, high]: what
    the joint-position action subtracts and a biased joint observation adds."""
    for j in range(s.encoder_bias.shape[1]):
        s.encoder_bias[w, j] = wp.randf(rng, p.low, p.high)
    return rng
