"""The library of terms (MJLab 1.6.0's names): `warp.func`s over `unilab_envs.terms.EnvState`
for observations, rewards, terminations, commands, events and curricula. `get(name)` finds one
by name; `LIBRARY` lists them as {name: (kind, function)}.

Besides the terms, the kernels a task launches itself: the joint-position action
(`mdp.actions`) and the contact sensors and env step counter whose arrays terms read
(`mdp.sensors`).
"""

from __future__ import annotations

from typing import Any

from unilab_envs.mdp import commands as _cmd
from unilab_envs.mdp import events as _ev
from unilab_envs.mdp import observations as _obs
from unilab_envs.mdp import rewards as _rew
from unilab_envs.mdp import terminations as _term
from unilab_envs.mdp import terrain as _ter
from unilab_envs.mdp import velocity as _vel
from unilab_envs.mdp.actions import apply_joint_position_action as apply_joint_position_action
from unilab_envs.mdp.actions import joint_position_action as joint_position_action
from unilab_envs.mdp.commands import LevelVelocityCommandParams as LevelVelocityCommandParams
from unilab_envs.mdp.commands import UniformVelocityCommandParams as UniformVelocityCommandParams
from unilab_envs.mdp.commands import level_velocity_command as level_velocity_command
from unilab_envs.mdp.commands import uniform_velocity_command as uniform_velocity_command
from unilab_envs.mdp.events import ComOffsetParams as ComOffsetParams
from unilab_envs.mdp.events import EncoderBiasParams as EncoderBiasParams
from unilab_envs.mdp.events import GeomFrictionParams as GeomFrictionParams
from unilab_envs.mdp.events import JointOffsetParams as JointOffsetParams
from unilab_envs.mdp.events import PushParams as PushParams
from unilab_envs.mdp.events import RootStateParams as RootStateParams
from unilab_envs.mdp.events import body_com_offset as body_com_offset
from unilab_envs.mdp.events import encoder_bias as encoder_bias
from unilab_envs.mdp.events import geom_friction as geom_friction
from unilab_envs.mdp.events import push_by_setting_velocity as push_by_setting_velocity
from unilab_envs.mdp.events import reset_joints_by_offset as reset_joints_by_offset
from unilab_envs.mdp.events import reset_root_state_uniform as reset_root_state_uniform
from unilab_envs.mdp.observations import ContactFlagParams as ContactFlagParams
from unilab_envs.mdp.observations import JointPosParams as JointPosParams
from unilab_envs.mdp.observations import SensorParams as SensorParams
from unilab_envs.mdp.observations import base_ang_vel as base_ang_vel
from unilab_envs.mdp.observations import base_lin_vel as base_lin_vel
from unilab_envs.mdp.observations import base_pos_z as base_pos_z
from unilab_envs.mdp.observations import builtin_sensor as builtin_sensor
from unilab_envs.mdp.observations import foot_ground_contact as foot_ground_contact
from unilab_envs.mdp.observations import generated_commands as generated_commands
from unilab_envs.mdp.observations import joint_pos_rel as joint_pos_rel
from unilab_envs.mdp.observations import joint_vel_rel as joint_vel_rel
from unilab_envs.mdp.observations import last_action as last_action
from unilab_envs.mdp.observations import projected_gravity as projected_gravity
from unilab_envs.mdp.rewards import JointWeightParams as JointWeightParams
from unilab_envs.mdp.rewards import StdParams as StdParams
from unilab_envs.mdp.rewards import UprightParams as UprightParams
from unilab_envs.mdp.rewards import action_l2 as action_l2
from unilab_envs.mdp.rewards import action_rate_l2 as action_rate_l2
from unilab_envs.mdp.rewards import ang_vel_xy_l2 as ang_vel_xy_l2
from unilab_envs.mdp.rewards import flat_orientation_l2 as flat_orientation_l2
from unilab_envs.mdp.rewards import is_alive as is_alive
from unilab_envs.mdp.rewards import is_terminated as is_terminated
from unilab_envs.mdp.rewards import joint_acc_l2 as joint_acc_l2
from unilab_envs.mdp.rewards import joint_deviation_l1 as joint_deviation_l1
from unilab_envs.mdp.rewards import joint_pos_limits as joint_pos_limits
from unilab_envs.mdp.rewards import joint_torques_l2 as joint_torques_l2
from unilab_envs.mdp.rewards import joint_vel_l2 as joint_vel_l2
from unilab_envs.mdp.rewards import lin_vel_z_l2 as lin_vel_z_l2
from unilab_envs.mdp.rewards import track_ang_vel_z_exp as track_ang_vel_z_exp
from unilab_envs.mdp.rewards import track_angular_velocity as track_angular_velocity
from unilab_envs.mdp.rewards import track_lin_vel_xy_exp as track_lin_vel_xy_exp
from unilab_envs.mdp.rewards import track_linear_velocity as track_linear_velocity
from unilab_envs.mdp.rewards import upright as upright
from unilab_envs.mdp.sensors import ContactSensorParams as ContactSensorParams
from unilab_envs.mdp.sensors import clear_ground_contacts as clear_ground_contacts
from unilab_envs.mdp.sensors import count_env_step as count_env_step
from unilab_envs.mdp.sensors import scan_ground_contacts as scan_ground_contacts
from unilab_envs.mdp.sensors import track_contact_sensors as track_contact_sensors
from unilab_envs.mdp.terminations import ContactParams as ContactParams
from unilab_envs.mdp.terminations import LimitAngleParams as LimitAngleParams
from unilab_envs.mdp.terminations import MinimumHeightParams as MinimumHeightParams
from unilab_envs.mdp.terminations import bad_orientation as bad_orientation
from unilab_envs.mdp.terminations import body_ground_contact as body_ground_contact
from unilab_envs.mdp.terminations import root_height_below_minimum as root_height_below_minimum
from unilab_envs.mdp.terminations import time_out as time_out
from unilab_envs.mdp.terrain import BoundsParams as BoundsParams
from unilab_envs.mdp.terrain import ScanParams as ScanParams
from unilab_envs.mdp.terrain import TerrainUprightParams as TerrainUprightParams
from unilab_envs.mdp.terrain import TouchParams as TouchParams
from unilab_envs.mdp.terrain import ground_contact_cost as ground_contact_cost
from unilab_envs.mdp.terrain import height_scan as height_scan
from unilab_envs.mdp.terrain import illegal_contact as illegal_contact
from unilab_envs.mdp.terrain import out_of_terrain_bounds as out_of_terrain_bounds
from unilab_envs.mdp.terrain import upright_on_terrain as upright_on_terrain
from unilab_envs.mdp.velocity import AirTimeParams as AirTimeParams
from unilab_envs.mdp.velocity import BodyParams as BodyParams
from unilab_envs.mdp.velocity import FootParams as FootParams
from unilab_envs.mdp.velocity import ForceHistoryParams as ForceHistoryParams
from unilab_envs.mdp.velocity import PostureParams as PostureParams
from unilab_envs.mdp.velocity import TimeParams as TimeParams
from unilab_envs.mdp.velocity import VectorSensorParams as VectorSensorParams
from unilab_envs.mdp.velocity import angular_momentum_penalty as angular_momentum_penalty
from unilab_envs.mdp.velocity import body_angular_velocity_penalty as body_angular_velocity_penalty
from unilab_envs.mdp.velocity import feet_air_time as feet_air_time
from unilab_envs.mdp.velocity import feet_clearance as feet_clearance
from unilab_envs.mdp.velocity import feet_slip as feet_slip
from unilab_envs.mdp.velocity import feet_swing_height as feet_swing_height
from unilab_envs.mdp.velocity import foot_air_time as foot_air_time
from unilab_envs.mdp.velocity import foot_contact as foot_contact
from unilab_envs.mdp.velocity import foot_contact_forces as foot_contact_forces
from unilab_envs.mdp.velocity import foot_height as foot_height
from unilab_envs.mdp.velocity import self_collision_cost as self_collision_cost
from unilab_envs.mdp.velocity import soft_landing as soft_landing
from unilab_envs.mdp.velocity import variable_posture as variable_posture
from unilab_envs.terms.config import closest
from unilab_envs.terrain import levels as _lev
from unilab_envs.terrain.levels import TerrainLevelsParams as TerrainLevelsParams
from unilab_envs.terrain.levels import terrain_levels_vel as terrain_levels_vel

_NAMES = {
    "observation": (
        (_obs, ("base_lin_vel", "base_ang_vel", "projected_gravity", "joint_pos_rel",
                "joint_vel_rel", "last_action", "generated_commands", "builtin_sensor",
                "base_pos_z", "foot_ground_contact")),
        (_vel, ("foot_height", "foot_air_time", "foot_contact", "foot_contact_forces")),
        (_ter, ("height_scan",)),
    ),
    "reward": (
        (_rew, ("is_alive", "lin_vel_z_l2", "ang_vel_xy_l2", "flat_orientation_l2",
                "action_rate_l2", "action_l2", "joint_vel_l2", "joint_pos_limits",
                "track_linear_velocity", "track_angular_velocity", "upright",
                "track_lin_vel_xy_exp", "track_ang_vel_z_exp", "joint_torques_l2", "joint_acc_l2",
                "joint_deviation_l1", "is_terminated")),
        (_vel, ("variable_posture", "body_angular_velocity_penalty", "angular_momentum_penalty",
                "feet_clearance", "feet_swing_height", "feet_slip", "soft_landing",
                "self_collision_cost", "feet_air_time")),
        (_ter, ("upright_on_terrain", "ground_contact_cost")),
    ),
    "termination": (
        (_term, ("time_out", "bad_orientation", "root_height_below_minimum",
                 "body_ground_contact")),
        (_ter, ("illegal_contact", "out_of_terrain_bounds")),
    ),
    "command": ((_cmd, ("uniform_velocity_command", "level_velocity_command")),),
    "curriculum": ((_lev, ("terrain_levels_vel",)),),
    "event": (
        (_ev, ("reset_root_state_uniform", "reset_joints_by_offset", "push_by_setting_velocity",
               "geom_friction", "body_com_offset", "encoder_bias")),
    ),
}  # fmt: skip
LIBRARY: dict[str, tuple[str, Any]] = {
    name: (kind, getattr(module, name))
    for kind, parts in _NAMES.items()
    for module, names in parts
    for name in names
}


def get(name: str) -> Any:
    """The library term `name`; KeyError naming the closest names when there is none."""
    if name not in LIBRARY:
        raise closest(name, LIBRARY, "term")
    return LIBRARY[name][1]


__all__ = [
    "LIBRARY",
    "AirTimeParams",
    "BodyParams",
    "BoundsParams",
    "ComOffsetParams",
    "ContactFlagParams",
    "ContactParams",
    "ContactSensorParams",
    "EncoderBiasParams",
    "FootParams",
    "ForceHistoryParams",
    "GeomFrictionParams",
    "JointOffsetParams",
    "JointPosParams",
    "JointWeightParams",
    "LevelVelocityCommandParams",
    "LimitAngleParams",
    "MinimumHeightParams",
    "PostureParams",
    "PushParams",
    "RootStateParams",
    "ScanParams",
    "SensorParams",
    "StdParams",
    "TerrainLevelsParams",
    "TerrainUprightParams",
    "TimeParams",
    "TouchParams",
    "UniformVelocityCommandParams",
    "UprightParams",
    "VectorSensorParams",
    *LIBRARY,
    "apply_joint_position_action",
    "clear_ground_contacts",
    "count_env_step",
    "get",
    "joint_position_action",
    "scan_ground_contacts",
    "track_contact_sensors",
]
