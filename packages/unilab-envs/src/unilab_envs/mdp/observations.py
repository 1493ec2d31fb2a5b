"""Observation terms (MJLab's `envs/mdp/observations.py` names): `(w, k, s[, p]) -> float`,
value k of the term."""

from __future__ import annotations

import warp as wp

from unilab_envs.mdp.frames import root_ang_vel_b, root_gravity_b, root_height, root_lin_vel_b
from unilab_envs.terms.config import term
from unilab_envs.terms.state import EnvState


@term(size=3, mirror="vector")
@wp.func
def base_lin_vel(w: int, k: int, s: EnvState) -> float:
    """The base's linear velocity in its own frame (m/s)."""
    return root_lin_vel_b(w, s)[k]


@term(size=3, mirror="axial")
@wp.func
def base_ang_vel(w: int, k: int, s: EnvState) -> float:
    """The base's angular velocity in its own frame (rad/s)."""
    return root_ang_vel_b(w, s)[k]


@term(size=3, mirror="vector")
@wp.func
def projected_gravity(w: int, k: int, s: EnvState) -> float:
    """The unit gravity direction in the base's frame."""
    return root_gravity_b(w, s)[k]


@term(size=1)
@wp.func
def base_pos_z(w: int, k: int, s: EnvState) -> float:
    """The base's height (m, world z)."""
    return root_height(w, s)


@wp.struct
class JointPosParams:
    """biased: 1 adds the simulated encoder bias (`EnvState.encoder_bias`)."""

    biased: int


@wp.struct
class SensorParams:
    """sensor: the sensor's `sensordata` address (`Sensors("name")`)."""

    sensor: int


@term(size="joints", defaults={"biased": 0}, mirror="joints")
@wp.func
def joint_pos_rel(w: int, k: int, s: EnvState, p: JointPosParams) -> float:
    """Joint positions minus the default pose (rad or m), action order; `biased`: plus the
    encoder bias, as a real encoder reads."""
    rel = s.qpos[w, s.joint_qadr[k]] - s.default_joint_pos[k]
    if p.biased != 0:
        rel = rel + s.encoder_bias[w, k]
    return rel


@term(size="sensor", mirror="sensor")
@wp.func
def builtin_sensor(w: int, k: int, s: EnvState, p: SensorParams) -> float:
    """A MuJoCo sensor's values (e.g. an IMU's gyro or velocimeter)."""
    return s.sensordata[w, p.sensor + k]


@term(size="joints", mirror="joints")
@wp.func
def joint_vel_rel(w: int, k: int, s: EnvState) -> float:
    """Joint velocities (rad/s or m/s; the default velocity is 0), action order."""
    return s.qvel[w, s.joint_dadr[k]]


@term(size="actions", mirror="actions")
@wp.func
def last_action(w: int, k: int, s: EnvState) -> float:
    """The action the policy took this step (0 in an episode's first observation)."""
    return wp.where(s.episode_length[w] == 0, 0.0, s.action[w, k])


@term(size="command", mirror="command")
@wp.func
def generated_commands(w: int, k: int, s: EnvState) -> float:
    """The task's command."""
    return s.command[w, k]


@wp.struct
class ContactFlagParams:
    """contact: 1.0 where foot k touches the ground, else 0 [N, F] (`Ref` of the task's
    contact scan)."""

    contact: wp.array2d(dtype=float)


@wp.func
def foot_ground_contact(w: int, k: int, s: EnvState, p: ContactFlagParams) -> float:
    """1 where foot k touched the ground in the last substep (the task's contact scan), else
    0; size: the feet."""
    return p.contact[w, k]
