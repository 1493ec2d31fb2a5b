"""The MDP of `quadruped-velocity` / `humanoid-velocity` as term dicts over `unilab_envs.mdp`
(Isaac Lab's legged-locomotion terms): the observation groups, rewards, terminations, command
and reset events of a `VelocityConfig` for a robot, the config's term overrides applied. The
task's arrays the terms read (`Ref`): "foot_contact" [N, F] and "bad_contact" [N] (the
contact scan), "air_time" [N, F] (feet_air_time's timers); a reset zeroes the three."""

from __future__ import annotations

import math
from typing import Any

from unilab_envs import mdp
from unilab_envs.tasks.robots import RobotConfig
from unilab_envs.terms import (
    CommandTerm,
    EventTerm,
    ObservationGroup,
    ObservationTerm,
    Ref,
    RewardTerm,
    TerminationTerm,
    UniformNoise,
)
from unilab_envs.terms.overrides import merge_groups, merge_terms

TASK_ARRAYS = ("foot_contact", "bad_contact", "air_time")
ZERO_ON_RESET = TASK_ARRAYS  # in the terms' reset launch
AIR_TIME_COMMAND_THRESHOLD = 0.1  # m/s: no air-time reward below this planar command


def observations(c: Any, robot: RobotConfig) -> dict[str, ObservationGroup]:
    """ "policy" (uniform noise on angular velocity, gravity, joint positions and velocities
    with `obs_noise`) and "critic" (the same exact, then base velocity, height, foot
    contacts)."""

    def common(noisy: bool) -> dict[str, ObservationTerm]:
        def obs(func, noise: float = 0.0) -> ObservationTerm:
            n = UniformNoise(-noise, noise) if noisy and noise > 0.0 else None
            return ObservationTerm(func=func, noise=n)

        return {
            "base_ang_vel": obs(mdp.base_ang_vel, c.noise_ang_vel),
            "projected_gravity": obs(mdp.projected_gravity, c.noise_gravity),
            "command": obs(mdp.generated_commands),
            "joint_pos": obs(mdp.joint_pos_rel, c.noise_joint_pos),
            "joint_vel": obs(mdp.joint_vel_rel, c.noise_joint_vel),
            "actions": obs(mdp.last_action),
        }

    critic = {
        **common(noisy=False),
        "base_lin_vel": ObservationTerm(func=mdp.base_lin_vel),
        "base_height": ObservationTerm(func=mdp.base_pos_z),
        "foot_contact": ObservationTerm(
            func=mdp.foot_ground_contact,
            params={"contact": Ref("foot_contact")},
            size=len(robot.foot_bodies),
        ),
    }
    return {
        "policy": ObservationGroup(terms=common(noisy=True), enable_corruption=c.obs_noise),
        "critic": ObservationGroup(terms=critic),
    }


def rewards(c: Any, robot: RobotConfig) -> dict[str, RewardTerm]:
    """The reward terms (weights per second, penalties negative) in the order they are
    logged."""

    def r(func, weight: float, **params) -> RewardTerm:
        return RewardTerm(func=func, weight=weight, params=params)

    deviation = robot.joint_deviation or (0.0,) * robot.num_joints
    return {
        "track_lin_vel": r(mdp.track_lin_vel_xy_exp, c.w_track_lin_vel, std=c.std_lin_vel),
        "track_ang_vel": r(mdp.track_ang_vel_z_exp, c.w_track_ang_vel, std=c.std_ang_vel),
        "lin_vel_z": r(mdp.lin_vel_z_l2, c.w_lin_vel_z),
        "ang_vel_xy": r(mdp.ang_vel_xy_l2, c.w_ang_vel_xy),
        "orientation": r(mdp.flat_orientation_l2, c.w_orientation),
        "torques": r(mdp.joint_torques_l2, c.w_torques),
        "joint_acc": r(mdp.joint_acc_l2, c.w_joint_acc),
        "action_rate": r(mdp.action_rate_l2, c.w_action_rate),
        "joint_limits": r(mdp.joint_pos_limits, c.w_joint_limits),
        "feet_air_time": r(
            mdp.feet_air_time,
            c.w_feet_air_time,
            contact=Ref("foot_contact"),
            air_time=Ref("air_time"),
            threshold=c.air_time_threshold,
            command_threshold=AIR_TIME_COMMAND_THRESHOLD,
        ),
        "joint_deviation": r(mdp.joint_deviation_l1, c.w_joint_deviation, weights=deviation),
        "termination": r(mdp.is_terminated, c.w_termination),
    }


def terminations(robot: RobotConfig) -> dict[str, TerminationTerm]:
    """A termination body touches the ground, the base tilts beyond `max_tilt` or sinks
    below `min_base_height`; the time limit is the env's."""
    return {
        "body_contact": TerminationTerm(
            func=mdp.body_ground_contact, params={"contact": Ref("bad_contact")}
        ),
        "bad_orientation": TerminationTerm(
            func=mdp.bad_orientation, params={"limit_angle": robot.max_tilt}
        ),
        "base_height": TerminationTerm(
            func=mdp.root_height_below_minimum, params={"minimum_height": robot.min_base_height}
        ),
    }


def commands(c: Any) -> dict[str, CommandTerm]:
    """The command "twist": (vx, vy, yaw rate) uniform in +-bound per axis, the bound scaled
    by the curriculum level from `command_bounds` to `command_bounds_max` (without a
    curriculum: `command_bounds_max`), a `standing_prob` share zero, redrawn every
    `resample_s`."""
    bound = c.command_bounds if c.curriculum else c.command_bounds_max
    params = {"bound": bound, "bound_max": c.command_bounds_max}
    params["rel_standing_envs"] = c.standing_prob
    return {
        "twist": CommandTerm(
            func=mdp.level_velocity_command,
            params=params,
            resampling_time_range=(c.resample_s, c.resample_s),
        )
    }


def events(c: Any, robot: RobotConfig) -> dict[str, EventTerm]:
    """The reset: the base at `robot.init_height` above the origin, upright at a uniform yaw,
    at velocities uniform in +-`reset_lin_vel` (world frame) and +-`reset_ang_vel` (base
    frame) per axis; the joints at the default pose plus uniform +-`reset_joint_noise`,
    clamped to their range, at rest."""
    lin, ang = (-c.reset_lin_vel, c.reset_lin_vel), (-c.reset_ang_vel, c.reset_ang_vel)
    base = {"pose_yaw": (-math.pi, math.pi), "height": robot.init_height}
    base |= {"velocity_x": lin, "velocity_y": lin, "velocity_z": lin}
    base |= {"velocity_roll": ang, "velocity_pitch": ang, "velocity_yaw": ang}
    base["body_frame_ang_vel"] = 1
    joints = {"position_range": (-c.reset_joint_noise, c.reset_joint_noise), "soft_limits": 0}
    return {
        "reset_base": EventTerm(func=mdp.reset_root_state_uniform, mode="reset", params=base),
        "reset_joints": EventTerm(func=mdp.reset_joints_by_offset, mode="reset", params=joints),
    }


def task_terms(c: Any, robot: RobotConfig) -> dict[str, Any]:
    """The observation groups, rewards, terminations, commands and events with the config's
    overrides (`rewards`, `observations`, `terminations`, `commands`, `events`: term objects
    or plain data, `unilab_envs.terms.overrides`) applied."""
    return {
        "observations": merge_groups(observations(c, robot), c.observations),
        "rewards": merge_terms("rewards", rewards(c, robot), c.rewards),
        "terminations": merge_terms("terminations", terminations(robot), c.terminations),
        "commands": merge_terms("commands", commands(c), c.commands),
        "events": merge_terms("events", events(c, robot), c.events),
    }
