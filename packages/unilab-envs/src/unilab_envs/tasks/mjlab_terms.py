"""MJLab 1.6.0's velocity MDP as term dicts over `unilab_envs.mdp` (velocity_env_cfg.py and
config/{go1,g1}/env_cfgs.py): the observation groups, rewards, terminations, commands and
events of `{go1,g1}-velocity-{flat,rough}`, from a `MjlabVelocityConfig` and the indices of
its compiled model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from unilab_envs import mdp
from unilab_envs.mdp import terrain as ter
from unilab_envs.mdp import velocity as vel
from unilab_envs.terms import (
    Bodies,
    CommandTerm,
    CurriculumTerm,
    EventTerm,
    ObservationGroup,
    ObservationTerm,
    Ref,
    RewardTerm,
    Sensors,
    TerminationTerm,
    UniformNoise,
)
from unilab_envs.terms.overrides import merge_groups, merge_terms

# Arrays of the task that the terms read and write, by `Ref` name (also "touch_force",
# "env_step", "terrain_origin", "geom_friction", "body_ipos"; rough: "scan_pnt", "scan_vec",
# "scan_dist", "scan_heights", and the `TerrainLevels` arrays "terrain_levels",
# "terrain_outcomes", "terrain_table", "terrain_types").
TASK_ARRAYS = ("air_time", "contact_time", "foot_height", "peak_height", "self_collision_force")
# The contact sensors' state a reset zeroes (MJLab's ContactSensor.reset).
SENSOR_STATE = ("air_time", "contact_time", "self_collision_force", "touch_force")


def _noise(value: float) -> UniformNoise | None:
    return UniformNoise(-value, value) if value > 0.0 else None


def observations(c: Any, num_feet: int, feet: Mapping[str, Any]) -> dict[str, ObservationGroup]:
    """ "policy" (noisy, biased joint positions) and "critic" (exact, plus the feet)."""

    def common(noisy: bool) -> dict[str, ObservationTerm]:
        def obs(func, noise: float = 0.0, **params) -> ObservationTerm:
            return ObservationTerm(func=func, params=params, noise=_noise(noise) if noisy else None)

        terms = {
            "base_lin_vel": obs(mdp.builtin_sensor, c.noise_lin_vel, sensor=Sensors(c.imu_velocimeter)),
            "base_ang_vel": obs(mdp.builtin_sensor, c.noise_ang_vel, sensor=Sensors(c.imu_gyro)),
            "projected_gravity": obs(mdp.projected_gravity, c.noise_gravity),
            "joint_pos": obs(mdp.joint_pos_rel, c.noise_joint_pos, biased=int(noisy)),
            "joint_vel": obs(mdp.joint_vel_rel, c.noise_joint_vel),
            "actions": obs(mdp.last_action),
            "command": obs(mdp.generated_commands),
        }  # fmt: skip
        if c.terrain is not None:  # (body z - hit z) / max_distance
            terms["height_scan"] = ObservationTerm(
                func=ter.height_scan, params={"heights": Ref("scan_heights")}, size=c.num_scan,
                scale=1.0 / c.terrain_scan.max_distance,
                noise=_noise(c.noise_height_scan) if noisy else None,
            )  # fmt: skip
        return terms

    critic = {
        **common(noisy=False),
        "foot_height": ObservationTerm(func=vel.foot_height, params=feet),
        "foot_air_time": ObservationTerm(
            func=vel.foot_air_time, params={"time": Ref("air_time")}, size=num_feet
        ),
        "foot_contact": ObservationTerm(func=vel.foot_contact, params=feet),
        "foot_contact_forces": ObservationTerm(
            func=vel.foot_contact_forces, params=feet, size=3 * num_feet
        ),
    }
    return {
        "policy": ObservationGroup(terms=common(noisy=True), enable_corruption=c.obs_noise),
        "critic": ObservationGroup(terms=critic),
    }


def rewards(c: Any, feet: Mapping[str, Any], normal_idx: Any) -> dict[str, RewardTerm]:
    """MJLab's reward terms in its order (the terms of weight 0 are dropped when compiled)."""

    def foot(threshold: float, target: float = 0.0) -> dict[str, Any]:
        return {**feet, "command_threshold": threshold, "target": target}

    def r(func, weight: float, **params) -> RewardTerm:
        return RewardTerm(func=func, weight=weight, params=params)

    joints = np.asarray
    upright = r(mdp.upright, c.w_upright, std=c.std_upright, body=Bodies(c.upright_body))
    if c.terrain is not None and c.upright_terrain_normal:  # against the plane under the base
        upright = r(
            ter.upright_on_terrain, c.w_upright, std=c.std_upright, body=Bodies(c.upright_body),
            pnt=Ref("scan_pnt"), vec=Ref("scan_vec"), dist=Ref("scan_dist"),
            idx=normal_idx, max_distance=c.terrain_scan.max_distance,
        )  # fmt: skip
    shank, trunk_head = len(c.shank_geoms), len(c.shank_geoms) + len(c.trunk_head_geoms)
    return {
        "track_linear_velocity": r(
            mdp.track_linear_velocity, c.w_track_linear_velocity, std=c.std_track_linear_velocity
        ),
        "track_angular_velocity": r(
            mdp.track_angular_velocity, c.w_track_angular_velocity, std=c.std_track_angular_velocity
        ),
        "upright": upright,
        "pose": r(
            vel.variable_posture, c.w_pose,
            std_standing=joints(c.pose_std_standing), std_walking=joints(c.pose_std_walking),
            std_running=joints(c.pose_std_running), walking_threshold=c.walking_threshold,
            running_threshold=c.running_threshold,
        ),
        "body_ang_vel": r(
            vel.body_angular_velocity_penalty, c.w_body_ang_vel, body=Bodies(c.ang_vel_body)
        ),
        "angular_momentum": r(
            vel.angular_momentum_penalty, c.w_angular_momentum, sensor=Sensors(c.angmom_sensor)
        ),
        "dof_pos_limits": r(mdp.joint_pos_limits, c.w_dof_pos_limits),
        "action_rate_l2": r(mdp.action_rate_l2, c.w_action_rate_l2),
        "foot_clearance": r(
            vel.feet_clearance, c.w_foot_clearance,
            **foot(c.foot_clearance_command_threshold, c.foot_clearance_target),
        ),
        "foot_swing_height": r(
            vel.feet_swing_height, c.w_foot_swing_height,
            **foot(c.foot_swing_command_threshold, c.foot_swing_target),
        ),
        "foot_slip": r(vel.feet_slip, c.w_foot_slip, **foot(c.foot_slip_command_threshold)),
        "soft_landing": r(
            vel.soft_landing, c.w_soft_landing, **foot(c.soft_landing_command_threshold)
        ),
        "self_collisions": r(
            vel.self_collision_cost, c.w_self_collisions,
            history=Ref("self_collision_force"), force_threshold=c.self_collision_threshold,
        ),
        "shank_collision": r(
            ter.ground_contact_cost, c.w_shank_collision, touch=Ref("touch_force"), first=0,
            last=shank, force_threshold=c.touch_force_threshold,
        ),
        "trunk_head_collision": r(
            ter.ground_contact_cost, c.w_trunk_head_collision, touch=Ref("touch_force"),
            first=shank, last=trunk_head, force_threshold=c.touch_force_threshold,
        ),
    }  # fmt: skip


def terminations(c: Any, bounds: tuple[float, float] | None) -> dict[str, TerminationTerm]:
    """fell_over, rough: illegal_contact (thigh touches), out_of_terrain_bounds (a time-out
    past `bounds`, the largest |x|, |y|); the time limit is the env's."""
    out = {}
    if c.fell_over:
        out["fell_over"] = TerminationTerm(
            func=mdp.bad_orientation, params={"limit_angle": c.fell_over_limit_angle}
        )
    if c.illegal_contact_geoms:
        first = len(c.shank_geoms) + len(c.trunk_head_geoms)
        params = {"touch": Ref("touch_force"), "first": first}
        params["last"] = first + len(c.illegal_contact_geoms)
        params["force_threshold"] = c.illegal_contact_threshold
        out["illegal_contact"] = TerminationTerm(func=ter.illegal_contact, params=params)
    if bounds is not None:
        out["out_of_terrain_bounds"] = TerminationTerm(
            func=ter.out_of_terrain_bounds,
            params={"limit_x": bounds[0], "limit_y": bounds[1]},
            time_out=True,
        )
    return out


def commands(c: Any) -> dict[str, CommandTerm]:
    """MJLab's `twist` (UniformVelocityCommand), its lin_vel_x / ang_vel_z ranges by the
    `command_stages` of MJLab's commands_vel curriculum."""
    params = {
        "lin_vel_x": [x for _, x, _ in c.command_stages],
        "ang_vel_z": [z for _, _, z in c.command_stages],
        "stage_step": [step for step, _, _ in c.command_stages],
        "env_step": Ref("env_step"),
        "lin_vel_y": c.lin_vel_y,
        "heading": c.heading_range,
        "heading_command": int(c.heading_command),
        "heading_control_stiffness": c.heading_control_stiffness,
        "rel_standing_envs": c.rel_standing_envs,
        "rel_heading_envs": c.rel_heading_envs,
        "rel_forward_envs": c.rel_forward_envs,
        "forward_min": c.forward_min,
    }
    twist = CommandTerm(
        func=mdp.uniform_velocity_command,
        params=params,
        resampling_time_range=c.resampling_time_range,
    )
    return {"twist": twist}


def events(c: Any, init_height: float, host: Mapping[str, Any]) -> dict[str, EventTerm]:
    """MJLab's events in its order: reset_base, reset_robot_joints, push_robot, then the
    startup draws foot_friction, base_com, encoder_bias (`host`: the model indices)."""
    lo = tuple(a for a, _ in c.foot_friction)
    hi = tuple(b for _, b in c.foot_friction)
    return {
        "reset_base": EventTerm(
            func=mdp.reset_root_state_uniform, mode="reset",
            params={
                "pose_x": c.reset_pose_x, "pose_y": c.reset_pose_y, "pose_z": c.reset_pose_z,
                "pose_yaw": c.reset_pose_yaw, "height": init_height,
                "origin": Ref("terrain_origin"),
            },
        ),
        "reset_robot_joints": EventTerm(func=mdp.reset_joints_by_offset, mode="reset"),
        "push_robot": EventTerm(
            func=mdp.push_by_setting_velocity, mode="interval",
            interval_range_s=c.push_interval_s,
            params={"lin_vel": c.push_lin_vel, "ang_vel": c.push_ang_vel},
        ),
        "foot_friction": EventTerm(
            func=mdp.geom_friction, mode="startup",
            params={
                "geoms": host["friction_geom"], "low": lo, "high": hi,
                "log_uniform": tuple(int(x) for x in c.foot_friction_log_uniform),
                "axes": tuple(int(x) for x in c.foot_friction_axes),
                "geom_friction": Ref("geom_friction"),
            },
        ),
        "base_com": EventTerm(
            func=mdp.body_com_offset, mode="startup",
            params={
                "body": Bodies(c.com_body), "low": tuple(a for a, _ in c.com_offset),
                "high": tuple(b for _, b in c.com_offset), "body_ipos": Ref("body_ipos"),
            },
        ),
        "encoder_bias": EventTerm(
            func=mdp.encoder_bias, mode="startup",
            params={"low": c.encoder_bias[0], "high": c.encoder_bias[1]},
        ),
    }  # fmt: skip


def curricula(levels: Any) -> dict[str, CurriculumTerm]:
    """Rough: MJLab's `terrain_levels` (terrain_levels_vel) over the task's `TerrainLevels`
    (`levels`; None on flat: no curriculum term)."""
    if levels is None:
        return {}
    params = {
        name: Ref(f"terrain_{name}") for name in ("levels", "origin", "outcomes", "table", "types")
    }
    params |= {"env_step": Ref("env_step"), "half_tile": levels.half_tile}
    params["half_episode_s"] = 0.5 * levels.episode_length_s
    return {"terrain_levels": CurriculumTerm(func=mdp.terrain_levels_vel, params=params)}


def feet_params(c: Any, host: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """The feet of `FootParams` from the task's model indices (`host`)."""
    return {
        "site": host["foot_site"],
        "body": host["foot_body"],
        "found": host["found_adr"],
        "force": host["force_adr"],
        "contact_time": Ref("contact_time"),
        "height": Ref("foot_height"),
        "peak": Ref("peak_height"),
        "command_threshold": 0.0,
        "target": 0.0,
        # flat (or no foot scan): the site height on the plane z = 0; else the scan's
        "max_height": c.foot_height_max_distance
        if c.terrain is None or c.foot_scan is None
        else 0.0,
    }


def task_terms(
    c: Any,
    num_feet: int,
    feet: Mapping[str, Any],
    host: Mapping[str, Any],
    init_height: float,
    bounds: tuple[float, float] | None = None,
    levels: Any = None,
) -> dict[str, Any]:
    """The task's observation groups, rewards, terminations, commands, events and curricula
    with the config's overrides (`rewards`, `observations`, `terminations`, `commands`,
    `events`, `curricula`: term objects or plain data, `unilab_envs.terms.overrides`)
    applied: the keyword arguments of `CompiledTerms`."""
    normal_idx = host.get("normal_idx")
    return {
        "observations": merge_groups(observations(c, num_feet, feet), c.observations),
        "rewards": merge_terms("rewards", rewards(c, feet, normal_idx), c.rewards),
        "terminations": merge_terms("terminations", terminations(c, bounds), c.terminations),
        "commands": merge_terms("commands", commands(c), c.commands),
        "events": merge_terms("events", events(c, init_height, host), c.events),
        "curricula": merge_terms("curricula", curricula(levels), c.curricula),
    }
