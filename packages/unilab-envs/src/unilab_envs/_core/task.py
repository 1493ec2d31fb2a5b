"""The task interface: what a task implements so that `unilab_envs.VecEnv` can run it.

A task owns the MJCF model and everything task-specific that happens in one control step,
written as warp kernels that it launches itself. The environment (`_core/env.py`) owns the
`mujoco_warp` model and data, the physics substeps, the episode bookkeeping (time limits,
episode statistics, auto-reset masks), domain randomization and the RNG step counter, and
captures the whole control step into one CUDA graph on GPU. Because of the capture, the task
methods below that run inside a step (`apply_action`, `post_physics`, `evaluate`, `observe`,
`reset_worlds`) must only launch warp kernels (or mujoco_warp functions) on `ctx.device`:
no host reads of device values, no allocation, no Python branching on device data, no torch
ops. They are called once eagerly before capture, then replayed.

Order of one control step (`env.step(action)`):

1. the env copies the clamped action into `ctx.action` (float32 [N, A], in [-1, 1]),
   advances the RNG counter `ctx.rng_counter` (so every replay draws new numbers) and
   counts the step in `ctx.episode_length`;
2. `task.apply_action(ctx)` writes `ctx.data.ctrl` (scale actions to actuator units);
3. pushes (if configured), then `decimation` times `mujoco_warp.step(model, data)` and
   `task.post_substep(ctx)` (a no-op unless the task overrides it);
4. `task.post_physics(ctx)`: task state updates (e.g. command resampling timers);
5. `task.evaluate(ctx, reward, terminated, log)`: per-world reward, termination and the
   per-step value of each term named in `log_terms`;
6. `task.observe(ctx, final_obs)` writes the pre-reset observations (episode length and
   action history as in 5; 5 and 6 are `task.evaluate_and_observe`, which a task may
   override to fuse them); then the env computes `truncated` (time limit, only where not
   terminated), `done` and the episode statistics;
7. for worlds that are done: their MJWarp state restored (inside the bookkeeping kernel, or
   `mujoco_warp.reset_data` for models with state it does not cover), action history cleared,
   `task.reset_worlds(ctx, mask)` (randomized initial state), domain randomization draws,
   `mujoco_warp.forward` if `task.forward_after_reset` (then the env also copies the
   observation of 8 into the final observation of the worlds that are not done);
8. `task.observe(ctx, obs)` writes the observations the policy sees next (without domain
   randomization and `forward_after_reset`, 7's `reset_worlds` and 8 are one call,
   `task.reset_and_observe`, which a task may override to fuse them).

`env.reset()` advances the counter and runs 7-8 for every world (all masked) with
`ctx.episode_length` zeroed. Every kernel of one step or reset reads the same counter value.

Randomness: in kernels call `unilab_envs.world_rng(seed, rng_counter[0], world, stream)`
(a `wp.func` returning a warp RNG state; pass `ctx.seed` as an int kernel input and
`ctx.rng_counter` as an array input) and draw with `wp.randf(state, lo, hi)` /
`wp.randn(state)`. Give every distinct use its own `stream` constant from 100 upwards
(0-99 are reserved by the env). Same seed -> same numbers, on every device count.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    import mujoco
    import mujoco_warp as mjw
    import warp as wp

    from unilab_envs._core.randomization import DomainRandomization
    from unilab_envs.curriculum import Curriculum


def _positive(instance: Any, attribute: attrs.Attribute, value: int) -> None:
    if value < 1:
        raise ValueError(f"{attribute.name} must be >= 1, got {value}")


INT32_MAX = 2**31 - 1  # the env's per-world step counters are int32


def _episode_steps(instance: Any, attribute: attrs.Attribute, value: int) -> None:
    _positive(instance, attribute, value)
    if value > INT32_MAX:
        raise ValueError(
            f"max_episode_steps {value} exceeds the env's int32 step counter ({INT32_MAX}): "
            "give a shorter episode (e.g. episode_length_s=1e6 is 5e7 steps at 50 Hz, longer "
            "than any run), not an infinite one"
        )


@attrs.frozen(kw_only=True)
class Capacity:
    """MJWarp contact and constraint capacity per world, sized per task.

    `nconmax`: contacts per world (MJWarp allocates `nconmax * num_envs` contacts shared by all
    worlds); `njmax`: constraint rows per world (hard limit per world). `None` = MJWarp's
    heuristic default. A world that exceeds them sets a bit in `mujoco_warp`'s `Data.overflow`,
    which the env accumulates and reports (`VecEnv.check_overflow()`).
    """

    nconmax: int | None = attrs.field(default=None)
    njmax: int | None = attrs.field(default=None)

    @nconmax.validator
    @njmax.validator
    def _check(self, attribute: attrs.Attribute, value: int | None) -> None:
        if value is not None and value < 0:
            raise ValueError(f"Capacity.{attribute.name} must be >= 0 or None, got {value}")


BROADPHASES = ("nxn", "sap_tile", "sap_segmented")
"""MuJoCo Warp's broadphase algorithms (`mujoco_warp.BroadphaseType`), by MJLab's names."""


def _broadphase(instance: Any, attribute: attrs.Attribute, value: str | None) -> None:
    if value is not None and value not in BROADPHASES:
        raise ValueError(
            f"{attribute.name} {value!r} is not one of MuJoCo Warp's broadphases: give one of "
            f"{', '.join(BROADPHASES)}, or None for MuJoCo Warp's own choice"
        )


@attrs.frozen(kw_only=True)
class TaskSpec:
    """Static description of a task; the env reads it before building anything.

    Attributes:
        name: registry name, e.g. "cartpole-balance".
        action_dim: A, the number of policy actions (each in [-1, 1]).
        observation_dims: {group: D_group}, e.g. {"policy": 5, "critic": 5}.
        decimation: physics substeps per control step.
        physics_dt: physics timestep in s (overrides the MJCF's `timestep`).
        max_episode_steps: control steps before truncation (time limit).
        success_threshold: mean undiscounted episode return that counts as solved.
        log_terms: names of per-step terms `evaluate` writes to `log` (rows in that order);
            they appear as `("log", name)` each step and `("episode", name)` (episode sum)
            at episode end.
        capacity: MJWarp contact / constraint capacity per world.
        broadphase: MuJoCo Warp's broadphase algorithm, one of `BROADPHASES` ("nxn" tests
            every geom pair that may collide; "sap_tile" / "sap_segmented" sort and sweep the
            geoms' bounds), or None for MuJoCo Warp's own choice (`put_model`: "nxn" below
            250,000 candidate pairs per world). The contacts found are the same; the cost
            differs with the number of geoms (MJLab's `SimulationCfg.broadphase`). On CUDA the
            sweep-and-prune ones failed on the rough Go1 grid's heightfields, and the env
            refuses that combination (docs/envs.md).
        forward_after_reset: run `mujoco_warp.forward` after resets (needed when `observe`
            reads derived quantities such as `xpos`, `xquat`, `site_xpos`; not when it reads
            only `qpos`/`qvel`).
        action_bound: the env clamps actions to [-action_bound, action_bound] (None: no
            clamp, for tasks whose policies act unbounded, as MJLab's do).
        model_batch_fields: `mujoco_warp.Model` fields the task makes per-world (e.g.
            "geom_friction", "body_ipos") and writes itself in `bind`; saved by `state_dict`.
    """

    name: str
    action_dim: int = attrs.field(validator=_positive)
    observation_dims: Mapping[str, int] = attrs.field(converter=dict)
    decimation: int = attrs.field(validator=_positive)
    physics_dt: float = attrs.field()
    max_episode_steps: int = attrs.field(validator=_episode_steps)
    success_threshold: float
    log_terms: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    capacity: Capacity = attrs.field(factory=Capacity)
    broadphase: str | None = attrs.field(default=None, validator=_broadphase)
    forward_after_reset: bool = False
    action_bound: float | None = 1.0
    model_batch_fields: tuple[str, ...] = attrs.field(default=(), converter=tuple)

    @observation_dims.validator
    def _check_obs(self, attribute: attrs.Attribute, value: dict[str, int]) -> None:
        if not value:
            raise ValueError("TaskSpec.observation_dims needs at least one group")
        for group, dim in value.items():
            if not isinstance(group, str) or dim < 1:
                raise ValueError(f"bad observation group {group!r}: dim {dim}")

    @physics_dt.validator
    def _check_dt(self, attribute: attrs.Attribute, value: float) -> None:
        if not value > 0:
            raise ValueError(f"physics_dt must be > 0 s, got {value}")

    @property
    def step_dt(self) -> float:
        """Control period in s: `physics_dt * decimation`."""
        return self.physics_dt * self.decimation


@attrs.define(kw_only=True, eq=False)
class TaskContext:
    """Runtime handles the env gives to the task (`Task.bind`) and to every hook.

    Attributes:
        mjm: host `mujoco.MjModel` (after `Task.build_model`).
        model: `mujoco_warp.Model` on `device` (per-world fields when randomized).
        data: `mujoco_warp.Data` with `nworld = num_envs`; `data.qpos` [N, nq], `data.qvel`
            [N, nv], `data.ctrl` [N, nu], `data.xfrc_applied` [N, nbody] (spatial vectors), ...
        num_envs: N.
        device: warp device (`wp.Device`; "cpu" or "cuda:k").
        seed: the env seed (int, pass as kernel input).
        rng_counter: wp.array(dtype=int32) shape [1]; control steps + resets so far, this one
            included (advanced at the start of each).
        episode_length: wp.array(dtype=int32) [N]; control steps in the current episode
            (already incremented when `post_physics` and `evaluate` run; 0 in `reset_worlds`/`observe` after reset).
        action: wp.array2d(dtype=float32) [N, A]; the current action, clamped to [-1, 1].
        last_action: wp.array2d(dtype=float32) [N, A]; the previous control step's action
            (zero after a reset); updated by the env after `evaluate` (so `evaluate` can
            compute action-rate penalties from `action - last_action`).
        curriculum_level: wp.array(dtype=float32) [1]; the task curriculum's progress in
            [0, 1] (0 without a curriculum), written by the env between steps.
        time_out: wp.array(dtype=bool) [N]; a task that ends episodes as time-outs for its
            own reasons (MJLab's `out_of_terrain_bounds`) writes it in `evaluate` for every
            world; the env truncates where it is True and the state is not terminal, as at
            the time limit. Tasks that never write it leave it False.
        spec: the task's `TaskSpec`.
    """

    mjm: mujoco.MjModel
    model: mjw.Model
    data: mjw.Data
    num_envs: int
    device: wp.context.Device
    seed: int
    rng_counter: wp.array
    episode_length: wp.array
    action: wp.array
    last_action: wp.array
    curriculum_level: wp.array
    time_out: wp.array
    spec: TaskSpec


def observation_term(name: str, size: int, *, scale: float = 1.0, history: int = 1) -> dict:
    """One observation term of `Task.deployment_info()`: `size` floats per step, the task
    writes `scale` times the quantity, and holds its last `history` steps (newest first)."""
    return {"name": name, "size": int(size), "scale": float(scale), "history": int(history)}


class Task(abc.ABC):
    """One task: MJCF + warp kernels for actions, rewards, terminations, observations, resets.

    Subclass it, give the class a `spec` (via `__init__`), and implement the abstract methods.
    `tasks/cartpole.py` is the reference implementation to copy. Construct tasks with keyword
    overrides through `unilab_envs.make(name, num_envs=..., **overrides)`: the registry calls
    the task factory with the overrides.
    """

    spec: TaskSpec

    # --- host side, called once by the env -------------------------------------------------
    @abc.abstractmethod
    def build_model(self) -> mujoco.MjModel:
        """Return the host MjModel (e.g. `mujoco.MjModel.from_xml_path(...)`).

        The env sets `opt.timestep = spec.physics_dt` afterwards. Raise ValueError naming
        what is missing when the MJCF lacks something the task needs (joints, bodies).
        """

    def bind(self, ctx: TaskContext) -> None:  # noqa: B027 (optional hook)
        """Allocate task-owned device arrays (commands, timers, ...) on `ctx.device`.

        Called once after the env built the model and data, before any step or capture.
        Store whatever you need from `ctx` (indices, arrays) on `self`.
        """

    def deployment_info(self) -> dict[str, Any]:
        """What running a trained policy outside UniLab needs to know about this task.

        Plain data (str, int, float, bool, None and lists / dicts of them; JSON-ready), e.g.
        written into an exported ONNX file by `unilab export`. This base gives what `spec`
        knows; a task adds what it really has, and a key it lacks is absent, never guessed.
        Keys (docs/integration.md, "Export", describes each):

            task, action_dim, control_dt (s), physics_dt (s), decimation, action_bound
                (float, or None: the env does not clamp): from `spec`.
            action_type: "joint_position" (target = action_offset + action_scale * action,
                tracked by PD actuators) or "joint_effort" (force or torque = action_scale *
                action + action_offset).
            joint_names: the driven joints in action order; action_scale, action_offset,
                default_joint_pos, joint_stiffness (kp), joint_damping (kv): one value per
                joint, SI units (rad, m, N m/rad, N m s/rad, N or N m per unit action).
            observations: {group: [term, ...]} in the order the group concatenates them; a
                term is `observation_term(...)`: {"name", "size", "scale", "history"}.
            command_names, command_ranges ({name: [lo, hi]}: the widest the task draws),
                command_ranges_initial (where a curriculum starts, when it widens them),
                heading_range (rad; tasks that command a heading, not only a yaw rate).
        """
        s = self.spec
        return {
            "task": s.name,
            "action_dim": s.action_dim,
            "control_dt": s.step_dt,
            "physics_dt": s.physics_dt,
            "decimation": s.decimation,
            "action_bound": s.action_bound,
        }

    def state_arrays(self) -> dict[str, wp.array]:
        """Per-world state the task keeps outside its own attributes (e.g. term state inside
        parameter structs), by a stable name: `VecEnv.state_dict` saves them as "task.<name>"
        beside the task's warp-array attributes. Default: none."""
        return {}

    def mirror_maps(self) -> Any:
        """The task's left/right mirror maps (`unilab_envs.terms.mirror.MirrorMaps`: per
        observation group and for the actions), for symmetry in learning. Default: none, a
        ValueError naming the task; term-based tasks derive them from their terms."""
        raise ValueError(
            f"task {self.spec.name!r} has no mirror maps (its class defines no mirror_maps()); "
            "symmetry needs them"
        )

    def domain_randomization(self) -> DomainRandomization | None:
        """Default domain randomization for this task (None = none); overridable by the env."""
        return None

    def curriculum(self) -> Curriculum | None:
        """The task's curriculum (None = none). Its `level` is mirrored in `ctx.curriculum_level`."""
        return None

    # --- device side, inside the captured control step -------------------------------------
    @abc.abstractmethod
    def apply_action(self, ctx: TaskContext) -> None:
        """Write `ctx.data.ctrl` from `ctx.action` (float32 [N, A] in [-1, 1])."""

    def post_substep(self, ctx: TaskContext) -> None:  # noqa: B027 (optional hook)
        """After every physics substep (e.g. contact timers tracked at the physics rate)."""

    def post_physics(self, ctx: TaskContext) -> None:  # noqa: B027 (optional hook)
        """Update task state after the physics substeps (e.g. resample commands)."""

    @abc.abstractmethod
    def evaluate(
        self, ctx: TaskContext, reward: wp.array, terminated: wp.array, log: wp.array
    ) -> None:
        """Write the step's reward and termination for every world.

        Args:
            reward: wp.array(dtype=float32) [N], output; the reward for this control step.
            terminated: wp.array(dtype=bool) [N], output; True where the state is terminal
                (failure/success), not for time limits (the env handles those).
            log: wp.array2d(dtype=float32) [len(spec.log_terms), N], output; the per-step value
                of each log term (row i = spec.log_terms[i]); shape [0, N] when there are none.
        """

    def evaluate_and_observe(
        self,
        ctx: TaskContext,
        reward: wp.array,
        terminated: wp.array,
        log: wp.array,
        final_obs: Mapping[str, wp.array],
    ) -> None:
        """Steps 5 and 6 of a control step: `evaluate`, then `observe` into `final_obs`.

        Override it to do both in one kernel when the task is so cheap that launches dominate
        its step (cart-pole does); the results must equal the two calls.
        """
        self.evaluate(ctx, reward, terminated, log)
        self.observe(ctx, final_obs)

    @abc.abstractmethod
    def observe(self, ctx: TaskContext, obs: Mapping[str, wp.array]) -> None:
        """Write every observation group: `obs[group]` is wp.array2d(float32) [N, D_group]."""

    def reset_and_observe(
        self, ctx: TaskContext, mask: wp.array, obs: Mapping[str, wp.array]
    ) -> None:
        """`reset_worlds(ctx, mask)`, then `observe(ctx, obs)`: the end of a control step when
        the env has no domain randomization and the task no `forward_after_reset`.

        Override it to do both in one kernel when launches dominate the task's step (cart-pole
        does); the results must equal the two calls.
        """
        self.reset_worlds(ctx, mask)
        self.observe(ctx, obs)

    @abc.abstractmethod
    def reset_worlds(self, ctx: TaskContext, mask: wp.array) -> None:
        """Randomize the initial state of worlds where `mask` (wp.array(dtype=bool) [N]) is True.

        Runs after `mujoco_warp.reset_data` restored `qpos0`, zero `qvel` and `time` for those
        worlds. Write `ctx.data.qpos` / `ctx.data.qvel` and reset task state (commands, timers)
        for the masked worlds only; leave other worlds untouched.
        """
