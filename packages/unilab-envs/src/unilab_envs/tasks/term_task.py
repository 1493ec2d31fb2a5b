"""`TermTask`: a floating-base robot's task composed of terms (`unilab_envs.terms`).

The robot (`RobotConfig`) gives the model, the driven joints and the default pose; the config
gives the observation groups, rewards and terminations as term dicts over the library
(`unilab_envs.mdp`) or the user's own `warp.func`s. Action: float32 [N, J], unbounded, joint
target = default pose + action_scale * action (MJLab's JointPositionAction). A reset puts the
base at `robot.init_height` above the origin, upright, at rest, the joints at the default pose,
zeroes the terms' per-world state, then runs the reset events; the interval events and the
commands run in the same launch every step, the startup events once when the env is made.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs
import mujoco
import numpy as np
import warp as wp

from unilab_envs._core.task import Task, TaskContext, TaskSpec
from unilab_envs.mdp.actions import apply_joint_position_action
from unilab_envs.tasks.robot_model import joint_position_info, named_ids, robot_spec
from unilab_envs.tasks.robots import RobotConfig
from unilab_envs.terms import CompiledTerms, Scene, codegen, robot_state
from unilab_envs.terms.config import (
    CommandTerm,
    CurriculumTerm,
    EventTerm,
    ObservationGroup,
    RewardTerm,
    TerminationTerm,
    closest,
)
from unilab_envs.terms.overrides import merge_groups, merge_terms, nest

__all__ = ["TermTask", "TermTaskConfig", "with_overrides"]


@attrs.frozen(kw_only=True)
class TermTaskConfig:
    """A task as data: timing, the robot's soft joint limits, the command width and the term
    dicts (MJLab's `ManagerBasedRlEnvCfg` fields of the same names; the commands' sizes sum
    to `command_dim`)."""

    decimation: int = 4
    physics_dt: float = 0.005
    episode_length_s: float = 20.0
    soft_joint_limit_factor: float = 0.9
    command_dim: int = 0
    root_from_joint: bool = False  # the base terms read its free joint (`EnvState`)
    observations: Mapping[str, ObservationGroup] = attrs.field(factory=dict, converter=dict)
    rewards: Mapping[str, RewardTerm] = attrs.field(factory=dict, converter=dict)
    terminations: Mapping[str, TerminationTerm] = attrs.field(factory=dict, converter=dict)
    commands: Mapping[str, CommandTerm] = attrs.field(factory=dict, converter=dict)
    events: Mapping[str, EventTerm] = attrs.field(factory=dict, converter=dict)
    curricula: Mapping[str, CurriculumTerm] = attrs.field(factory=dict, converter=dict)

    @property
    def max_episode_steps(self) -> int:
        return math.ceil(self.episode_length_s / (self.physics_dt * self.decimation) - 1e-9)


def with_overrides(config: TermTaskConfig, overrides: Mapping[str, Any]) -> TermTaskConfig:
    """`config` with overrides applied (`unilab_envs.terms.overrides`), by dotted key or nested:
    {"rewards.action_rate_l2.weight": -0.2, "rewards.upright.params.std": 0.3,
    "rewards.lin_vel_z": None (removes the term), "observations.policy.height.scale": 2.0}.
    Unknown kinds, groups, terms or fields raise KeyError naming the closest names, values of
    the wrong type TypeError naming their path."""
    kinds = ("observations", "rewards", "terminations", "commands", "events", "curricula")
    tree = nest(overrides)
    for kind in tree:
        if kind not in kinds:
            raise closest(kind, kinds, "term kind")
    return attrs.evolve(
        config,
        observations=merge_groups(config.observations, tree.get("observations", {})),
        **{
            kind: merge_terms(kind, getattr(config, kind), tree.get(kind, {})) for kind in kinds[1:]
        },
    )


@wp.kernel
def reset_pose(
    mask: wp.array(dtype=wp.bool),
    qb: int,
    vb: int,
    height: float,
    qadr: wp.array(dtype=wp.int32),
    q0: wp.array(dtype=float),
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
):
    w = wp.tid()
    if not mask[w]:
        return
    for i in range(7):
        qpos[w, qb + i] = 0.0
    qpos[w, qb + 2] = height
    qpos[w, qb + 3] = 1.0
    for i in range(6):
        qvel[w, vb + i] = 0.0
    for j in range(qadr.shape[0]):
        qpos[w, qadr[j]] = q0[j]


class TermTask(Task):
    """A robot task whose observations, rewards and terminations are compiled terms.

    A task with kernels or arrays of its own subclasses it (`VelocityTask`): it
    offers per-world arrays to the terms' `Ref`s (`term_arrays`) and overrides the hooks it
    adds to. `model`: the compiled model when the task adds to the robot's (terrain, sensors;
    default: the robot's own, `robot_spec(robot)`); `noise_stream`: the observation noise's
    RNG stream; `zero_on_reset`: names of `term_arrays` a reset zeroes (both `CompiledTerms`)."""

    STATE_NAMES: Mapping[str, str] = {}
    """Term state a subclass keeps under the name it had before it was term state: {task
    attribute (saved as "task.<name>"): "<kind>.<term>.<field>"}; the rest is saved as
    "task.terms.<kind>.<term>.<field>"."""

    def __init__(
        self,
        robot: RobotConfig,
        config: TermTaskConfig,
        name: str,
        *,
        model: mujoco.MjModel | None = None,
        noise_stream: int = codegen.STREAM_OBS_NOISE,
        zero_on_reset: tuple[str, ...] = (),
    ) -> None:
        self.robot, self.config, self.term_config = robot, config, config
        self._mjm = robot_spec(robot).compile() if model is None else model
        scene = Scene(
            mjm=self._mjm,
            joint_names=robot.joint_names,
            num_actions=robot.num_joints,
            command_dim=config.command_dim,
        )
        self.terms = CompiledTerms(
            scene,
            observations=config.observations,
            rewards=config.rewards,
            terminations=config.terminations,
            commands=config.commands,
            events=config.events,
            curricula=config.curricula,
            noise_stream=noise_stream,
            zero_on_reset=zero_on_reset,
        )
        self.spec = TaskSpec(
            name=name,
            action_dim=robot.num_joints,
            observation_dims=self.terms.observation_dims,
            decimation=config.decimation,
            physics_dt=config.physics_dt,
            max_episode_steps=config.max_episode_steps,
            success_threshold=math.inf,
            log_terms=self.terms.log_terms,
            forward_after_reset=True,
            action_bound=None,
        )

    def build_model(self) -> mujoco.MjModel:
        return self._mjm

    def term_arrays(self, ctx: TaskContext) -> dict[str, wp.array]:
        """The task's per-world arrays (or `ctx`'s model fields) the terms may name by `Ref`
        (allocated before `bind_terms` calls this). Default: none."""
        return {}

    def bind(self, ctx: TaskContext) -> None:
        c = self.term_config
        self.command = wp.zeros((ctx.num_envs, c.command_dim), dtype=float, device=ctx.device)
        self.bind_terms(ctx, self.command)

    def bind_terms(
        self, ctx: TaskContext, command: wp.array, encoder_bias: wp.array | None = None
    ) -> None:
        """Binds the terms to the robot's state (`robot_state`) and `term_arrays`, sets the
        named term state (`STATE_NAMES`) as attributes and runs the startup events. `command`:
        float32 [N, command_dim], what the command terms write; `encoder_bias`: float32
        [N, J], subtracted by the action and the joint observations (None: zero). `bind`
        passes its own command; a task that keeps these arrays itself calls this from its
        `bind` once they exist."""
        mjm, r, c, dev, n = ctx.mjm, self.robot, self.term_config, ctx.device, ctx.num_envs
        jids = named_ids(mjm, mujoco.mjtObj.mjOBJ_JOINT, r.joint_names, "joints", r.mjcf)
        root = named_ids(mjm, mujoco.mjtObj.mjOBJ_BODY, [r.base_body], "bodies", r.mjcf)[0]
        act = [
            int(np.flatnonzero((mjm.actuator_trnid[:, 0] == j) & (mjm.actuator_trntype == 0))[0])
            for j in jids
        ]
        scale = np.asarray(r.per_joint("action_scale"), np.float32)
        if encoder_bias is None:
            encoder_bias = wp.zeros((n, r.num_joints), dtype=float, device=dev)
        # constants (or the caller's arrays), not per-world state of this task: in a dict,
        # which `state_dict` does not save
        self._action = {
            "act_id": wp.array(np.asarray(act, np.int32), dtype=wp.int32, device=dev),
            "scale": wp.array(scale, dtype=float, device=dev),
            "bias": encoder_bias,
        }
        self.env_state = robot_state(
            ctx, jids, r.default_pose, c.soft_joint_limit_factor, root, command, encoder_bias,
            c.root_from_joint,
        )  # fmt: skip
        self._qb, self._vb = self.env_state.root_qadr, self.env_state.root_dadr
        self.terms.bind(self.env_state, n, dev, self.term_arrays(ctx))
        for name, array in self.terms.named_state(self.STATE_NAMES)[0].items():
            setattr(self, name, array)
        self.terms.startup(ctx.seed)

    def state_arrays(self) -> dict[str, wp.array]:
        """The terms' per-world state that is not a task attribute (`STATE_NAMES`)."""
        return self.terms.named_state(self.STATE_NAMES)[1]

    def deployment_info(self) -> dict[str, Any]:
        """The joint-position action's facts and the observation layout of the term lists."""
        layout = {g: [(t, size) for t, size, _ in terms] for g, terms in self.terms.layout.items()}
        info = {**super().deployment_info(), **joint_position_info(self.robot, self._mjm, layout)}
        self.terms.annotate(info["observations"])
        return info

    def apply_action(self, ctx: TaskContext) -> None:
        a = self._action
        apply_joint_position_action(
            ctx, a["act_id"], self.env_state.default_joint_pos, a["scale"], a["bias"]
        )

    def evaluate(self, ctx: TaskContext, reward, terminated, log) -> None:
        self.terms.evaluate(reward, terminated, ctx.time_out, log)

    def evaluate_and_observe(self, ctx: TaskContext, reward, terminated, log, final_obs) -> None:
        self.evaluate(ctx, reward, terminated, log)
        self.observe(ctx, final_obs, commit=False)  # the observation histories advance once

    def observe(self, ctx: TaskContext, obs, commit: bool = True) -> None:
        self.terms.observe(ctx.seed, ctx.rng_counter, obs, commit)

    def reset_worlds(self, ctx: TaskContext, mask: wp.array) -> None:
        s = self.env_state
        wp.launch(
            reset_pose,
            dim=ctx.num_envs,
            inputs=[
                mask,
                self._qb,
                self._vb,
                self.robot.init_height,
                s.joint_qadr,
                s.default_joint_pos,
            ],
            outputs=[ctx.data.qpos, ctx.data.qvel],
            device=ctx.device,
        )
        self.terms.reset(mask, ctx.seed, ctx.rng_counter)
