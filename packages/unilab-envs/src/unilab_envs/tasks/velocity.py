"""Velocity tracking for floating-base robots: `quadruped-velocity`, `humanoid-velocity`.

The robot follows a command (vx, vy in m/s in its heading frame, yaw rate in rad/s) that is
redrawn every `resample_s` seconds (uniform in +-bound per axis, a `standing_prob` share of
draws is zero), with the usual legged-locomotion reward terms (Isaac Lab / MJLab velocity
tasks). Physics dt 0.005 s, decimation 4 (control at 50 Hz), 20 s episodes (1000 steps).

Action: float32 [N, J] in [-1, 1]; joint targets = default_pose + action_scale * action, sent to
PD position actuators.
Observations (float32):
    "policy" [N, 9 + 3J]: base angular velocity (body frame, rad/s) 3, projected gravity
        (body frame, unit vector) 3, command 3, joint positions minus default J (rad), joint
        velocities J (rad/s), last action J (zero after a reset). Uniform noise (optional) on
        angular velocity, gravity, joint positions and velocities.
    "critic" [N, 13 + 3J + F]: the policy terms without noise, base linear velocity (body
        frame, m/s) 3, base height (m) 1, foot contact flags F.
The observations, rewards, terminations, the command and the reset events are terms of the
library `unilab_envs.mdp` (`velocity_terms`), compiled by the env into one evaluate, one
observe and one reset kernel (`TermTask`, docs/tasks.md); the config's `rewards`,
`observations`, `terminations`, `commands` and `events` (or `--set
env.rewards.<term>.weight=...`) change, remove or add terms. The base's velocities,
orientation and height are read from its free joint (the state the last substep integrated to).
Reward per step = sum of the terms below, each weight * value * step_dt (logged as
("log", term) and ("episode", term)):
    track_lin_vel  exp(-|cmd_xy - v_xy|^2 / std_lin^2)        track_ang_vel  exp(-(cmd_yaw - w_z)^2 / std_ang^2)
    lin_vel_z      v_z^2                                      ang_vel_xy     w_x^2 + w_y^2
    orientation    g_x^2 + g_y^2 (projected gravity)          torques        sum tau^2
    joint_acc      sum qdd^2                                  action_rate    sum (a - a_prev)^2
    joint_limits   sum of excursions beyond the soft range    feet_air_time  sum over touchdowns of (t_air - threshold), 0 when |cmd_xy| < 0.1
    joint_deviation sum w_j |q_j - q0_j|                      termination    1 on a terminal step
Termination: a termination body touches the ground (the task's contact scan), the base tilts
beyond `max_tilt`, or the base is lower than `min_base_height`. Time limits are truncations
(the env's). The command "twist" (`mdp.level_velocity_command`) is redrawn at the end of the
step its time runs out in (after the rewards) and at a reset. A reset ("reset_base",
"reset_joints"): the base upright at `init_height` with a uniform yaw and velocities uniform
in +-`reset_lin_vel` (world frame) and +-`reset_ang_vel` (base frame) per axis, the joints
at the default pose plus +-`reset_joint_noise`, clamped to their range. The contact scan is
the library's (`unilab_envs.mdp.sensors`).
Curriculum (`curriculum=True`): a `LevelCurriculum` on the episode sum of "track_lin_vel";
level l in [0, 1] scales the command bounds from `command_bounds` (l = 0) to
`command_bounds_max` (l = 1); one level up when the mean episode sum reaches
`curriculum_threshold` of the maximum (w_lin * episode seconds).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import attrs
import mujoco
import numpy as np
import warp as wp

from unilab_envs._core.rng import STREAM_VELOCITY_OBS_NOISE
from unilab_envs._core.task import Capacity, TaskContext
from unilab_envs.curriculum import Curriculum, LevelCurriculum
from unilab_envs.mdp.sensors import clear_ground_contacts, scan_ground_contacts
from unilab_envs.randomization import DomainRandomization
from unilab_envs.tasks import velocity_terms
from unilab_envs.tasks.robot_model import (
    build_robot_model,
    named_ids,
    position_gains,
    robot_spec,
)
from unilab_envs.tasks.robots import RobotConfig, humanoid, quadruped
from unilab_envs.tasks.term_task import TermTask, TermTaskConfig

__all__ = [
    "COMMAND_NAMES",
    "STATE_NAMES",
    "VelocityConfig",
    "VelocityTask",
    "build_robot_model",
    "make_humanoid_velocity",
    "make_quadruped_velocity",
    "make_velocity_task",
    "position_gains",
    "robot_spec",
]

COMMAND_NAMES = ("lin_vel_x", "lin_vel_y", "ang_vel_z")  # m/s, m/s, rad/s (heading frame)
# The terms' per-world state under the names these tasks gave it before it was term state:
# the task's attribute (its name in `state_dict`, "task.<name>") -> the term state
# ("<kind>.<term>.<field>", `CompiledTerms.state_arrays`). Term state not listed is saved as
# "task.terms.<kind>.<term>.<field>".
STATE_NAMES = {"command_time_left": "commands.twist.time_left"}

_vec3 = attrs.validators.deep_iterable(attrs.validators.ge(0.0))


def _triple(value) -> tuple[float, float, float]:
    out = tuple(float(v) for v in value)
    if len(out) != 3:
        raise ValueError(f"expected 3 values (vx, vy, yaw rate), got {value!r}")
    return out  # type: ignore[return-value]


@attrs.frozen(kw_only=True)
class VelocityConfig:
    """Task options (reward weights, commands, noise, curriculum); variants via `attrs.evolve`.

    Weights are per second (the reward multiplies them by step_dt); penalties are negative.
    """

    decimation: int = attrs.field(default=4, validator=attrs.validators.ge(1))
    physics_dt: float = attrs.field(default=0.005, validator=attrs.validators.gt(0.0))
    episode_length_s: float = attrs.field(default=20.0, validator=attrs.validators.gt(0.0))
    # commands
    command_bounds: tuple[float, float, float] = attrs.field(
        default=(1.0, 0.5, 1.0), converter=_triple, validator=_vec3
    )
    command_bounds_max: tuple[float, float, float] = attrs.field(
        default=(2.0, 1.0, 2.0), converter=_triple, validator=_vec3
    )
    resample_s: float = attrs.field(default=10.0, validator=attrs.validators.gt(0.0))
    standing_prob: float = attrs.field(
        default=0.02, validator=[attrs.validators.ge(0.0), attrs.validators.le(1.0)]
    )
    # rewards
    w_track_lin_vel: float = 1.5
    w_track_ang_vel: float = 0.75
    std_lin_vel: float = attrs.field(default=0.5, validator=attrs.validators.gt(0.0))
    std_ang_vel: float = attrs.field(default=0.5, validator=attrs.validators.gt(0.0))
    w_lin_vel_z: float = -2.0
    w_ang_vel_xy: float = -0.05
    w_orientation: float = -2.5
    w_torques: float = -2e-4
    w_joint_acc: float = -2.5e-7
    w_action_rate: float = -0.01
    w_joint_limits: float = -1.0
    soft_limit_factor: float = attrs.field(
        default=0.95, validator=[attrs.validators.gt(0.0), attrs.validators.le(1.0)]
    )
    w_feet_air_time: float = 0.25
    air_time_threshold: float = 0.5
    w_joint_deviation: float = -1.0
    w_termination: float = -50.0
    # observation noise (uniform, +-value)
    obs_noise: bool = True
    noise_ang_vel: float = 0.2
    noise_gravity: float = 0.05
    noise_joint_pos: float = 0.01
    noise_joint_vel: float = 1.5
    # resets
    reset_joint_noise: float = attrs.field(default=0.1, validator=attrs.validators.ge(0.0))
    reset_lin_vel: float = attrs.field(default=0.2, validator=attrs.validators.ge(0.0))
    reset_ang_vel: float = attrs.field(default=0.2, validator=attrs.validators.ge(0.0))
    # curriculum
    curriculum: bool = True
    curriculum_levels: int = attrs.field(default=5, validator=attrs.validators.ge(1))
    curriculum_threshold: float = attrs.field(default=0.8, validator=attrs.validators.gt(0.0))
    # default domain randomization: friction scale and base pushes (None = off)
    friction_scale: tuple[float, float] | None = (0.6, 1.25)
    push_velocity: tuple[float, ...] = (0.5, 0.5)
    push_interval_s: tuple[float, float] = (10.0, 15.0)
    # term overrides (`unilab_envs.terms.overrides`: term objects or plain data)
    rewards: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    observations: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict, converter=dict)
    terminations: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    commands: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    events: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)

    def __attrs_post_init__(self) -> None:
        for lo, hi in zip(self.command_bounds, self.command_bounds_max, strict=True):
            if hi < lo:
                raise ValueError(
                    f"command_bounds_max {self.command_bounds_max} below command_bounds "
                    f"{self.command_bounds}"
                )

    @property
    def step_dt(self) -> float:
        return self.physics_dt * self.decimation

    @property
    def max_episode_steps(self) -> int:
        return max(1, round(self.episode_length_s / self.step_dt))


class VelocityTask(TermTask):
    """Command-tracking locomotion for any `RobotConfig`; see the module docstring. Its
    observations, rewards, terminations, command and reset events are terms
    (`velocity_terms`, compiled by `TermTask`); the contact scan, the curriculum and the
    domain randomization are its own."""

    STATE_NAMES = STATE_NAMES

    def __init__(self, robot: RobotConfig, config: VelocityConfig | None = None) -> None:
        if not isinstance(robot, RobotConfig):
            raise TypeError(f"robot must be a RobotConfig, got {type(robot).__name__}")
        cfg = config or VelocityConfig()
        term_config = TermTaskConfig(
            decimation=cfg.decimation,
            physics_dt=cfg.physics_dt,
            episode_length_s=cfg.episode_length_s,
            soft_joint_limit_factor=cfg.soft_limit_factor,
            command_dim=3,
            root_from_joint=True,  # the state the last substep integrated to
            **velocity_terms.task_terms(cfg, robot),
        )
        name = f"{robot.name}-velocity"
        super().__init__(
            robot,
            term_config,
            name,
            noise_stream=STREAM_VELOCITY_OBS_NOISE,
            zero_on_reset=velocity_terms.ZERO_ON_RESET,
        )
        self.config = cfg
        self._index(self._mjm)
        max_track = (cfg.w_track_lin_vel + cfg.w_track_ang_vel) * cfg.episode_length_s
        self.spec = attrs.evolve(
            self.spec,
            max_episode_steps=cfg.max_episode_steps,
            success_threshold=0.6 * max_track,
            capacity=Capacity(nconmax=robot.nconmax, njmax=robot.njmax),
            forward_after_reset=False,
            action_bound=1.0,
        )

    # ------------------------------------------------------------------ host side
    def _index(self, mjm: mujoco.MjModel) -> None:
        r, path = self.robot, self.robot.mjcf
        jids = named_ids(mjm, mujoco.mjtObj.mjOBJ_JOINT, r.joint_names, "joints", path)
        base = named_ids(mjm, mujoco.mjtObj.mjOBJ_BODY, [r.base_body], "bodies", path)[0]
        free = [
            i
            for i in range(mjm.njnt)
            if mjm.jnt_bodyid[i] == base and mjm.jnt_type[i] == mujoco.mjtJoint.mjJNT_FREE
        ]
        if not free:
            raise ValueError(f"MJCF {path!r}: base body {r.base_body!r} has no free joint")
        self._qb, self._vb = int(mjm.jnt_qposadr[free[0]]), int(mjm.jnt_dofadr[free[0]])
        for name, jid in zip(r.joint_names, jids, strict=True):
            acts = [
                a
                for a in range(mjm.nu)
                if mjm.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT
                and mjm.actuator_trnid[a, 0] == jid
            ]
            if len(acts) != 1:
                raise ValueError(
                    f"MJCF {path!r}: joint {name!r} has {len(acts)} actuators, needs exactly 1 "
                    "(or give kp/kv in the robot config)"
                )
        feet = named_ids(mjm, mujoco.mjtObj.mjOBJ_BODY, r.foot_bodies, "bodies", path)
        term_names = (r.base_body,) if r.termination_bodies is None else r.termination_bodies
        term = named_ids(mjm, mujoco.mjtObj.mjOBJ_BODY, term_names, "bodies", path)
        geom_foot = np.full(mjm.ngeom, -1, np.int32)
        if r.foot_geoms is not None:
            foot_geoms = named_ids(mjm, mujoco.mjtObj.mjOBJ_GEOM, r.foot_geoms, "geoms", path)
            geom_foot[foot_geoms] = np.arange(len(foot_geoms))
        else:
            for k, b in enumerate(feet):
                geom_foot[mjm.geom_bodyid == b] = k
        self._host = {
            "geom_ground": (mjm.geom_bodyid == 0).astype(np.int32),
            "geom_foot": geom_foot,
            "geom_term": np.isin(mjm.geom_bodyid, term).astype(np.int32),
        }

    def term_arrays(self, ctx: TaskContext) -> dict[str, wp.array]:
        return {name: getattr(self, name) for name in velocity_terms.TASK_ARRAYS}

    def bind(self, ctx: TaskContext) -> None:
        dev, n, f = ctx.device, ctx.num_envs, len(self.robot.foot_bodies)
        self.air_time = wp.zeros((n, f), dtype=float, device=dev)
        self.foot_contact = wp.zeros((n, f), dtype=float, device=dev)
        self.bad_contact = wp.zeros(n, dtype=wp.int32, device=dev)
        super().bind(ctx)  # the command, the terms' state
        self._a = {k: wp.array(v, dtype=wp.int32, device=dev) for k, v in self._host.items()}

    def velocity_tracking(self, obs: Any) -> dict[str, Any]:
        """The command and the base velocities of an env observation (torch views of its
        noise-free "critic" group, nothing recomputed), each [N, 3] float32:

        "command": (vx, vy, yaw rate) commanded in the base's heading frame (m/s, rad/s);
        "lin_vel": the base's linear velocity in its own frame (m/s);
        "ang_vel": the base's angular velocity in its own frame (rad/s).
        """
        critic = obs["obs", "critic"]
        base = 9 + 3 * self.robot.num_joints
        return {
            "command": critic[:, 6:9],
            "lin_vel": critic[:, base : base + 3],
            "ang_vel": critic[:, 0:3],
        }

    def deployment_info(self) -> dict[str, Any]:
        """`Task.deployment_info()`: joint position targets around the default pose, the PD
        gains of the compiled model's actuators, the observation terms and command ranges
        (those of the "twist" command's parameters)."""
        info = super().deployment_info()
        info["command_names"] = list(COMMAND_NAMES)
        if self.terms.functions.get("commands.twist") != "level_velocity_command":
            return info  # a command of the user's: its ranges are its own
        p = self.terms.term_params("commands.twist")

        def ranges(bound: Any) -> dict[str, list[float]]:
            return {n: [-float(b), float(b)] for n, b in zip(COMMAND_NAMES, bound, strict=True)}

        if not self.config.curriculum:  # the level stays 0
            info["command_ranges"] = ranges(p["bound"])
            return info
        info["command_ranges"] = ranges(p["bound_max"])
        info["command_ranges_initial"] = ranges(p["bound"])
        return info

    def curriculum(self) -> Curriculum | None:
        c = self.config
        if not c.curriculum:
            return None
        full = c.w_track_lin_vel * c.max_episode_steps * c.step_dt
        return LevelCurriculum(
            metric="track_lin_vel",
            num_levels=c.curriculum_levels,
            up_threshold=c.curriculum_threshold * full,
        )

    def domain_randomization(self) -> DomainRandomization | None:
        c = self.config
        if c.friction_scale is None and not c.push_velocity:
            return None
        root = None
        if c.push_velocity and os.path.isfile(self.robot.mjcf):  # else build_model raises
            spec = mujoco.MjSpec.from_file(self.robot.mjcf)
            root = next((j.name for j in spec.joints if j.type == mujoco.mjtJoint.mjJNT_FREE), None)
            root = root or None  # an unnamed free joint cannot be pushed by name
        return DomainRandomization(
            friction_scale=c.friction_scale,
            push_joint=root,
            push_velocity=c.push_velocity if root is not None else (),
            push_interval_s=c.push_interval_s,
        )

    # ------------------------------------------------------------------ device side
    def post_physics(self, ctx: TaskContext) -> None:
        a, d, n, nfoot = self._a, ctx.data, ctx.num_envs, len(self.robot.foot_bodies)
        wp.launch(
            clear_ground_contacts,
            dim=n,
            inputs=[nfoot],
            outputs=[self.foot_contact, self.bad_contact],
            device=ctx.device,
        )
        wp.launch(
            scan_ground_contacts,
            dim=d.naconmax,
            inputs=[
                d.nacon,
                d.contact.geom,
                d.contact.worldid,
                d.contact.type,
                a["geom_ground"],
                a["geom_foot"],
                a["geom_term"],
            ],
            outputs=[self.foot_contact, self.bad_contact],
            device=ctx.device,
        )


_QUADRUPED_DEFAULTS: dict = {}
_HUMANOID_DEFAULTS: dict = {
    "command_bounds": (0.5, 0.3, 0.5),
    "command_bounds_max": (1.0, 0.5, 1.0),
    "w_track_lin_vel": 1.0,
    "w_track_ang_vel": 1.0,
    "w_lin_vel_z": -0.2,
    "w_orientation": -1.0,
    "w_torques": -1e-5,
    "w_joint_acc": -1.25e-7,
    "w_action_rate": -0.005,
    "air_time_threshold": 0.4,
    "w_termination": -200.0,
    "push_velocity": (0.3, 0.3),
}


def _config(overrides: dict, defaults: dict | None = None) -> VelocityConfig:
    """`VelocityConfig` from task defaults and user overrides; ValueError on an unknown name."""
    known = {f.name for f in attrs.fields(VelocityConfig)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        robot_fields = {f.name for f in attrs.fields(RobotConfig)}
        hint = [n for n in unknown if n in robot_fields]
        raise ValueError(
            f"velocity task: unknown option(s) {unknown}"
            + (f"; {hint} belong to the robot: pass robot=RobotConfig(...)" if hint else "")
            + f"; VelocityConfig options: {sorted(known)}"
        )
    return VelocityConfig(**{**(defaults or {}), **overrides})


TermOverrides = Mapping[str, Any] | None


def _terms(observations, rewards, terminations, commands, events) -> dict[str, Any]:
    """The term overrides given to a factory, as `VelocityConfig` fields (the factories name
    them so that the registry knows these tasks take them)."""
    given = {"observations": observations, "rewards": rewards, "terminations": terminations}
    given |= {"commands": commands, "events": events}
    return {k: v for k, v in given.items() if v is not None}


def make_velocity_task(
    robot: RobotConfig,
    *,
    observations: TermOverrides = None,
    rewards: TermOverrides = None,
    terminations: TermOverrides = None,
    commands: TermOverrides = None,
    events: TermOverrides = None,
    **overrides,
) -> VelocityTask:
    """A velocity task for any robot; `overrides` are `VelocityConfig` fields, the term
    overrides change its terms (`unilab_envs.terms.overrides`)."""
    terms = _terms(observations, rewards, terminations, commands, events)
    return VelocityTask(robot, _config({**overrides, **terms}))


def make_quadruped_velocity(
    robot: RobotConfig | None = None,
    *,
    observations: TermOverrides = None,
    rewards: TermOverrides = None,
    terminations: TermOverrides = None,
    commands: TermOverrides = None,
    events: TermOverrides = None,
    **overrides,
) -> VelocityTask:
    """`quadruped-velocity`: UniLab's quadruped (or `robot`) with quadruped reward defaults."""
    terms = _terms(observations, rewards, terminations, commands, events)
    return VelocityTask(robot or quadruped(), _config({**overrides, **terms}, _QUADRUPED_DEFAULTS))


def make_humanoid_velocity(
    robot: RobotConfig | None = None,
    *,
    observations: TermOverrides = None,
    rewards: TermOverrides = None,
    terminations: TermOverrides = None,
    commands: TermOverrides = None,
    events: TermOverrides = None,
    **overrides,
) -> VelocityTask:
    """`humanoid-velocity`: UniLab's humanoid (or `robot`) with biped reward defaults."""
    terms = _terms(observations, rewards, terminations, commands, events)
    return VelocityTask(robot or humanoid(), _config({**overrides, **terms}, _HUMANOID_DEFAULTS))
