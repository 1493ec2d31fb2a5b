"""`MjlabVelocityTask`: MJLab's velocity MDP (`tasks/mjlab_velocity.py`) as a `TermTask`.

The term plumbing (the compiled terms, the robot's state, the joint-position action, evaluate
and observe) is `TermTask`'s; this task adds its model (the terrain and MJLab's contact
sensors), the per-world arrays its terms read, the contact sensors' per-substep update, the
height scans before each observation, the terrain levels and `set_const` after the startup
draws, and `load_state` for replaying a state MJLab recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import mujoco
import mujoco_warp as mjw
import numpy as np
import warp as wp

from unilab_envs._core.task import Capacity, TaskContext
from unilab_envs.joint_mirror import joint_mirror, mirror_name
from unilab_envs.mdp.sensors import ContactSensorParams, count_env_step, track_contact_sensors
from unilab_envs.tasks import mjlab_terms
from unilab_envs.tasks.mjlab_config import CONTACT_OBJECTS, MjlabVelocityConfig
from unilab_envs.tasks.robot_model import named_ids, robot_spec
from unilab_envs.tasks.robots import RobotConfig
from unilab_envs.tasks.term_task import TermTask, TermTaskConfig
from unilab_envs.tasks.velocity import COMMAND_NAMES
from unilab_envs.terms.mirror import MirrorContext, MirrorMaps, name_permutation
from unilab_envs.terrain import HeightScan, RayScene, TerrainGeometry, TerrainLevels, add_terrain

__all__ = ["STATE_NAMES", "MjlabVelocityTask"]

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

# the sensordata addresses `post_substep` reads: each foot's contact flag, each ground-touch
# geom's force
_SENSOR_ADR = ("found_adr", "touch_adr")
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


class MjlabVelocityTask(TermTask):
    """MJLab's velocity-tracking MDP for a robot (`tasks/mjlab_velocity.py`'s docstring), a
    `TermTask` over its own model (terrain, contact sensors) and arrays."""

    STATE_NAMES = STATE_NAMES

    def __init__(self, robot: RobotConfig, config: MjlabVelocityConfig, name: str) -> None:
        self.robot, self.config = robot, config
        self.layout = None
        self.levels: TerrainLevels | None = None
        if config.terrain is not None:
            # the grid (host numpy, ~0.02 s): the curriculum needs it before the model
            terrain = config.terrain
            given = isinstance(terrain, TerrainGeometry)
            self.layout = terrain.layout if given else add_terrain(mujoco.MjSpec(), terrain)
            self.levels = TerrainLevels(
                self.layout,
                max_init_level=config.max_init_terrain_level,
                episode_length_s=config.episode_length_s,
                seed=config.terrain.seed,
            )
        model = self._compile_model()
        # rough: out_of_terrain_bounds' largest |x|, |y| of the base (m), the grid and its
        # border less the margin; None on flat
        self.terrain_bounds: tuple[float, float] | None = None
        if config.terrain is not None:
            (ex, ey), border = self.layout.extent, config.terrain.border_width
            margin = config.out_of_bounds_margin
            self.terrain_bounds = (max(0.0, ex + border - margin), max(0.0, ey + border - margin))
        # the observations, rewards and terminations are compiled terms (tasks/mjlab_terms.py)
        feet = mjlab_terms.feet_params(config, self._host)
        f, init_height = len(config.foot_contacts), robot.init_height
        terms = mjlab_terms.task_terms(
            config, f, feet, self._host, init_height, self.terrain_bounds, self.levels
        )
        term_config = TermTaskConfig(
            decimation=config.decimation,
            physics_dt=config.physics_dt,
            episode_length_s=config.episode_length_s,
            soft_joint_limit_factor=config.soft_joint_limit_factor,
            command_dim=3,
            **terms,
        )
        super().__init__(
            robot, term_config, name, model=model, zero_on_reset=mjlab_terms.SENSOR_STATE
        )
        self.config = config
        max_track = (config.w_track_linear_velocity + config.w_track_angular_velocity) * (
            config.episode_length_s
        )
        self.spec = attrs.evolve(
            self.spec,
            max_episode_steps=config.max_episode_steps,
            success_threshold=0.6 * max_track,
            capacity=Capacity(
                nconmax=config.nconmax or robot.nconmax, njmax=config.njmax or robot.njmax
            ),
            broadphase=config.broadphase,
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
    def _compile_model(self) -> mujoco.MjModel:
        """The robot with the terrain (rough) or the floor, MJLab's contact sensors and
        simulation overrides, compiled and indexed (`_host`)."""
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
        obj, body, geom = CONTACT_OBJECTS[c.foot_contact_mode], CONTACT_OBJECTS["subtree"], _GEOM
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
        # the contact sensors' addresses (the action's constants are `TermTask`'s)
        self._a = {k: wp.array(self._host[k], dtype=wp.int32, device=dev) for k in _SENSOR_ADR}
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
        self.env_step = wp.zeros(1, dtype=wp.int32, device=dev)
        # the robot state, the terms and their startup draws: foot_friction, base_com,
        # encoder_bias
        self.bind_terms(ctx, self.command.view(float), self.encoder_bias)
        # The constants that depend on the COM (inverse weights: the constraint solver's
        # regularization, so contact forces), per world, as MJLab's set_const after base_com.
        mjw.set_const(ctx.model, ctx.data)

    def term_arrays(self, ctx: TaskContext) -> dict[str, wp.array]:
        """The arrays MJLab's terms read (`mjlab_terms`): the contact sensors' and foot
        heights' state, the env step, the spawn origins, the startup draws' model fields and,
        on rough, the height scan and the terrain levels."""
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
        return arrays

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
        info = super().deployment_info()  # the action, the observation terms in their order
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
        joints = joint_mirror(self._mjm, self.robot.joint_names)
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

    def observe(self, ctx: TaskContext, obs, commit: bool = True) -> None:
        d = ctx.data
        if self._scan is not None:  # MJLab's sense(): the ray casts, after the forward
            self._ray_scene.refit(ctx.model, d)
            self._scan.cast(ctx.model, d)
        if self._foot_scan is not None:
            self._foot_scan.cast(ctx.model, d)
            self._foot_scan.clearance(d, self.foot_height)
        super().observe(ctx, obs, commit)

    def reset_worlds(self, ctx: TaskContext, mask: wp.array) -> None:
        # not TermTask's reset pose: the reset events place the robot. One launch: rough's terrain_levels curriculum (before the reset pose is drawn), the
        # reset events, contact-sensor resets, interval pushes and the twist command
        self.terms.reset(mask, ctx.seed, ctx.rng_counter)
