"""Terms of MJLab 1.6.0's velocity tasks (`mjlab/tasks/velocity/mdp`): feet, posture, contact
and momentum terms. Feet are F sites with a contact sensor each; the per-world arrays a
contact sensor keeps (air and contact times, foot heights) are the task's, passed as
`Ref`s."""

from __future__ import annotations

import warp as wp

from unilab_envs.mdp.frames import link_lin_vel_w
from unilab_envs.terms.config import term
from unilab_envs.terms.state import EnvState


@wp.func
def command_speed(w: int, s: EnvState) -> float:
    """|(vx, vy)| + |yaw rate| of the command."""
    c0, c1 = s.command[w, 0], s.command[w, 1]
    return wp.sqrt(c0 * c0 + c1 * c1) + wp.abs(s.command[w, 2])


@wp.func
def foot_speed_xy2(w: int, s: EnvState, site: int, body: int) -> float:
    """The squared horizontal speed of a foot site (m^2/s^2)."""
    com = s.subtree_com[w, s.root_body]
    v = link_lin_vel_w(s.cvel[w, body], s.site_xpos[w, site], com)
    return v[0] * v[0] + v[1] * v[1]


@wp.func
def first_contact(contact_time: float, step_dt: float) -> bool:
    """The foot touched down during this control step."""
    return contact_time > 0.0 and contact_time < step_dt + 1.0e-6


@wp.struct
class FootParams:
    """Feet and their sensor state: site ids, their bodies, contact sensor "found" and
    "force" addresses, the contact timers and heights [N, F] (`Ref`s of the task), the
    command gate (|command| above it), a target height (m) and peaks [N, F] (swing)."""

    site: wp.array(dtype=wp.int32)
    body: wp.array(dtype=wp.int32)
    found: wp.array(dtype=wp.int32)
    force: wp.array(dtype=wp.int32)
    contact_time: wp.array2d(dtype=float)
    height: wp.array2d(dtype=float)
    peak: wp.array2d(dtype=float)
    command_threshold: float
    target: float
    max_height: float


@wp.func
def feet_clearance(w: int, s: EnvState, p: FootParams) -> float:
    """sum |height - target| x horizontal foot speed, while commanded to move."""
    total = float(0.0)  # noqa: UP018 (warp: a mutable variable)
    for f in range(p.site.shape[0]):
        v = wp.sqrt(foot_speed_xy2(w, s, p.site[f], p.body[f]))
        total += wp.abs(p.height[w, f] - p.target) * v
    return wp.where(command_speed(w, s) > p.command_threshold, total, 0.0)


@wp.func
def feet_swing_height(w: int, s: EnvState, p: FootParams) -> float:
    """sum (peak / target - 1)^2 over feet touching down this step, while commanded to move;
    a foot's peak height grows while it is in the air and restarts at touch-down."""
    total = float(0.0)  # noqa: UP018
    for f in range(p.site.shape[0]):
        if not (s.sensordata[w, p.found[f]] > 0.0):
            p.peak[w, f] = wp.max(p.peak[w, f], p.height[w, f])
        if first_contact(p.contact_time[w, f], s.step_dt):
            e = p.peak[w, f] / p.target - 1.0
            total += e * e
            p.peak[w, f] = 0.0
    return wp.where(command_speed(w, s) > p.command_threshold, total, 0.0)


@wp.func
def feet_slip(w: int, s: EnvState, p: FootParams) -> float:
    """sum of the squared horizontal speeds of feet in contact, while commanded to move."""
    total = float(0.0)  # noqa: UP018
    for f in range(p.site.shape[0]):
        if s.sensordata[w, p.found[f]] > 0.0:
            total += foot_speed_xy2(w, s, p.site[f], p.body[f])
    return wp.where(command_speed(w, s) > p.command_threshold, total, 0.0)


@wp.func
def soft_landing(w: int, s: EnvState, p: FootParams) -> float:
    """sum of the contact force magnitudes of feet touching down this step, while commanded
    to move."""
    total = float(0.0)  # noqa: UP018
    for f in range(p.site.shape[0]):
        if first_contact(p.contact_time[w, f], s.step_dt):
            a = p.force[f]
            total += wp.length(
                wp.vec3(s.sensordata[w, a], s.sensordata[w, a + 1], s.sensordata[w, a + 2])
            )
    return wp.where(command_speed(w, s) > p.command_threshold, total, 0.0)


@term(size="site", mirror="feet")
@wp.func
def foot_height(w: int, k: int, s: EnvState, p: FootParams) -> float:
    """Foot k's height above the ground; on a plane at z = 0 (max_height > 0): the site's
    height clamped to [0, max_height], stored for the rewards of the next step, else the
    height the task's foot scan stored."""
    if p.max_height > 0.0:
        p.height[w, k] = wp.clamp(s.site_xpos[w, p.site[k]][2], 0.0, p.max_height)
    return p.height[w, k]


@term(size="found", mirror="feet")
@wp.func
def foot_contact(w: int, k: int, s: EnvState, p: FootParams) -> float:
    """1 where foot k's contact sensor finds a contact, else 0."""
    return wp.where(s.sensordata[w, p.found[k]] > 0.0, 1.0, 0.0)


@wp.struct
class TimeParams:
    """time: a timer per foot [N, F] (`Ref`), e.g. the contact sensor's air time."""

    time: wp.array2d(dtype=float)


@term(mirror="feet")
@wp.func
def foot_air_time(w: int, k: int, s: EnvState, p: TimeParams) -> float:
    """Foot k's time in the air (s); size: the feet."""
    return p.time[w, k]


@term(mirror="feet_vector")
@wp.func
def foot_contact_forces(w: int, k: int, s: EnvState, p: FootParams) -> float:
    """sign(f) log(1 + |f|) of component k % 3 of foot k // 3's contact force; size: 3 x
    the feet."""
    x = s.sensordata[w, p.force[k // 3] + k % 3]
    return wp.sign(x) * wp.log(1.0 + wp.abs(x))


@wp.struct
class AirTimeParams:
    """contact: 1.0 where foot f touched the ground in the last substep [N, F] (`Ref` of the
    task's contact scan); air_time: each foot's time in the air [N, F] (s; a `Ref` the task
    zeroes at reset, the term advances it); threshold: the air time a step should last (s);
    command_threshold: no reward below this planar command speed (m/s)."""

    contact: wp.array2d(dtype=float)
    air_time: wp.array2d(dtype=float)
    threshold: float
    command_threshold: float


@wp.func
def feet_air_time(w: int, s: EnvState, p: AirTimeParams) -> float:
    """sum over feet touching down this step of (air time - threshold), 0 while the planar
    command is below `command_threshold` (Isaac Lab's feet_air_time); each foot's air time
    grows by step_dt in the air and restarts at 0 on the ground."""
    total = float(0.0)  # noqa: UP018
    for f in range(p.air_time.shape[1]):
        t_air = p.air_time[w, f]
        if p.contact[w, f] > 0.0:
            if t_air > 0.0:
                total += t_air - p.threshold
            p.air_time[w, f] = 0.0
        else:
            p.air_time[w, f] = t_air + s.step_dt
    c0, c1 = s.command[w, 0], s.command[w, 1]
    return wp.where(c0 * c0 + c1 * c1 < p.command_threshold * p.command_threshold, 0.0, total)


@wp.struct
class PostureParams:
    """Per-joint std (rad) standing, walking and running, and the command speeds between."""

    std_standing: wp.array(dtype=float)
    std_walking: wp.array(dtype=float)
    std_running: wp.array(dtype=float)
    walking_threshold: float
    running_threshold: float


@wp.func
def variable_posture(w: int, s: EnvState, p: PostureParams) -> float:
    """exp(-mean((q - default)^2 / std^2)), std by the command's speed."""
    speed = command_speed(w, s)
    total = float(0.0)  # noqa: UP018
    nj = s.joint_qadr.shape[0]
    for j in range(nj):
        std = p.std_running[j]
        if speed < p.walking_threshold:
            std = p.std_standing[j]
        elif speed < p.running_threshold:
            std = p.std_walking[j]
        e = s.qpos[w, s.joint_qadr[j]] - s.default_joint_pos[j]
        total += e * e / (std * std)
    return wp.exp(-total / float(nj))


@wp.struct
class BodyParams:
    """body: a body id (`Bodies("torso_link")`)."""

    body: int


@wp.func
def body_angular_velocity_penalty(w: int, s: EnvState, p: BodyParams) -> float:
    """The body's world-frame roll and pitch rates squared."""
    om = wp.spatial_top(s.cvel[w, p.body])
    return om[0] * om[0] + om[1] * om[1]


@wp.struct
class VectorSensorParams:
    """sensor: the `sensordata` address of a 3-vector sensor (`Sensors("root_angmom")`)."""

    sensor: int


@wp.func
def angular_momentum_penalty(w: int, s: EnvState, p: VectorSensorParams) -> float:
    """The squared magnitude of a 3-vector sensor (the root's angular momentum)."""
    a = p.sensor
    v = wp.vec3(s.sensordata[w, a], s.sensordata[w, a + 1], s.sensordata[w, a + 2])
    return wp.dot(v, v)


@wp.struct
class ForceHistoryParams:
    """history: |force| of a contact sensor in each of its last H substeps [N, H] (`Ref`);
    force_threshold (N)."""

    history: wp.array2d(dtype=float)
    force_threshold: float


@wp.func
def self_collision_cost(w: int, s: EnvState, p: ForceHistoryParams) -> float:
    """Substeps of the history with a contact force above the threshold."""
    hits = float(0.0)  # noqa: UP018
    for i in range(p.history.shape[1]):
        if p.history[w, i] > p.force_threshold:
            hits += 1.0
    return hits
