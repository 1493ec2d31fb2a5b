"""Cart-pole tasks: `cartpole-balance` and `cartpole-swingup` (the reference `Task` to copy).

Model: `assets/cartpole.xml` (cart on a rail, pole on a hinge, one motor, no contacts).
State: x = qpos[0] (m), theta = qpos[1] (rad, 0 = upright), their velocities qvel[0:2].
Observations, both groups ("policy" and "critic"), float32 [N, 5]:
    [x, cos(theta), sin(theta), x_dot, theta_dot]
Action: [N, 1] in [-1, 1] -> cart force 20 N * action (motor gear).
Control: physics dt 0.01 s, decimation 2 (step_dt 0.02 s), 500 steps (10 s) per episode.

balance: starts near upright (|theta| <= init_angle, |x| <= 0.5 m); terminates when
    |theta| > 0.8 rad or |x| > 2.4 m. Reward per step (Isaac Lab's cart-pole terms):
    alive 1 - 2 * terminated - theta^2 - 0.01 |x_dot| - 0.005 |theta_dot|. Max return ~500;
    solved at a mean return of 450.
swingup: starts hanging (theta = pi +- 0.1); terminates only when |x| > 2.4 m. Reward in
    [0, 1] per step (dm_control's smooth reward): upright (1 + cos theta) / 2 times
    centered (1 + exp(-x^2)) / 2 times small control (4 + exp(-a^2 ... )) / 5 times small
    velocity (1 + exp(-theta_dot^2 / 25)) / 2. Max return < 500; solved at 300.
With `curriculum=True` (balance only) the initial angle range grows from `init_angle` to
`init_angle_max` through a 5-level `LevelCurriculum` on the mean episode return.
"""

from __future__ import annotations

import importlib.resources
import math
from collections.abc import Mapping
from typing import Any

import mujoco
import warp as wp

from unilab_envs._core.rng import world_rng
from unilab_envs._core.task import Capacity, Task, TaskContext, TaskSpec, observation_term
from unilab_envs.curriculum import Curriculum, LevelCurriculum

__all__ = ["CartpoleTask", "make_cartpole_balance", "make_cartpole_swingup"]

_STREAM_INIT = 100
_LOG_TERMS = ("alive", "terminated", "pole_angle", "cart_vel", "pole_vel")


@wp.kernel
def _apply_action(action: wp.array2d(dtype=float), ctrl: wp.array2d(dtype=float)):
    w = wp.tid()
    ctrl[w, 0] = action[w, 0]


@wp.func
def _evaluate_world(
    w: int,
    swingup: int,
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    action: wp.array2d(dtype=float),
    reward: wp.array(dtype=float),
    terminated: wp.array(dtype=wp.bool),
    log: wp.array2d(dtype=float),
):
    x = qpos[w, 0]
    th = qpos[w, 1]
    xd = qvel[w, 0]
    thd = qvel[w, 1]
    out_of_rail = wp.abs(x) > 2.4
    if swingup == 0:
        term = out_of_rail or (wp.abs(th) > 0.8)
        tf = wp.where(term, 1.0, 0.0)
        angle = wp.atan2(wp.sin(th), wp.cos(th))
        r_alive = 1.0 - tf
        r_term = -2.0 * tf
        r_angle = -angle * angle
        r_xd = -0.01 * wp.abs(xd)
        r_thd = -0.005 * wp.abs(thd)
        reward[w] = r_alive + r_term + r_angle + r_xd + r_thd
        terminated[w] = term
        log[0, w] = r_alive
        log[1, w] = r_term
        log[2, w] = r_angle
        log[3, w] = r_xd
        log[4, w] = r_thd
    else:
        a = action[w, 0]
        upright = (1.0 + wp.cos(th)) * 0.5
        centered = (1.0 + wp.exp(-x * x)) * 0.5
        small_control = (4.0 + wp.exp(-a * a)) * 0.2
        small_velocity = (1.0 + wp.exp(-thd * thd / 25.0)) * 0.5
        r = upright * centered * small_control * small_velocity
        r = wp.where(out_of_rail, 0.0, r)
        reward[w] = r
        terminated[w] = out_of_rail
        log[0, w] = upright
        log[1, w] = wp.where(out_of_rail, 1.0, 0.0)
        log[2, w] = centered
        log[3, w] = small_control
        log[4, w] = small_velocity


@wp.kernel
def _evaluate(
    swingup: int,
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    action: wp.array2d(dtype=float),
    reward: wp.array(dtype=float),
    terminated: wp.array(dtype=wp.bool),
    log: wp.array2d(dtype=float),
):
    _evaluate_world(wp.tid(), swingup, qpos, qvel, action, reward, terminated, log)


@wp.func
def _write_obs(
    w: int,
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    out: wp.array2d(dtype=float),
):
    th = qpos[w, 1]
    out[w, 0] = qpos[w, 0]
    out[w, 1] = wp.cos(th)
    out[w, 2] = wp.sin(th)
    out[w, 3] = qvel[w, 0]
    out[w, 4] = qvel[w, 1]


@wp.kernel
def _observe(
    qpos: wp.array2d(dtype=float), qvel: wp.array2d(dtype=float), out: wp.array2d(dtype=float)
):
    _write_obs(wp.tid(), qpos, qvel, out)


@wp.kernel
def _observe_pair(
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    out_a: wp.array2d(dtype=float),
    out_b: wp.array2d(dtype=float),
):
    # Both groups ("policy" and "critic") see the same vector: one launch writes both.
    w = wp.tid()
    _write_obs(w, qpos, qvel, out_a)
    _write_obs(w, qpos, qvel, out_b)


@wp.kernel
def _evaluate_observe_pair(
    swingup: int,
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    action: wp.array2d(dtype=float),
    reward: wp.array(dtype=float),
    terminated: wp.array(dtype=wp.bool),
    log: wp.array2d(dtype=float),
    out_a: wp.array2d(dtype=float),
    out_b: wp.array2d(dtype=float),
):
    # `evaluate` and `observe` (final observations) in one launch: at a few microseconds of
    # physics per world, every launch of the control step counts.
    w = wp.tid()
    _evaluate_world(w, swingup, qpos, qvel, action, reward, terminated, log)
    _write_obs(w, qpos, qvel, out_a)
    _write_obs(w, qpos, qvel, out_b)


@wp.struct
class _ResetParams:
    """What a reset draws from: the env's seed and RNG counter, the initial-state ranges."""

    seed: int
    counter: wp.array(dtype=wp.int32)
    angle_center: float
    angle_lo: float
    angle_hi: float
    level: wp.array(dtype=float)
    x_range: float
    vel_range: float


@wp.func
def _reset_world(
    w: int, p: _ResetParams, qpos: wp.array2d(dtype=float), qvel: wp.array2d(dtype=float)
):
    state = world_rng(p.seed, p.counter[0], w, _STREAM_INIT)
    amp = p.angle_lo + (p.angle_hi - p.angle_lo) * p.level[0]
    qpos[w, 0] = wp.randf(state, -p.x_range, p.x_range)
    qpos[w, 1] = p.angle_center + wp.randf(state, -amp, amp)
    qvel[w, 0] = wp.randf(state, -p.vel_range, p.vel_range)
    qvel[w, 1] = wp.randf(state, -p.vel_range, p.vel_range)


@wp.kernel
def _reset(
    p: _ResetParams,
    mask: wp.array(dtype=wp.bool),
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
):
    w = wp.tid()
    if mask[w]:
        _reset_world(w, p, qpos, qvel)


@wp.kernel
def _reset_observe_pair(
    p: _ResetParams,
    mask: wp.array(dtype=wp.bool),
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    out_a: wp.array2d(dtype=float),
    out_b: wp.array2d(dtype=float),
):
    # `reset_worlds` and `observe` in one launch (each world's reset touches its own row only).
    w = wp.tid()
    if mask[w]:
        _reset_world(w, p, qpos, qvel)
    _write_obs(w, qpos, qvel, out_a)
    _write_obs(w, qpos, qvel, out_b)


class CartpoleTask(Task):
    """Cart-pole balance or swing-up; see the module docstring for every number."""

    def __init__(
        self,
        *,
        swingup: bool = False,
        max_episode_steps: int = 500,
        init_angle: float | None = None,
        init_angle_max: float = 0.6,
        curriculum: bool = False,
    ) -> None:
        if curriculum and swingup:
            raise ValueError("the cart-pole curriculum exists for balance only")
        self.swingup = swingup
        self.init_angle = (0.1 if swingup else 0.2) if init_angle is None else float(init_angle)
        self.init_angle_max = float(init_angle_max)
        if curriculum and self.init_angle_max < self.init_angle:
            raise ValueError(f"init_angle_max {init_angle_max} < init_angle {self.init_angle}")
        self._use_curriculum = curriculum
        self.spec = TaskSpec(
            name="cartpole-swingup" if swingup else "cartpole-balance",
            action_dim=1,
            observation_dims={"policy": 5, "critic": 5},
            decimation=2,
            physics_dt=0.01,
            max_episode_steps=max_episode_steps,
            success_threshold=(300.0 if swingup else 450.0) * max_episode_steps / 500,
            log_terms=_LOG_TERMS,
            capacity=Capacity(nconmax=0, njmax=0),
        )

    def build_model(self) -> mujoco.MjModel:
        path = importlib.resources.files("unilab_envs") / "assets" / "cartpole.xml"
        with importlib.resources.as_file(path) as p:
            return mujoco.MjModel.from_xml_path(str(p))

    def deployment_info(self) -> dict[str, Any]:
        """`Task.deployment_info()`: the action is the slider's force (the motor's gear in N
        per unit action); both groups observe the five state terms. No PD gains, default pose
        or commands: cart-pole has none."""
        mjm = self.build_model()
        motor = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_ACTUATOR, "push")
        joint = mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_JOINT, int(mjm.actuator_trnid[motor, 0]))
        names = ("cart_pos", "cos_pole_angle", "sin_pole_angle", "cart_vel", "pole_ang_vel")
        return {
            **super().deployment_info(),
            "action_type": "joint_effort",
            "joint_names": [joint],
            "action_scale": [float(mjm.actuator_gear[motor, 0])],
            "action_offset": [0.0],
            "observations": {
                group: [observation_term(name, 1) for name in names]
                for group in self.spec.observation_dims
            },
        }

    def curriculum(self) -> Curriculum | None:
        if not self._use_curriculum:
            return None
        return LevelCurriculum(
            metric="return", num_levels=5, up_threshold=0.9 * self.spec.success_threshold
        )

    def apply_action(self, ctx: TaskContext) -> None:
        wp.launch(
            _apply_action,
            dim=ctx.num_envs,
            inputs=[ctx.action],
            outputs=[ctx.data.ctrl],
            device=ctx.device,
        )

    def evaluate(
        self, ctx: TaskContext, reward: wp.array, terminated: wp.array, log: wp.array
    ) -> None:
        wp.launch(
            _evaluate,
            dim=ctx.num_envs,
            inputs=[int(self.swingup), ctx.data.qpos, ctx.data.qvel, ctx.action],
            outputs=[reward, terminated, log],
            device=ctx.device,
        )

    def evaluate_and_observe(
        self,
        ctx: TaskContext,
        reward: wp.array,
        terminated: wp.array,
        log: wp.array,
        final_obs: Mapping[str, wp.array],
    ) -> None:
        outs = list(final_obs.values())
        if len(outs) != 2:
            super().evaluate_and_observe(ctx, reward, terminated, log, final_obs)
            return
        wp.launch(
            _evaluate_observe_pair,
            dim=ctx.num_envs,
            inputs=[int(self.swingup), ctx.data.qpos, ctx.data.qvel, ctx.action],
            outputs=[reward, terminated, log, *outs],
            device=ctx.device,
        )

    def observe(self, ctx: TaskContext, obs: Mapping[str, wp.array]) -> None:
        outs = list(obs.values())
        if len(outs) == 2:
            wp.launch(
                _observe_pair,
                dim=ctx.num_envs,
                inputs=[ctx.data.qpos, ctx.data.qvel],
                outputs=outs,
                device=ctx.device,
            )
            return
        for out in outs:
            wp.launch(
                _observe,
                dim=ctx.num_envs,
                inputs=[ctx.data.qpos, ctx.data.qvel],
                outputs=[out],
                device=ctx.device,
            )

    def bind(self, ctx: TaskContext) -> None:
        # The reset's parameters in one struct, built once (its arrays are the env's own).
        p = _ResetParams()
        p.seed, p.counter, p.level = ctx.seed, ctx.rng_counter, ctx.curriculum_level
        p.angle_center = math.pi if self.swingup else 0.0
        p.angle_lo = self.init_angle
        p.angle_hi = self.init_angle_max if self._use_curriculum else self.init_angle
        p.x_range, p.vel_range = (0.5 if not self.swingup else 0.2), 0.1
        self._reset_params = p

    def reset_worlds(self, ctx: TaskContext, mask: wp.array) -> None:
        wp.launch(
            _reset,
            dim=ctx.num_envs,
            inputs=[self._reset_params, mask],
            outputs=[ctx.data.qpos, ctx.data.qvel],
            device=ctx.device,
        )

    def reset_and_observe(
        self, ctx: TaskContext, mask: wp.array, obs: Mapping[str, wp.array]
    ) -> None:
        outs = list(obs.values())
        if len(outs) != 2:
            super().reset_and_observe(ctx, mask, obs)
            return
        wp.launch(
            _reset_observe_pair,
            dim=ctx.num_envs,
            inputs=[self._reset_params, mask],
            outputs=[ctx.data.qpos, ctx.data.qvel, *outs],
            device=ctx.device,
        )


def make_cartpole_balance(
    *,
    max_episode_steps: int = 500,
    init_angle: float | None = None,
    init_angle_max: float = 0.6,
    curriculum: bool = False,
) -> CartpoleTask:
    """Factory of `cartpole-balance` (keyword overrides as in `CartpoleTask`)."""
    return CartpoleTask(
        swingup=False,
        max_episode_steps=max_episode_steps,
        init_angle=init_angle,
        init_angle_max=init_angle_max,
        curriculum=curriculum,
    )


def make_cartpole_swingup(
    *, max_episode_steps: int = 500, init_angle: float | None = None
) -> CartpoleTask:
    """Factory of `cartpole-swingup` (keyword overrides as in `CartpoleTask`)."""
    return CartpoleTask(swingup=True, max_episode_steps=max_episode_steps, init_angle=init_angle)
