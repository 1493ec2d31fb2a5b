"""Reward terms (MJLab's names): `(w, s[, p]) -> float`, the unweighted value; the env sums
weight x value x step_dt."""

from __future__ import annotations

import warp as wp

from unilab_envs.mdp.frames import gravity_b, root_ang_vel_b, root_gravity_b, root_lin_vel_b
from unilab_envs.terms.state import EnvState


@wp.struct
class StdParams:
    """std: the kernel width of an exp(-error / std^2) reward."""

    std: float


@wp.struct
class UprightParams:
    """std: as `StdParams`; body: the body whose tilt counts (`Bodies("trunk")`)."""

    std: float
    body: int


@wp.struct
class JointWeightParams:
    """weights: one weight per driven joint [J] (a scalar, a sequence or `Joints({regex: w})`)."""

    weights: wp.array(dtype=float)


@wp.func
def is_alive(w: int, s: EnvState) -> float:
    """1 every step (weight it to reward survival)."""
    return 1.0


@wp.func
def lin_vel_z_l2(w: int, s: EnvState) -> float:
    """The base's vertical velocity squared, in its own frame ((m/s)^2)."""
    v = root_lin_vel_b(w, s)
    return v[2] * v[2]


@wp.func
def ang_vel_xy_l2(w: int, s: EnvState) -> float:
    """The base's roll and pitch rates squared, in its own frame ((rad/s)^2)."""
    om = root_ang_vel_b(w, s)
    return om[0] * om[0] + om[1] * om[1]


@wp.func
def flat_orientation_l2(w: int, s: EnvState) -> float:
    """The xy components of gravity in the base frame squared (0 upright)."""
    g = root_gravity_b(w, s)
    return g[0] * g[0] + g[1] * g[1]


@wp.func
def action_rate_l2(w: int, s: EnvState) -> float:
    """Squared change of the action since the previous step."""
    total = float(0.0)  # noqa: UP018 (warp: a mutable variable)
    for j in range(s.action.shape[1]):
        d = s.action[w, j] - s.last_action[w, j]
        total += d * d
    return total


@wp.func
def action_l2(w: int, s: EnvState) -> float:
    """Squared action."""
    total = float(0.0)  # noqa: UP018
    for j in range(s.action.shape[1]):
        total += s.action[w, j] * s.action[w, j]
    return total


@wp.func
def joint_vel_l2(w: int, s: EnvState) -> float:
    """Squared joint velocities of the driven joints."""
    total = float(0.0)  # noqa: UP018
    for j in range(s.joint_dadr.shape[0]):
        v = s.qvel[w, s.joint_dadr[j]]
        total += v * v
    return total


@wp.func
def joint_pos_limits(w: int, s: EnvState) -> float:
    """How far the driven joints are outside their soft limits (summed, rad or m)."""
    total = float(0.0)  # noqa: UP018
    for j in range(s.joint_qadr.shape[0]):
        q = s.qpos[w, s.joint_qadr[j]]
        total += wp.max(s.soft_joint_lo[j] - q, 0.0) + wp.max(q - s.soft_joint_hi[j], 0.0)
    return total


@wp.func
def track_linear_velocity(w: int, s: EnvState, p: StdParams) -> float:
    """exp(-e / std^2), e: the squared error of the base's xy velocity to the command's
    (vx, vy) plus its vertical velocity squared (base frame)."""
    v = root_lin_vel_b(w, s)
    ex = s.command[w, 0] - v[0]
    ey = s.command[w, 1] - v[1]
    return wp.exp(-(ex * ex + ey * ey + v[2] * v[2]) / (p.std * p.std))


@wp.func
def track_angular_velocity(w: int, s: EnvState, p: StdParams) -> float:
    """exp(-e / std^2), e: the squared error of the base's yaw rate to the command's plus its
    roll and pitch rates squared (base frame)."""
    om = root_ang_vel_b(w, s)
    ez = s.command[w, 2] - om[2]
    return wp.exp(-(ez * ez + om[0] * om[0] + om[1] * om[1]) / (p.std * p.std))


@wp.func
def upright(w: int, s: EnvState, p: UprightParams) -> float:
    """exp(-t / std^2), t: the xy components of gravity in `body`'s frame squared."""
    g = gravity_b(w, s, p.body)
    return wp.exp(-(g[0] * g[0] + g[1] * g[1]) / (p.std * p.std))


@wp.func
def track_lin_vel_xy_exp(w: int, s: EnvState, p: StdParams) -> float:
    """exp(-e / std^2), e: the squared error of the base's xy velocity to the command's
    (vx, vy) (base frame; Isaac Lab's term, without MJLab's vertical part)."""
    v = root_lin_vel_b(w, s)
    ex = s.command[w, 0] - v[0]
    ey = s.command[w, 1] - v[1]
    return wp.exp(-(ex * ex + ey * ey) / (p.std * p.std))


@wp.func
def track_ang_vel_z_exp(w: int, s: EnvState, p: StdParams) -> float:
    """exp(-e / std^2), e: the squared error of the base's yaw rate to the command's (base
    frame; Isaac Lab's term, without MJLab's roll and pitch part)."""
    ez = s.command[w, 2] - root_ang_vel_b(w, s)[2]
    return wp.exp(-(ez * ez) / (p.std * p.std))


@wp.func
def joint_torques_l2(w: int, s: EnvState) -> float:
    """Squared forces of the actuators driving the driven joints ((N m)^2 or N^2)."""
    total = float(0.0)  # noqa: UP018
    for j in range(s.joint_actuator.shape[0]):
        a = s.joint_actuator[j]
        if a >= 0:
            tau = s.actuator_force[w, a]
            total += tau * tau
    return total


@wp.func
def joint_acc_l2(w: int, s: EnvState) -> float:
    """Squared accelerations of the driven joints ((rad/s^2)^2 or (m/s^2)^2)."""
    total = float(0.0)  # noqa: UP018
    for j in range(s.joint_dadr.shape[0]):
        a = s.qacc[w, s.joint_dadr[j]]
        total += a * a
    return total


@wp.func
def joint_deviation_l1(w: int, s: EnvState, p: JointWeightParams) -> float:
    """sum over the driven joints of weights x |q - default| (rad or m)."""
    total = float(0.0)  # noqa: UP018
    for j in range(s.joint_qadr.shape[0]):
        total += p.weights[j] * wp.abs(s.qpos[w, s.joint_qadr[j]] - s.default_joint_pos[j])
    return total


@wp.func
def is_terminated(w: int, s: EnvState) -> float:
    """1 on a terminal step (a termination term other than a time-out fired), else 0."""
    return wp.where(s.terminated[w], 1.0, 0.0)


__all__ = [
    "JointWeightParams",
    "StdParams",
    "UprightParams",
    "action_l2",
    "action_rate_l2",
    "ang_vel_xy_l2",
    "flat_orientation_l2",
    "is_alive",
    "is_terminated",
    "joint_acc_l2",
    "joint_deviation_l1",
    "joint_pos_limits",
    "joint_torques_l2",
    "joint_vel_l2",
    "lin_vel_z_l2",
    "track_ang_vel_z_exp",
    "track_angular_velocity",
    "track_lin_vel_xy_exp",
    "track_linear_velocity",
    "upright",
]
