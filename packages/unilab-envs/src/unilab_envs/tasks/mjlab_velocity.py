"""MJLab 1.6.0's velocity tasks on UniLab's env layer: `{go1,g1}-velocity-{flat,rough}`.

`go1-velocity-flat` is `Mjlab-Velocity-Flat-Unitree-Go1`, `g1-velocity-flat`
`Mjlab-Velocity-Flat-Unitree-G1`, and `*-velocity-rough` their `Mjlab-Velocity-Rough-*`
(mjlab/tasks/velocity/velocity_env_cfg.py + config/{go1,g1}/env_cfgs.py): the same observation
terms in the same order, the same command, rewards (weight x value x step_dt), terminations,
events and curricula; one task class, the robots and terrains differ only in
`MjlabVelocityConfig` (rough: `terrain` set, with MJLab's terrain grid, height scans, terrain
levels and out-of-bounds time-out). The term-by-term table, with every difference and its
reason, is docs/envs-mjlab.md; the observation, reward, termination, command and event terms
(and rough's terrain-levels curriculum) are in `tasks/mjlab_terms.py`, the action and
contact-sensor kernels in the library (`unilab_envs.mdp.actions`, `unilab_envs.mdp.sensors`).
The terms read the state as MJLab's `ManagerBasedRlEnv.step` does: rewards and terminations the
derived fields (`xmat`, `xpos`, `cvel`, `subtree_com`, `site_xpos`) the last `mujoco_warp.step`
left (one substep stale), observations after the env's `forward` (`forward_after_reset`); foot
heights are sampled at observation time and read by the next step's rewards, as MJLab's
sensor cache is.

Action: float32 [N, J] (Go1 12, G1 29 joints), unbounded (`action_bound=None`, as MJLab's):
joint target = default pose + scale * action - encoder bias.
Observations (float32; F feet: Go1 4, G1 2; S height-scan rays: 0 flat, 187 rough):
    "policy" [N, 12 + 3J + S] (Go1 48, G1 99 on flat): base_lin_vel 3 (IMU velocimeter),
        base_ang_vel 3 (IMU gyro), projected_gravity 3, joint_pos J (minus default, with the
        encoder bias), joint_vel J, actions J, command 3, rough: height_scan S ((base z - hit
        z) / 5 m); uniform noise +-0.5, 0.2, 0.05, 0.01, 1.5 on the first five, +-0.1 m on
        the height scan.
    "critic" [N, 12 + 3J + S + 6F] (Go1 72, G1 111 on flat): the same without noise and
        bias, foot_height F, foot_air_time F, foot_contact F, foot_contact_forces 3F.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import mujoco
import mujoco_warp as mjw
import numpy as np
import warp as wp

from unilab_envs._core.task import Capacity, Task, TaskContext, TaskSpec
from unilab_envs.joint_mirror import joint_mirror, mirror_name
from unilab_envs.mdp.actions import apply_joint_position_action
from unilab_envs.mdp.sensors import ContactSensorParams, count_env_step, track_contact_sensors
from unilab_envs.tasks import mjlab_terms, robots
from unilab_envs.tasks.robot_model import joint_position_info, named_ids, robot_spec
from unilab_envs.tasks.robots import RobotConfig
from unilab_envs.tasks.velocity import COMMAND_NAMES
from unilab_envs.terms import CompiledTerms, Scene, robot_state
from unilab_envs.terms.mirror import MirrorContext, MirrorMaps, name_permutation
from unilab_envs.terrain import (
    GridPattern,
    HeightScan,
    RayScene,
    RingPattern,
    TerrainConfig,
    TerrainGeometry,
    TerrainLevels,
    add_terrain,
)

__all__ = [
    "MjlabVelocityConfig",
    "MjlabVelocityTask",
    "g1_flat_config",
    "g1_rough_config",
    "go1_rough_config",
    "make_g1_velocity_flat",
    "make_g1_velocity_rough",
    "make_go1_velocity_flat",
    "make_go1_velocity_rough",
]

# Task-owned per-world state `load_state` accepts (attributes of `MjlabVelocityTask`).
_TASK_STATE = (
    "encoder_bias",
    "command",
    "air_time",
    "contact_time",
    "foot_height",
    "peak_height",
    "self_collision_force",
    "touch_force",
)
# The terms' per-world state under the names these tasks gave it before it was term state:
# the task's attribute (its name in `state_dict` ("task.<name>") and `load_state`) -> the
# term state ("<kind>.<term>.<field>", `CompiledTerms.state_arrays`). Term state not listed
# is saved as "task.terms.<kind>.<term>.<field>".
STATE_NAMES = {
    "command_time_left": "commands.twist.time_left",
    "heading_target": "commands.twist.heading_target",
    "command_flags": "commands.twist.flags",
    "push_time_left": "events.push_robot.time_left",
}

# Model fields MJWarp's `set_const` recomputes per world after the COM draw (MJLab's
# `RecomputeLevel.set_const` fields; the robots here have no tendons).
_SET_CONST_FIELDS = ("body_subtreemass", "body_invweight0", "dof_invweight0", "actuator_acc0")

_pair = attrs.converters.pipe(tuple, lambda v: tuple(float(x) for x in v))
_CONTACT_OBJ = {"geom": mujoco.mjtObj.mjOBJ_GEOM, "subtree": mujoco.mjtObj.mjOBJ_XBODY}
_GEOM, _BODY = mujoco.mjtObj.mjOBJ_GEOM, mujoco.mjtObj.mjOBJ_BODY
_FIELD_BIT = {"found": 0, "force": 1}
_REDUCE = {"none": 0, "netforce": 3}


def _contact_sensor(spec: mujoco.MjSpec, name: str, field: str, obj, ref, reduce: str) -> None:
    """A MuJoCo contact sensor as MJLab's ContactSensor makes it: one `field` ("found" or
    "force") of the contacts between `obj` and `ref` ((mjtObj, name) each), reduced by
    `reduce` ("none": the first matching contact, "netforce"), one slot."""
    spec.add_sensor(
        name=name,
        type=mujoco.mjtSensor.mjSENS_CONTACT,
        objtype=obj[0],
        objname=obj[1],
        reftype=ref[0],
        refname=ref[1],
        intprm=[1 << _FIELD_BIT[field], _REDUCE[reduce], 1],
    )


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
        default="geom", validator=attrs.validators.in_(tuple(_CONTACT_OBJ))
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


class MjlabVelocityTask(Task):
    """MJLab's velocity-tracking MDP for a robot; see the module docstring."""

    def __init__(self, robot: RobotConfig, config: MjlabVelocityConfig, name: str) -> None:
        self.robot, self.config = robot, config
        j, f = robot.num_joints, len(config.foot_contacts)
        self.layout = None
        self.levels: TerrainLevels | None = None
        if config.terrain is not None:
            # the grid (host numpy, ~0.02 s): the curriculum needs it before `build_model`
            terrain = config.terrain
            given = isinstance(terrain, TerrainGeometry)
            self.layout = terrain.layout if given else add_terrain(mujoco.MjSpec(), terrain)
            self.levels = TerrainLevels(
                self.layout,
                max_init_level=config.max_init_terrain_level,
                episode_length_s=config.episode_length_s,
                seed=config.terrain.seed,
            )
        # the observations, rewards and terminations are compiled terms (tasks/mjlab_terms.py)
        self._model: mujoco.MjModel | None = None
        self._model = self.build_model()
        # rough: out_of_terrain_bounds' largest |x|, |y| of the base (m), the grid and its
        # border less the margin; None on flat
        self.terrain_bounds: tuple[float, float] | None = None
        if config.terrain is not None:
            (ex, ey), border = self.layout.extent, config.terrain.border_width
            margin = config.out_of_bounds_margin
            self.terrain_bounds = (max(0.0, ex + border - margin), max(0.0, ey + border - margin))
        feet = mjlab_terms.feet_params(config, self._host)
        scene = Scene(mjm=self._model, joint_names=robot.joint_names, num_actions=j, command_dim=3)
        self.terms = CompiledTerms(
            scene,
            **mjlab_terms.task_terms(
                config, f, feet, self._host, robot.init_height, self.terrain_bounds, self.levels
            ),
            zero_on_reset=mjlab_terms.SENSOR_STATE,
        )
        self.spec = TaskSpec(
            name=name,
            action_dim=j,
            observation_dims=self.terms.observation_dims,
            decimation=config.decimation,
            physics_dt=config.physics_dt,
            max_episode_steps=config.max_episode_steps,
            success_threshold=0.6
            * (config.w_track_linear_velocity + config.w_track_angular_velocity)
            * config.episode_length_s,
            log_terms=self.terms.log_terms,
            capacity=Capacity(
                nconmax=config.nconmax or robot.nconmax, njmax=config.njmax or robot.njmax
            ),
            broadphase=config.broadphase,
            forward_after_reset=True,
            action_bound=None,
            # geom_friction, body_ipos: the startup draws; the rest is what MJWarp's
            # set_const derives from body_ipos (MJLab's base_com event triggers set_const).
            model_batch_fields=("geom_friction", "body_ipos", *_SET_CONST_FIELDS),
        )

    # ------------------------------------------------------------------ evaluation
    def full_range_overrides(self) -> dict[str, Any]:
        """Factory overrides that put the command at the curriculum's final stage from step 0
        (its full `lin_vel_x` / `ang_vel_z` ranges), e.g. to evaluate a policy over the whole
        command range whatever stage it was trained at: `make(name, **overrides)`."""
        _, lin_x, ang_z = self.config.command_stages[-1]
        return {"command_stages": ((0, lin_x, ang_z),)}

    def velocity_tracking(self, obs: Any) -> dict[str, Any]:
        """The command and the base velocities of an env observation (torch views of its
        noise-free "critic" group, nothing recomputed), each [N, 3] float32:

        "command": (vx, vy, yaw rate) commanded in the base's heading frame (m/s, rad/s);
        "lin_vel": the base's linear velocity in its own frame (IMU velocimeter, m/s);
        "ang_vel": the base's angular velocity in its own frame (IMU gyro, rad/s).
        """
        critic = obs["obs", "critic"]
        base = 9 + 3 * self.robot.num_joints
        return {
            "command": critic[:, base : base + 3],
            "lin_vel": critic[:, 0:3],
            "ang_vel": critic[:, 3:6],
        }

    def curriculum(self) -> TerrainLevels | None:
        """Rough tasks: MJLab's `terrain_levels_vel`, per world (`TerrainLevels`)."""
        return self.levels

    # ------------------------------------------------------------------ host side
    def build_model(self) -> mujoco.MjModel:
        if self._model is not None:
            return self._model
        c = self.config
        spec = robot_spec(self.robot, floor=c.terrain is None)
        ground = "world"
        if c.terrain is not None:
            # The view (renderer, viewer) scales with the robot, not the 100 m grid: MuJoCo's
            # statistic `extent` only sizes cameras and decorations.
            robot_extent = robot_spec(self.robot, floor=False).compile().stat.extent
            add_terrain(spec, c.terrain)  # the same grid as `self.layout` (deterministic)
            spec.stat.extent = float(robot_extent)
            # MJLab's terrain entity lights the scene with a directional "sun"
            spec.worldbody.add_light(
                name="sun", pos=[0.0, 0.0, 1.5], type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL
            )
            ground = "terrain"
        if c.ccd_iterations is not None:
            spec.option.ccd_iterations = c.ccd_iterations
        obj, body, geom = _CONTACT_OBJ[c.foot_contact_mode], _CONTACT_OBJ["subtree"], _GEOM
        for primary in c.foot_contacts:
            for field in ("found", "force"):
                # MJLab's ContactSensor: one sensor per (foot, field), secondary the ground,
                # reduce "netforce", one slot.
                name = f"feet_ground_contact_{primary}_{field}"
                _contact_sensor(spec, name, field, (obj, primary), (_BODY, ground), "netforce")
        if c.self_collision_subtree is not None:
            sub = c.self_collision_subtree
            for field in ("found", "force"):
                # MJLab's self_collision sensor: the subtree against itself, reduce "none",
                # one slot (the first matching contact).
                name = f"self_collision_{sub}_{field}"
                _contact_sensor(spec, name, field, (body, sub), (body, sub), "none")
        for g in self._touch_geoms():
            # MJLab's {shank,trunk,thigh}_ground_touch: each geom against the terrain body,
            # field "force", reduce "none", one slot.
            name = f"ground_touch_{g}_force"
            _contact_sensor(spec, name, "force", (geom, g), (_BODY, ground), "none")
        mjm = spec.compile()
        self._index(mjm)
        return mjm

    def _touch_geoms(self) -> tuple[str, ...]:
        c = self.config
        return (*c.shank_geoms, *c.trunk_head_geoms, *c.illegal_contact_geoms)

    def _index(self, mjm: mujoco.MjModel) -> None:
        r, c, path = self.robot, self.config, self.robot.mjcf
        jids = named_ids(mjm, mujoco.mjtObj.mjOBJ_JOINT, r.joint_names, "joints", path)
        self._jids = jids
        self._root = named_ids(mjm, mujoco.mjtObj.mjOBJ_BODY, [r.base_body], "bodies", path)[0]
        free = [
            i for i in range(mjm.njnt) if mjm.jnt_bodyid[i] == self._root and mjm.jnt_type[i] == 0
        ]
        if not free:
            raise ValueError(f"MJCF {path!r}: base body {r.base_body!r} has no free joint")
        self._qb, self._vb = int(mjm.jnt_qposadr[free[0]]), int(mjm.jnt_dofadr[free[0]])
        act = [
            int(np.flatnonzero((mjm.actuator_trnid[:, 0] == jid) & (mjm.actuator_trntype == 0))[0])
            for jid in jids
        ]
        sites = named_ids(mjm, mujoco.mjtObj.mjOBJ_SITE, c.foot_sites, "sites", path)
        geoms = named_ids(mjm, mujoco.mjtObj.mjOBJ_GEOM, c.friction_geoms, "geoms", path)

        def sensor(name: str) -> int:
            return int(mjm.sensor_adr[mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_SENSOR, name)])

        for name in (c.imu_gyro, c.imu_velocimeter):
            if mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_SENSOR, name) < 0:
                raise ValueError(f"MJCF {path!r} lacks the sensor {name!r}")
        self._imu = (sensor(c.imu_gyro), sensor(c.imu_velocimeter))
        self._com_body, self._upright_body, self._ang_vel_body = named_ids(
            mjm, mujoco.mjtObj.mjOBJ_BODY, [c.com_body, c.upright_body, c.ang_vel_body],
            "bodies", path,
        )  # fmt: skip
        self._angmom = -1
        if c.w_angular_momentum != 0.0:
            if mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_SENSOR, c.angmom_sensor) < 0:
                raise ValueError(f"MJCF {path!r} lacks the sensor {c.angmom_sensor!r}")
            self._angmom = sensor(c.angmom_sensor)
        self._self_force = -1
        if c.self_collision_subtree is not None:
            self._self_force = sensor(f"self_collision_{c.self_collision_subtree}_force")
        rng = mjm.jnt_range[jids].astype(np.float64)
        mid, half = rng.mean(axis=1), 0.5 * (rng[:, 1] - rng[:, 0]) * c.soft_joint_limit_factor
        f32, i32 = np.float32, np.int32
        self._host = {
            "qadr": np.asarray(mjm.jnt_qposadr[jids], i32),
            "dadr": np.asarray(mjm.jnt_dofadr[jids], i32),
            "act_id": np.asarray(act, i32),
            "default": np.asarray(r.default_pose, f32),
            "scale": np.asarray(r.per_joint("action_scale"), f32),
            "soft_lo": (mid - half).astype(f32),
            "soft_hi": (mid + half).astype(f32),
            "std_stand": np.asarray(c.pose_std_standing, f32),
            "std_walk": np.asarray(c.pose_std_walking, f32),
            "std_run": np.asarray(c.pose_std_running, f32),
            "foot_site": np.asarray(sites, i32),
            "foot_body": np.asarray(mjm.site_bodyid[sites], i32),
            "friction_geom": np.asarray(geoms, i32),
            "found_adr": np.asarray(
                [sensor(f"feet_ground_contact_{g}_found") for g in c.foot_contacts], i32
            ),
            "force_adr": np.asarray(
                [sensor(f"feet_ground_contact_{g}_force") for g in c.foot_contacts], i32
            ),
            "touch_adr": np.asarray(
                [sensor(f"ground_touch_{g}_force") for g in self._touch_geoms()], i32
            ),
        }
        if c.terrain is not None:
            self._scan_body = named_ids(
                mjm, mujoco.mjtObj.mjOBJ_BODY, [c.terrain_scan_body], "bodies", path
            )[0]
            n = c.num_scan
            # MJLab's terrain_normal_from_sensors: linspace(0, n - 1, points).long()
            idx = np.linspace(0, n - 1, min(c.terrain_normal_points, n)).astype(np.int64)
            self._host["normal_idx"] = idx.astype(i32)

    def params(self) -> ContactSensorParams:
        c = self.config
        p = ContactSensorParams()
        p.nfoot, p.physics_dt = len(c.foot_contacts), c.physics_dt
        p.self_force_adr = self._self_force
        return p

    def bind(self, ctx: TaskContext) -> None:
        dev, n, f, c = ctx.device, ctx.num_envs, len(self.config.foot_contacts), self.config
        self._a = {
            k: wp.array(v, dtype=wp.int32 if v.dtype == np.int32 else float, device=dev)
            for k, v in self._host.items()
        }
        self._p = self.params()
        self.command = wp.zeros(n, dtype=wp.vec3, device=dev)
        self.air_time = wp.zeros((n, f), dtype=float, device=dev)
        self.contact_time = wp.zeros((n, f), dtype=float, device=dev)
        self.foot_height = wp.zeros((n, f), dtype=float, device=dev)
        self.peak_height = wp.zeros((n, f), dtype=float, device=dev)
        self.encoder_bias = wp.zeros((n, self.robot.num_joints), dtype=float, device=dev)
        h = c.self_collision_history if c.self_collision_subtree is not None else 0
        self.self_collision_force = wp.zeros((n, h), dtype=float, device=dev)
        ng = len(self._touch_geoms())
        self.touch_force = wp.zeros(
            (n, ng, c.self_collision_history if ng else 0), dtype=float, device=dev
        )
        self._bind_terrain(ctx)
        state = robot_state(
            ctx, self._jids, self.robot.default_pose, c.soft_joint_limit_factor, self._root,
            self.command.view(float), self.encoder_bias,
        )  # fmt: skip
        self.env_step = wp.zeros(1, dtype=wp.int32, device=dev)
        arrays = {name: getattr(self, name) for name in mjlab_terms.TASK_ARRAYS}
        arrays["touch_force"], arrays["env_step"] = self.touch_force, self.env_step
        arrays["terrain_origin"] = self._origin
        if self.levels is not None:
            for name in ("levels", "outcomes", "table", "types"):
                arrays[f"terrain_{name}"] = getattr(self.levels, name)
        arrays["geom_friction"], arrays["body_ipos"] = ctx.model.geom_friction, ctx.model.body_ipos
        if self._scan is not None:
            arrays["scan_pnt"], arrays["scan_vec"], arrays["scan_dist"] = self._scan_arrays[:3]
            arrays["scan_heights"] = self._scan_arrays[3]
        self.terms.bind(state, n, dev, arrays)
        for name, array in self.terms.named_state(STATE_NAMES)[0].items():
            setattr(self, name, array)
        self.terms.startup(ctx.seed)  # foot_friction, base_com, encoder_bias
        # The constants that depend on the COM (inverse weights: the constraint solver's
        # regularization, so contact forces), per world, as MJLab's set_const after base_com.
        mjw.set_const(ctx.model, ctx.data)

    def state_arrays(self) -> dict[str, wp.array]:
        """The terms' per-world state that is not a task attribute (`STATE_NAMES`)."""
        return self.terms.named_state(STATE_NAMES)[1]

    def _bind_terrain(self, ctx: TaskContext) -> None:
        """The height scans, the terrain levels and the arrays the kernels read on flat."""
        dev, n, c, mjm = ctx.device, ctx.num_envs, self.config, ctx.mjm
        self._scan = self._foot_scan = None
        if self.levels is None:
            self._origin = wp.zeros(0, dtype=wp.vec3, device=dev)
            self._scan_arrays = (
                wp.zeros((n, 0), dtype=wp.vec3, device=dev),
                wp.zeros((n, 0), dtype=wp.vec3, device=dev),
                wp.zeros((n, 0), dtype=float, device=dev),
                wp.zeros((n, 0), dtype=float, device=dev),
            )
            self._a["normal_idx"] = wp.zeros(0, dtype=wp.int32, device=dev)
            return
        group = (c.terrain.geom_group,)
        # one hierarchy over the terrain's geoms for both scans (static: built once)
        self._ray_scene = RayScene(mjm, n, group, device=dev)
        self._scan = HeightScan(
            n, self._scan_body, c.terrain_scan, geom_groups=group, device=dev,
            scene=self._ray_scene,
        )  # fmt: skip
        s = self._scan
        self._scan_arrays = (s.pnt, s.vec, s.dist, s.heights)
        # state across steps: `upright` reads the previous observation's scan (as MJLab's
        # sensor cache); as task attributes the env's state_dict saves them
        self.scan_pnt, self.scan_vec, self.scan_dist = s.pnt, s.vec, s.dist
        if c.foot_scan is not None:
            sites = self._host["foot_site"].tolist()
            self._foot_scan = HeightScan(
                n, sites, c.foot_scan, geom_groups=group, device=dev, frame="site",
                exclude=mjm.site_bodyid[sites].tolist(), scene=self._ray_scene,
            )  # fmt: skip
        self.levels.bind(n, dev)
        self._origin = self.levels.origin

    def deployment_info(self) -> dict[str, Any]:
        """`Task.deployment_info()`: MJLab's JointPositionAction (target = default pose +
        scale * action; the encoder bias is the simulated sensor's error, not part of it), the
        PD gains of the compiled model's actuators, the observation terms in MJLab's order and
        the twist command's ranges (its first and last stages), as the command term has them."""
        r = self.robot
        layout = self.terms.layout  # the observation terms in the order they are written
        policy, critic = ([(t, size) for t, size, _ in layout[g]] for g in ("policy", "critic"))
        info = {
            **super().deployment_info(),
            **joint_position_info(r, self.build_model(), {"policy": policy, "critic": critic}),
        }
        self.terms.annotate(info["observations"])  # scales (height_scan's), histories

        info["command_names"] = list(COMMAND_NAMES)
        if self.terms.functions.get("commands.twist") != "uniform_velocity_command":
            return info  # a command of the user's: its ranges are its own
        p = self.terms.term_params("commands.twist")
        xs, zs = (np.asarray(p[k], np.float64).reshape(-1, 2) for k in ("lin_vel_x", "ang_vel_z"))
        stages = min(len(xs), len(zs), len(np.atleast_1d(p["stage_step"])))

        def ranges(i: int) -> dict[str, list[float]]:
            values = (xs[i].tolist(), [float(v) for v in p["lin_vel_y"]], zs[i].tolist())
            return dict(zip(COMMAND_NAMES, values, strict=True))

        info["command_ranges"] = ranges(stages - 1)
        if stages > 1:
            info["command_ranges_initial"] = ranges(0)
        if int(p["heading_command"]):
            info["heading_range"] = [float(v) for v in p["heading"]]
        return info

    # ------------------------------------------------------------------ symmetry
    def mirror_maps(self) -> MirrorMaps:
        """The left/right maps of the observation groups (from each term's declared rule,
        `unilab_envs.terms.mirror`) and of the actions (`joint_mirror` of the robot's joints:
        pairs by name, signs by axis); the feet pair by `foot_sites`' names, rough's
        height_scan rays by their mirror points in `terrain_scan`. ValueError naming a term
        without a rule, an asymmetric joint or a scan pattern not symmetric about its x axis."""
        c = self.config
        joints = joint_mirror(self._model, self.robot.joint_names)
        feet = name_permutation(c.foot_sites, mirror_name, "foot_sites")
        rays = None if c.terrain is None else c.terrain_scan.offsets()
        ctx = MirrorContext(joints=joints, actions=joints, feet=feet, scan_rays=rays)
        return MirrorMaps(obs=self.terms.observation_mirrors(ctx), action=joints)

    # ------------------------------------------------------------------ state replay
    def load_state(self, ctx: TaskContext, state: Mapping[str, Any]) -> None:
        """Write named per-world arrays (numpy, torch or lists; leading dim N) into the task,
        the env context and the MJWarp data/model, e.g. to replay a state MJLab recorded.

        Names (shapes per world; J joints in robot order, F feet in `foot_contacts` order):
            MJWarp data: "qpos" (nq), "qvel" (nv), "ctrl" (nu, model actuator order), "act",
                "qacc_warmstart" (nv), "qfrc_applied" (nv), "xfrc_applied" (nbody, 6).
            per-world model fields (`spec.model_batch_fields`): "geom_friction" (ngeom, 3),
                "body_ipos" (nbody, 3).
            env context: "action", "last_action" (J; MJLab's action / prev_action),
                "episode_length" (int).
            task: "encoder_bias" (J), "command" (3: vx, vy, yaw rate in the heading frame),
                "heading_target", "command_time_left", "push_time_left" (s),
                "command_flags" (int: FLAG_HEADING | FLAG_STANDING | FLAG_FORWARD),
                "air_time", "contact_time" (F, s: the contact sensor's current times),
                "foot_height" (F, m: the last sampled foot heights the rewards read),
                "peak_height" (F, m: foot_swing_height's peaks),
                "self_collision_force" (H: |force| of the self-collision sensor in each of the
                last H substeps, newest first; H = 0 without the sensor),
                "touch_force" (G, H: the ground-touch sensors' |force| histories, geoms in
                shank, trunk/head, illegal-contact order).
            rough: "terrain_level" (int: the world's row), "terrain_origin" (3: its spawn
                origin, the tile (level, type)'s).
        Loading "body_ipos" recomputes the model constants derived from it (`set_const`, as
        after the startup draw). Derived MJWarp data fields are not recomputed: call `mujoco_warp.forward` after it when
        the next hook should read them for the new state. Host-side; not for a captured step.
        Unknown names raise ValueError.
        """
        import torch

        targets: dict[str, wp.array] = {}
        for name in ("qpos", "qvel", "ctrl", "act", "qacc_warmstart", "qfrc_applied"):
            targets[name] = getattr(ctx.data, name)
        targets["xfrc_applied"] = ctx.data.xfrc_applied
        for name in self.spec.model_batch_fields:
            targets[name] = getattr(ctx.model, name)
        for name in ("action", "last_action", "episode_length"):
            targets[name] = getattr(ctx, name)
        for name in (*_TASK_STATE, *STATE_NAMES):
            if hasattr(self, name):
                targets[name] = getattr(self, name)
        if self.levels is not None:
            targets["terrain_level"] = self.levels.levels
            targets["terrain_origin"] = self.levels.origin
        unknown = sorted(set(state) - set(targets))
        if unknown:
            raise ValueError(f"unknown state names {unknown}; known: {sorted(targets)}")
        for name, value in state.items():
            dst = wp.to_torch(targets[name])
            src = torch.as_tensor(np.asarray(value), dtype=dst.dtype)
            if tuple(src.shape) != tuple(dst.shape):
                raise ValueError(
                    f"state {name!r}: shape {tuple(src.shape)}, expected {tuple(dst.shape)}"
                )
            dst.copy_(src.to(dst.device))
        if "body_ipos" in state:
            with wp.ScopedDevice(ctx.device):
                mjw.set_const(ctx.model, ctx.data)  # as after the startup draw

    # ------------------------------------------------------------------ device side
    def apply_action(self, ctx: TaskContext) -> None:
        a = self._a
        apply_joint_position_action(ctx, a["act_id"], a["default"], a["scale"], self.encoder_bias)

    def post_substep(self, ctx: TaskContext) -> None:
        wp.launch(
            track_contact_sensors,
            dim=ctx.num_envs,
            inputs=[self._p, ctx.data.sensordata, self._a["found_adr"], self._a["touch_adr"]],
            outputs=[self.air_time, self.contact_time, self.self_collision_force, self.touch_force],
            device=ctx.device,
        )

    def post_physics(self, ctx: TaskContext) -> None:
        wp.launch(count_env_step, dim=1, outputs=[self.env_step], device=ctx.device)

    def evaluate(
        self, ctx: TaskContext, reward: wp.array, terminated: wp.array, log: wp.array
    ) -> None:
        self.terms.evaluate(reward, terminated, ctx.time_out, log)

    def evaluate_and_observe(self, ctx: TaskContext, reward, terminated, log, final_obs) -> None:
        self.evaluate(ctx, reward, terminated, log)
        self.observe(ctx, final_obs, commit=False)  # the observation histories advance once

    def observe(self, ctx: TaskContext, obs, commit: bool = True) -> None:
        d = ctx.data
        if self._scan is not None:  # MJLab's sense(): the ray casts, after the forward
            self._ray_scene.refit(ctx.model, d)
            self._scan.cast(ctx.model, d)
        if self._foot_scan is not None:
            self._foot_scan.cast(ctx.model, d)
            self._foot_scan.clearance(d, self.foot_height)
        self.terms.observe(ctx.seed, ctx.rng_counter, obs, commit)

    def reset_worlds(self, ctx: TaskContext, mask: wp.array) -> None:
        # one launch: rough's terrain_levels curriculum (before the reset pose is drawn), the
        # reset events, contact-sensor resets, interval pushes and the twist command
        self.terms.reset(mask, ctx.seed, ctx.rng_counter)


TermOverrides = Mapping[str, Any] | None


def _terms(observations, rewards, terminations, commands, events, curricula) -> dict[str, Any]:
    """The term overrides given to a factory, as `MjlabVelocityConfig` fields (the factories
    name them so that the registry knows these tasks take them)."""
    given = {"observations": observations, "rewards": rewards, "terminations": terminations}
    given |= {"commands": commands, "events": events, "curricula": curricula}
    return {k: v for k, v in given.items() if v is not None}


def make_go1_velocity_flat(
    robot: RobotConfig | None = None,
    *,
    observations: TermOverrides = None,
    rewards: TermOverrides = None,
    terminations: TermOverrides = None,
    commands: TermOverrides = None,
    events: TermOverrides = None,
    curricula: TermOverrides = None,
    **overrides,
) -> MjlabVelocityTask:
    """`go1-velocity-flat`: MJLab's `Mjlab-Velocity-Flat-Unitree-Go1`; `observations`,
    `rewards`, `terminations`, `commands`, `events`, `curricula` change its terms (see
    `MjlabVelocityConfig`), `overrides` are
    `MjlabVelocityConfig` fields. `robot` defaults to `unilab_envs.tasks.robots.go1()`."""
    if robot is None:
        robot = robots.go1()  # RobotFileNotFoundError names the ways to provide go1.xml
    overrides.update(_terms(observations, rewards, terminations, commands, events, curricula))
    return MjlabVelocityTask(robot, MjlabVelocityConfig(**overrides), "go1-velocity-flat")


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


def make_g1_velocity_flat(
    robot: RobotConfig | None = None,
    *,
    observations: TermOverrides = None,
    rewards: TermOverrides = None,
    terminations: TermOverrides = None,
    commands: TermOverrides = None,
    events: TermOverrides = None,
    curricula: TermOverrides = None,
    **overrides,
) -> MjlabVelocityTask:
    """`g1-velocity-flat`: MJLab's `Mjlab-Velocity-Flat-Unitree-G1`; term overrides and
    `overrides` as `make_go1_velocity_flat`'s. `robot` defaults to `robots.g1()`."""
    if robot is None:
        robot = robots.g1()  # RobotFileNotFoundError names the ways to provide g1.xml
    overrides.update(_terms(observations, rewards, terminations, commands, events, curricula))
    return MjlabVelocityTask(robot, g1_flat_config(robot, **overrides), "g1-velocity-flat")


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


def make_go1_velocity_rough(
    robot: RobotConfig | None = None,
    *,
    observations: TermOverrides = None,
    rewards: TermOverrides = None,
    terminations: TermOverrides = None,
    commands: TermOverrides = None,
    events: TermOverrides = None,
    curricula: TermOverrides = None,
    **overrides,
) -> MjlabVelocityTask:
    """`go1-velocity-rough`: MJLab's `Mjlab-Velocity-Rough-Unitree-Go1` (terrain grid,
    height scans, terrain levels); term overrides and `overrides` as
    `make_go1_velocity_flat`'s."""
    if robot is None:
        robot = robots.go1()
    overrides.update(_terms(observations, rewards, terminations, commands, events, curricula))
    return MjlabVelocityTask(robot, go1_rough_config(**overrides), "go1-velocity-rough")


def make_g1_velocity_rough(
    robot: RobotConfig | None = None,
    *,
    observations: TermOverrides = None,
    rewards: TermOverrides = None,
    terminations: TermOverrides = None,
    commands: TermOverrides = None,
    events: TermOverrides = None,
    curricula: TermOverrides = None,
    **overrides,
) -> MjlabVelocityTask:
    """`g1-velocity-rough`: MJLab's `Mjlab-Velocity-Rough-Unitree-G1`; term overrides and
    `overrides` as `make_go1_velocity_flat`'s."""
    if robot is None:
        robot = robots.g1()
    overrides.update(_terms(observations, rewards, terminations, commands, events, curricula))
    return MjlabVelocityTask(robot, g1_rough_config(robot, **overrides), "g1-velocity-rough")
