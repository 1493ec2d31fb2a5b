"""`MjlabVelocityConfig`: the options of MJLab's velocity tasks (`tasks/mjlab_velocity.py`),
and the robots' option sets: `g1_flat_config`, `go1_rough_config`, `g1_rough_config`."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import mujoco

from unilab_envs.tasks.robots import RobotConfig
from unilab_envs.terrain import GridPattern, RingPattern, TerrainConfig, TerrainGeometry

__all__ = ["MjlabVelocityConfig", "g1_flat_config", "g1_rough_config", "go1_rough_config"]

_pair = attrs.converters.pipe(tuple, lambda v: tuple(float(x) for x in v))
# the contact sensors' primary object per `foot_contact_mode` (and "subtree" for bodies)
CONTACT_OBJECTS = {"geom": mujoco.mjtObj.mjOBJ_GEOM, "subtree": mujoco.mjtObj.mjOBJ_XBODY}


def _terrain_config(value: Any) -> TerrainConfig | TerrainGeometry | None:
    if value is None or isinstance(value, (TerrainConfig, TerrainGeometry)):
        return value
    if isinstance(value, (str, Path)):
        return TerrainGeometry.load(value)  # a file TerrainGeometry.save wrote
    if not isinstance(value, Mapping):
        raise TypeError(
            "terrain must be a TerrainConfig, a mapping of its fields, a TerrainGeometry, "
            f"the path of a saved TerrainGeometry (.npz) or None, not {value!r}"
        )
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in value.items()}
    return attrs.evolve(TerrainConfig(), **fields)


def _stages(value) -> tuple[tuple[int, tuple[float, float], tuple[float, float]], ...]:
    return tuple((int(s), tuple(map(float, x)), tuple(map(float, z))) for s, x, z in value)


@attrs.frozen(kw_only=True)
class MjlabVelocityConfig:
    """MJLab's velocity task options (defaults: Go1 flat); variants via `attrs.evolve`.

    Per-joint values (`pose_std_*`) are in the robot's joint order. Weights are MJLab's
    (per second; the reward multiplies by step_dt); a term of weight 0 is neither computed
    into the reward nor logged, as MJLab skips it.
    """

    decimation: int = 4
    physics_dt: float = 0.005
    episode_length_s: float = 20.0
    # robot parts (names in the MJCF)
    # feet_ground_contact primaries, one per foot: geoms, or bodies whose subtrees count
    foot_contacts: tuple[str, ...] = (
        "FR_foot_collision",
        "FL_foot_collision",
        "RR_foot_collision",
        "RL_foot_collision",
    )
    foot_contact_mode: str = attrs.field(
        default="geom", validator=attrs.validators.in_(tuple(CONTACT_OBJECTS))
    )
    foot_sites: tuple[str, ...] = ("FR", "FL", "RR", "RL")
    upright_body: str = "trunk"
    ang_vel_body: str = "trunk"
    angmom_sensor: str = "root_angmom"  # read only when w_angular_momentum != 0
    imu_gyro: str = "imu_ang_vel"
    imu_velocimeter: str = "imu_lin_vel"
    soft_joint_limit_factor: float = 0.9
    # twist command
    resampling_time_range: tuple[float, float] = attrs.field(default=(3.0, 8.0), converter=_pair)
    rel_standing_envs: float = 0.1
    rel_heading_envs: float = 0.3
    rel_forward_envs: float = 0.2
    forward_min: float = 0.3
    heading_command: bool = True
    heading_control_stiffness: float = 0.5
    lin_vel_y: tuple[float, float] = attrs.field(default=(-1.0, 1.0), converter=_pair)
    heading_range: tuple[float, float] = attrs.field(default=(-math.pi, math.pi), converter=_pair)
    # command curriculum (commands_vel): (env step, lin_vel_x, ang_vel_z) per stage
    command_stages: tuple = attrs.field(
        default=(
            (0, (-1.0, 1.0), (-0.5, 0.5)),
            (5000 * 24, (-1.5, 2.0), (-0.7, 0.7)),
            (10000 * 24, (-2.0, 3.0), (-0.7, 0.7)),
        ),
        converter=_stages,
    )
    # rewards
    w_track_linear_velocity: float = 2.0
    std_track_linear_velocity: float = math.sqrt(0.25)
    w_track_angular_velocity: float = 2.0
    std_track_angular_velocity: float = math.sqrt(0.5)
    w_upright: float = 1.0
    std_upright: float = math.sqrt(0.2)
    w_pose: float = 1.0
    pose_std_standing: tuple[float, ...] = (0.05, 0.05, 0.1) * 4
    pose_std_walking: tuple[float, ...] = (0.3, 0.3, 0.6) * 4
    pose_std_running: tuple[float, ...] = (0.3, 0.3, 0.6) * 4
    walking_threshold: float = 0.05
    running_threshold: float = 1.5
    w_body_ang_vel: float = 0.0
    w_angular_momentum: float = 0.0
    w_dof_pos_limits: float = -1.0
    w_action_rate_l2: float = -0.1
    w_foot_clearance: float = -2.0
    foot_clearance_target: float = 0.1
    foot_clearance_command_threshold: float = 0.05
    w_foot_swing_height: float = -0.25
    foot_swing_target: float = 0.1
    foot_swing_command_threshold: float = 0.05
    w_foot_slip: float = -0.1
    foot_slip_command_threshold: float = 0.05
    w_soft_landing: float = -1e-5
    soft_landing_command_threshold: float = 0.05
    foot_height_max_distance: float = 1.0
    # self_collisions: substeps of the last `self_collision_history` with a contact force above
    # the threshold between two geoms of `self_collision_subtree`'s subtree (None: off)
    w_self_collisions: float = 0.0
    self_collision_subtree: str | None = None
    self_collision_threshold: float = 10.0
    self_collision_history: int = 4
    # termination
    fell_over_limit_angle: float = math.radians(70.0)
    # events
    reset_pose_x: tuple[float, float] = attrs.field(default=(-0.5, 0.5), converter=_pair)
    reset_pose_y: tuple[float, float] = attrs.field(default=(-0.5, 0.5), converter=_pair)
    reset_pose_z: tuple[float, float] = attrs.field(default=(0.01, 0.05), converter=_pair)
    reset_pose_yaw: tuple[float, float] = attrs.field(default=(-3.14, 3.14), converter=_pair)
    push_interval_s: tuple[float, float] = attrs.field(default=(1.0, 3.0), converter=_pair)
    push_lin_vel: tuple[float, float, float] = (0.5, 0.5, 0.4)
    push_ang_vel: tuple[float, float, float] = (0.52, 0.52, 0.78)
    # startup friction of `friction_geoms` per axis (slide, spin, roll); axes not drawn keep
    # the geom's value
    friction_geoms: tuple[str, ...] = (
        "FR_foot_collision",
        "FL_foot_collision",
        "RR_foot_collision",
        "RL_foot_collision",
    )
    foot_friction: tuple[tuple[float, float], ...] = ((0.3, 1.5), (1e-4, 2e-2), (1e-5, 5e-3))
    foot_friction_log_uniform: tuple[bool, bool, bool] = (False, True, True)
    foot_friction_axes: tuple[bool, bool, bool] = (True, True, True)
    com_body: str = "trunk"
    com_offset: tuple[tuple[float, float], ...] = ((-0.025, 0.025), (-0.025, 0.025), (-0.03, 0.03))
    encoder_bias: tuple[float, float] = attrs.field(default=(-0.015, 0.015), converter=_pair)
    # observation noise (MJLab's actor group corruption)
    obs_noise: bool = True
    noise_lin_vel: float = 0.5
    noise_ang_vel: float = 0.2
    noise_gravity: float = 0.05
    noise_joint_pos: float = 0.01
    noise_joint_vel: float = 1.5
    # ---- rough terrain (MJLab's rough tasks; None: flat, a plane at z = 0) ----
    # A TerrainConfig generates the grid (a mapping of its fields, e.g. from a JSON config,
    # is converted); a TerrainGeometry (or the path of one saved) is a given terrain, added
    # as it is: its geoms, heightfields and layout replace the generated ones.
    terrain: TerrainConfig | TerrainGeometry | None = attrs.field(
        default=None, converter=_terrain_config
    )
    # curriculum: initial levels uniform in [0, max_init_terrain_level] (None: every row)
    max_init_terrain_level: int | None = 5
    # terrain_scan: rays under `terrain_scan_body` (policy and critic `height_scan`:
    # (body z - hit z) / max_distance, actor noise +-noise_height_scan before the scale)
    terrain_scan_body: str = "trunk"
    terrain_scan: GridPattern = attrs.field(factory=GridPattern)
    noise_height_scan: float = 0.1
    # foot_height_scan: rays around each foot site (None on flat: clamp(site z, 0, max))
    foot_scan: RingPattern | None = None
    # upright against the plane fitted to terrain_scan's hits (Go1 rough)
    upright_terrain_normal: bool = False
    terrain_normal_points: int = 32
    out_of_bounds_margin: float = 0.3
    fell_over: bool = True  # bad_orientation terminates (Go1 rough: off)
    # ground-touch sensors (each geom against the terrain body, force history of
    # `self_collision_history` substeps): shank_collision, trunk_head_collision penalties
    # (self_collision_cost, `touch_force_threshold`) and the illegal_contact termination
    shank_geoms: tuple[str, ...] = ()
    w_shank_collision: float = 0.0
    trunk_head_geoms: tuple[str, ...] = ()
    w_trunk_head_collision: float = 0.0
    illegal_contact_geoms: tuple[str, ...] = ()
    touch_force_threshold: float = 10.0
    illegal_contact_threshold: float = 10.0
    # simulation overrides of the robot's (None: keep): MJLab's rough ccd_iterations,
    # nconmax, njmax
    ccd_iterations: int | None = None
    nconmax: int | None = None
    njmax: int | None = None
    # MuJoCo Warp's broadphase (`TaskSpec.broadphase`; None: MuJoCo Warp's choice, as MJLab's
    # SimulationCfg.broadphase=None)
    broadphase: str | None = None
    # ---- the user's term overrides (`unilab_envs.terms.overrides`): {name: RewardTerm, a
    # mapping of fields to change or, with a func, a new term (plain data: {"weight": 2.0}),
    # or None (removes it)}; observations {group: {name: ...}} (new terms go at the end of
    # the group); terminations, commands ("twist"), events ("reset_base",
    # "reset_robot_joints", "push_robot", "foot_friction", "base_com", "encoder_bias") and
    # curricula (rough: "terrain_levels") as rewards.
    rewards: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    observations: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict, converter=dict)
    terminations: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    commands: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    events: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    curricula: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)

    @property
    def num_scan(self) -> int:
        """Height-scan rays in the observations (0 on flat)."""
        return 0 if self.terrain is None else len(self.terrain_scan.offsets())

    @property
    def step_dt(self) -> float:
        return self.physics_dt * self.decimation

    @property
    def max_episode_steps(self) -> int:
        return math.ceil(self.episode_length_s / self.step_dt - 1e-9)  # MJLab: ceil


# config/g1/env_cfgs.py: pose std per joint pattern (re.fullmatch, as MJLab's
# resolve_matching_names_values); std_standing is 0.05 for every joint.
_G1_STD_WALKING = {
    r".*hip_pitch.*": 0.3, r".*hip_roll.*": 0.15, r".*hip_yaw.*": 0.15, r".*knee.*": 0.35,
    r".*ankle_pitch.*": 0.25, r".*ankle_roll.*": 0.1, r".*waist_yaw.*": 0.2,
    r".*waist_roll.*": 0.08, r".*waist_pitch.*": 0.1, r".*shoulder_pitch.*": 0.15,
    r".*shoulder_roll.*": 0.15, r".*shoulder_yaw.*": 0.1, r".*elbow.*": 0.15, r".*wrist.*": 0.3,
}  # fmt: skip
_G1_STD_RUNNING = {
    r".*hip_pitch.*": 0.5, r".*hip_roll.*": 0.2, r".*hip_yaw.*": 0.2, r".*knee.*": 0.6,
    r".*ankle_pitch.*": 0.35, r".*ankle_roll.*": 0.15, r".*waist_yaw.*": 0.3,
    r".*waist_roll.*": 0.08, r".*waist_pitch.*": 0.2, r".*shoulder_pitch.*": 0.5,
    r".*shoulder_roll.*": 0.2, r".*shoulder_yaw.*": 0.15, r".*elbow.*": 0.35, r".*wrist.*": 0.3,
}  # fmt: skip


def _per_joint(joints: tuple[str, ...], table: Mapping[str, float]) -> tuple[float, ...]:
    """One value per joint from {pattern: value}; each joint must match exactly one pattern."""
    out = []
    for joint in joints:
        hits = [v for pattern, v in table.items() if re.fullmatch(pattern, joint)]
        if len(hits) != 1:
            raise ValueError(f"joint {joint!r} matches {len(hits)} patterns of {sorted(table)}")
        out.append(float(hits[0]))
    return tuple(out)


def g1_flat_config(robot: RobotConfig, **overrides) -> MjlabVelocityConfig:
    """`Mjlab-Velocity-Flat-Unitree-G1`'s options (config/g1/env_cfgs.py) for `robot`'s joints;
    `overrides` are `MjlabVelocityConfig` fields."""
    joints = tuple(robot.joint_names)
    fields: dict[str, Any] = {
        "foot_contacts": ("left_ankle_roll_link", "right_ankle_roll_link"),
        "foot_contact_mode": "subtree",
        "foot_sites": ("left_foot", "right_foot"),
        "upright_body": "torso_link",
        "ang_vel_body": "torso_link",
        "pose_std_standing": (0.05,) * len(joints),
        "pose_std_walking": _per_joint(joints, _G1_STD_WALKING),
        "pose_std_running": _per_joint(joints, _G1_STD_RUNNING),
        "w_body_ang_vel": -0.05,
        "w_angular_momentum": -0.02,
        "w_self_collisions": -1.0,
        "self_collision_subtree": "pelvis",
        "friction_geoms": tuple(
            f"{side}_foot{i}_collision" for side in ("left", "right") for i in range(1, 8)
        ),
        # the base foot_friction event: "abs" 0.3-1.2 on the slide axis (geom_friction's
        # default axes), shared by the 14 foot geoms
        "foot_friction": ((0.3, 1.2), (0.0, 0.0), (0.0, 0.0)),
        "foot_friction_log_uniform": (False, False, False),
        "foot_friction_axes": (True, False, False),
        "com_body": "torso_link",
    }
    fields.update(overrides)
    return MjlabVelocityConfig(**fields)


# --------------------------------------------------------------------------- rough terrain
_GO1_LEGS = ("FR", "FL", "RR", "RL")


def _rough_fields() -> dict[str, Any]:
    """What every robot's rough task adds to its flat one (velocity_env_cfg.py): the
    terrain generator, terrain_scan, out_of_terrain_bounds, terrain_levels_vel and MJLab's
    rough simulation settings (ccd_iterations 500, njmax 1500)."""
    return {"terrain": TerrainConfig(), "ccd_iterations": 500, "njmax": 1500}


def go1_rough_config(**overrides) -> MjlabVelocityConfig:
    """`Mjlab-Velocity-Rough-Unitree-Go1`'s options (config/go1/env_cfgs.py,
    unitree_go1_rough_env_cfg); `overrides` are `MjlabVelocityConfig` fields."""
    fields: dict[str, Any] = {
        **_rough_fields(),
        "terrain_scan_body": "trunk",
        "foot_scan": RingPattern(radius=0.04, num_samples=4, max_distance=1.0),
        "upright_terrain_normal": True,
        "fell_over": False,  # on rough terrain Go1 tilts; out_of_terrain_bounds resets it
        "w_self_collisions": -0.1,
        "self_collision_subtree": "trunk",
        "shank_geoms": tuple(f"{leg}_calf_collision{i}" for leg in _GO1_LEGS for i in (1, 2)),
        "w_shank_collision": -0.1,
        "trunk_head_geoms": ("trunk_collision", "head_collision"),
        "w_trunk_head_collision": -0.1,
        "illegal_contact_geoms": tuple(
            f"{leg}_thigh_collision{i}" for leg in _GO1_LEGS for i in (1, 2, 3)
        ),
        "nconmax": 35,
    }
    fields.update(overrides)
    return MjlabVelocityConfig(**fields)


def g1_rough_config(robot: RobotConfig, **overrides) -> MjlabVelocityConfig:
    """`Mjlab-Velocity-Rough-Unitree-G1`'s options (config/g1/env_cfgs.py,
    unitree_g1_rough_env_cfg) for `robot`'s joints; `overrides` are config fields."""
    fields: dict[str, Any] = {
        **_rough_fields(),
        "terrain_scan_body": "pelvis",
        "foot_scan": RingPattern(radius=0.03, num_samples=6, max_distance=1.0),
        "nconmax": 70,
    }
    fields.update(overrides)
    return g1_flat_config(robot, **fields)
