"""Command terms (MJLab 1.6.0's `mjlab/tasks/velocity/mdp/velocity_command.py`, and
`level_velocity_command`, ranges scaled by the task curriculum's level): `warp.func`s
`(w, col, resample, rng, s, p) -> None` that write a task's command `s.command[w, col:]`.
The env owns each command's resampling timer (`terms.CommandTerm`)."""

from __future__ import annotations

import math

import numpy as np
import warp as wp

from unilab_envs.terms.config import Ref, term
from unilab_envs.terms.state import EnvState

# uniform_velocity_command's per-world flags (its state "flags", bits)
FLAG_HEADING = 1
FLAG_STANDING = 2
FLAG_FORWARD = 4


@wp.struct
class UniformVelocityCommandParams:
    """lin_vel_x, ang_vel_z: (low, high) per stage [S] (m/s, rad/s); stage i holds from env step
    `stage_step[i]` (`env_step`: the env's step counter [1], a `Ref`; one stage from step 0: no
    curriculum; MJLab's commands_vel curriculum as data); lin_vel_y, heading: (low, high)
    (m/s, rad); heading_command 1: a world is a heading world with probability rel_heading_envs, its yaw rate then
    clip(heading_control_stiffness x wrap(heading target - heading), ang_vel_z); standing
    (all zero) with rel_standing_envs; forward ((max(|vx|, forward_min), 0, 0)) with
    rel_forward_envs. State: heading_target [N] (rad), flags [N] (FLAG_HEADING | FLAG_STANDING |
    FLAG_FORWARD)."""

    lin_vel_x: wp.array(dtype=wp.vec2)
    ang_vel_z: wp.array(dtype=wp.vec2)
    stage_step: wp.array(dtype=wp.int32)
    env_step: wp.array(dtype=wp.int32)
    lin_vel_y: wp.vec2
    heading: wp.vec2
    heading_command: int
    heading_control_stiffness: float
    rel_standing_envs: float
    rel_heading_envs: float
    rel_forward_envs: float
    forward_min: float
    heading_target: wp.array(dtype=float)
    flags: wp.array(dtype=wp.int32)


@wp.func
def _wrap_to_pi(a: float) -> float:
    return wp.atan2(wp.sin(a), wp.cos(a))


@term(
    size=3,
    state={"heading_target": None, "flags": None},
    defaults={
        "stage_step": np.zeros(1, np.int32),
        "env_step": Ref("env_step"),
        "lin_vel_y": (0.0, 0.0),
        "heading": (-math.pi, math.pi),
        "heading_command": 0,
        "heading_control_stiffness": 1.0,
        "rel_standing_envs": 0.0,
        "rel_heading_envs": 0.0,
        "rel_forward_envs": 0.0,
        "forward_min": 0.0,
    },
)
@wp.func
def uniform_velocity_command(
    w: int,
    col: int,
    resample: bool,
    rng: wp.uint32,
    s: EnvState,
    p: UniformVelocityCommandParams,
) -> None:
    """(vx, vy, yaw rate) in the base's heading frame, uniform in the ranges of the stage
    reached; heading worlds steer to a heading target, standing worlds command zero, forward
    worlds (max(|vx|, forward_min), 0, 0) (MJLab's UniformVelocityCommand)."""
    stage = wp.int32(0)
    stages = wp.min(p.stage_step.shape[0], wp.min(p.lin_vel_x.shape[0], p.ang_vel_z.shape[0]))
    for i in range(stages):  # rows past the shortest of the three tables are not read
        if p.env_step[0] >= p.stage_step[i]:
            stage = i
    rx = p.lin_vel_x[stage]
    rz = p.ang_vel_z[stage]
    if resample:
        c = wp.vec3(
            wp.randf(rng, rx[0], rx[1]),
            wp.randf(rng, p.lin_vel_y[0], p.lin_vel_y[1]),
            wp.randf(rng, rz[0], rz[1]),
        )
        fl = wp.int32(0)
        if p.heading_command != 0:
            p.heading_target[w] = wp.randf(rng, p.heading[0], p.heading[1])
            if wp.randf(rng) <= p.rel_heading_envs:
                fl = fl | FLAG_HEADING
        if wp.randf(rng) <= p.rel_standing_envs:
            fl = fl | FLAG_STANDING
        if wp.randf(rng) <= p.rel_forward_envs:
            fl = fl | FLAG_FORWARD
            c = wp.vec3(wp.max(wp.abs(c[0]), p.forward_min), 0.0, 0.0)
        for i in range(3):
            s.command[w, col + i] = c[i]
        p.flags[w] = fl
    fl = p.flags[w]
    if (fl & FLAG_HEADING) != 0:
        b = s.root_qadr
        q = wp.quat(s.qpos[w, b + 4], s.qpos[w, b + 5], s.qpos[w, b + 6], s.qpos[w, b + 3])
        fwd = wp.quat_rotate(wp.normalize(q), wp.vec3(1.0, 0.0, 0.0))
        err = _wrap_to_pi(p.heading_target[w] - wp.atan2(fwd[1], fwd[0]))
        s.command[w, col + 2] = wp.clamp(p.heading_control_stiffness * err, rz[0], rz[1])
    if (fl & FLAG_STANDING) != 0:
        for i in range(3):
            s.command[w, col + i] = 0.0


@wp.struct
class LevelVelocityCommandParams:
    """bound, bound_max: |command| bound per axis (vx, vy in m/s, yaw rate in rad/s) at
    curriculum level 0 and at level 1 (`EnvState.curriculum_level`; linear in between);
    rel_standing_envs: the share of draws that command zero."""

    bound: wp.vec3
    bound_max: wp.vec3
    rel_standing_envs: float


@term(size=3, defaults={"rel_standing_envs": 0.0})
@wp.func
def level_velocity_command(
    w: int,
    col: int,
    resample: bool,
    rng: wp.uint32,
    s: EnvState,
    p: LevelVelocityCommandParams,
) -> None:
    """(vx, vy, yaw rate) in the base's heading frame, uniform in +-(bound + level x
    (bound_max - bound)) per axis at the task curriculum's level, zero with
    rel_standing_envs; size 3."""
    if resample:
        b = p.bound + s.curriculum_level[0] * (p.bound_max - p.bound)
        c = wp.vec3(
            wp.randf(rng, -b[0], b[0]),
            wp.randf(rng, -b[1], b[1]),
            wp.randf(rng, -b[2], b[2]),
        )
        if wp.randf(rng) < p.rel_standing_envs:
            c = wp.vec3(0.0, 0.0, 0.0)
        for i in range(3):
            s.command[w, col + i] = c[i]
