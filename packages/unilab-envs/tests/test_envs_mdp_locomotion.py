"""The library's locomotion terms of UniLab's own velocity tasks (Isaac Lab's names) against
numpy on the state a step leaves: tracking, torques, accelerations, joint deviation, feet air
time, terminal flag, contact flags; and the base read from its free joint."""

from __future__ import annotations

import numpy as np
import torch
import warp as wp

from unilab_envs import EnvConfig, VecEnv, mdp, terms
from unilab_envs.tasks import robots
from unilab_envs.tasks.term_task import TermTask, TermTaskConfig
from unilab_envs.terms import CompiledTerms, Ref, Scene

N = 3


def _env() -> VecEnv:
    reward = terms.RewardTerm(func=mdp.is_alive, weight=1.0)
    config = TermTaskConfig(
        command_dim=3,
        observations={
            "policy": terms.ObservationGroup(
                terms={"gravity": terms.ObservationTerm(func=mdp.projected_gravity)}
            )
        },
        rewards={"alive": reward},
    )
    task = TermTask(robots.quadruped(), config, "quadruped-terms")
    env = VecEnv(task, EnvConfig(num_envs=N, device="cpu", seed=3))
    env.reset()
    for _ in range(3):
        env.step(torch.rand(N, env.action_dim) * 2 - 1)
    cmd = np.array([[0.5, -0.2, 0.3], [0.05, 0.05, -1.0], [1.0, 0.0, 0.0]], np.float32)
    wp.copy(task.command, wp.array(cmd, dtype=float))
    return env


def _compile(env: VecEnv, arrays=None, **kinds) -> CompiledTerms:
    task = env.task
    scene = Scene(
        mjm=env.ctx.mjm, joint_names=task.robot.joint_names, num_actions=env.action_dim,
        command_dim=3,
    )  # fmt: skip
    kinds = {"observations": {}, "rewards": {}, "terminations": {}, **kinds}
    compiled = CompiledTerms(scene, **kinds)
    compiled.bind(task.env_state, N, "cpu", arrays)
    return compiled


def _evaluate(compiled: CompiledTerms) -> tuple[dict[str, np.ndarray], np.ndarray]:
    reward, log = wp.zeros(N, dtype=float), wp.zeros((len(compiled.log_terms), N), dtype=float)
    terminated, time_out = wp.zeros(N, dtype=wp.bool), wp.zeros(N, dtype=wp.bool)
    compiled.evaluate(reward, terminated, time_out, log)
    values = dict(zip(compiled.log_terms, log.numpy(), strict=True))
    return values, terminated.numpy()


def _base(env: VecEnv):
    """(quaternion w, x, y, z; world linear velocity; body angular velocity) of the free joint."""
    s, d = env.task.env_state, env.ctx.data
    qpos, qvel = d.qpos.numpy(), d.qvel.numpy()
    return (
        qpos[:, s.root_qadr + 3 : s.root_qadr + 7],
        qvel[:, s.root_dadr : s.root_dadr + 3],
        qvel[:, s.root_dadr + 3 : s.root_dadr + 6],
    )


def _rotate_inv(quat: np.ndarray, v: np.ndarray) -> np.ndarray:
    """v in the frame of the (not necessarily unit) quaternions `quat` (w, x, y, z), as warp."""
    w, u = quat[:, :1], quat[:, 1:]
    return v * (2 * w**2 - 1) - 2 * w * np.cross(u, v) + 2 * u * np.sum(u * v, 1, keepdims=True)


def test_tracking_torques_accelerations_and_deviation_match_numpy():
    env = _env()
    s, d, dt = env.task.env_state, env.ctx.data, env.step_dt
    s.root_from_joint = 1
    weights = np.linspace(0.0, 1.1, env.action_dim).astype(np.float32)
    compiled = _compile(
        env,
        rewards={
            "lin": terms.RewardTerm(func=mdp.track_lin_vel_xy_exp, weight=2.0, params={"std": 0.5}),
            "ang": terms.RewardTerm(func=mdp.track_ang_vel_z_exp, weight=1.0, params={"std": 0.7}),
            "torques": terms.RewardTerm(func=mdp.joint_torques_l2, weight=-1.0),
            "acc": terms.RewardTerm(func=mdp.joint_acc_l2, weight=-1.0),
            "dev": terms.RewardTerm(
                func=mdp.joint_deviation_l1, weight=-1.0, params={"weights": weights}
            ),
        },
    )
    values, _ = _evaluate(compiled)
    quat, lin_w, ang_b = _base(env)
    lin_b = _rotate_inv(quat, lin_w)
    cmd = s.command.numpy()
    e_lin = ((cmd[:, :2] - lin_b[:, :2]) ** 2).sum(1)
    np.testing.assert_allclose(values["lin"], 2.0 * np.exp(-e_lin / 0.25) * dt, rtol=1e-5)
    e_ang = (cmd[:, 2] - ang_b[:, 2]) ** 2
    np.testing.assert_allclose(values["ang"], np.exp(-e_ang / 0.49) * dt, rtol=1e-5)
    act = s.joint_actuator.numpy()
    assert (act >= 0).all() and len(set(act)) == len(act)
    torques = (d.actuator_force.numpy()[:, act] ** 2).sum(1)
    np.testing.assert_allclose(values["torques"], -torques * dt, rtol=1e-5)
    assert (torques > 0).all()
    acc = (d.qacc.numpy()[:, s.joint_dadr.numpy()] ** 2).sum(1)
    np.testing.assert_allclose(values["acc"], -acc * dt, rtol=1e-5)
    q = d.qpos.numpy()[:, s.joint_qadr.numpy()] - s.default_joint_pos.numpy()
    np.testing.assert_allclose(values["dev"], -(np.abs(q) * weights).sum(1) * dt, rtol=1e-5)


def test_the_base_read_from_its_free_joint_or_from_the_kinematics():
    env = _env()
    s = env.task.env_state
    group = {
        "lin": terms.ObservationTerm(func=mdp.base_lin_vel),
        "ang": terms.ObservationTerm(func=mdp.base_ang_vel),
        "gravity": terms.ObservationTerm(func=mdp.projected_gravity),
        "z": terms.ObservationTerm(func=mdp.base_pos_z),
    }
    compiled = _compile(env, observations={"critic": terms.ObservationGroup(terms=group)})
    out = {"critic": wp.zeros((N, 10), dtype=float)}
    quat, lin_w, ang_b = _base(env)
    gravity = _rotate_inv(quat, np.tile([0.0, 0.0, -1.0], (N, 1)))
    z = env.ctx.data.qpos.numpy()[:, s.root_qadr + 2 : s.root_qadr + 3]
    from_joint = np.concatenate([_rotate_inv(quat, lin_w), ang_b, gravity, z], 1)
    s.root_from_joint = 1
    compiled.observe(0, env.ctx.rng_counter, out)
    np.testing.assert_allclose(out["critic"].numpy(), from_joint, rtol=1e-5, atol=1e-6)
    # the kinematics: here those of the forward after the step, the same state
    s.root_from_joint = 0
    compiled.observe(0, env.ctx.rng_counter, out)
    np.testing.assert_allclose(out["critic"].numpy(), from_joint, rtol=1e-4, atol=1e-5)
    wp.copy(env.ctx.data.xpos, wp.zeros_like(env.ctx.data.xpos))
    compiled.observe(0, env.ctx.rng_counter, out)
    np.testing.assert_array_equal(out["critic"].numpy()[:, 9], 0.0)


def test_feet_air_time_contact_flags_and_the_terminal_flag():
    env = _env()
    f = 4
    contact = np.array([[1, 0, 1, 0], [0, 0, 0, 0], [1, 1, 1, 1]], np.float32)
    air = np.array([[0.3, 0.2, 0.0, 0.7], [0.1, 0.0, 0.2, 0.3], [0.6, 0.6, 0.6, 0.6]], np.float32)
    arrays = {
        "contact": wp.array(contact, dtype=float),
        "air_time": wp.array(air, dtype=float),
        "bad": wp.array(np.array([0, 1, 0], np.int32), dtype=wp.int32),
    }
    air_params = {"contact": Ref("contact"), "air_time": Ref("air_time")}
    air_params |= {"threshold": 0.5, "command_threshold": 0.1}
    compiled = _compile(
        env,
        arrays,
        observations={
            "critic": terms.ObservationGroup(
                terms={
                    "feet": terms.ObservationTerm(
                        func=mdp.foot_ground_contact, params={"contact": Ref("contact")}, size=f
                    )
                }
            )
        },
        rewards={
            "air": terms.RewardTerm(func=mdp.feet_air_time, weight=1.0, params=air_params),
            "terminated": terms.RewardTerm(func=mdp.is_terminated, weight=-10.0),
        },
        terminations={
            "bad_contact": terms.TerminationTerm(
                func=mdp.body_ground_contact, params={"contact": Ref("bad")}
            ),
            "time_out": terms.TerminationTerm(func=mdp.time_out, time_out=True),
        },
    )
    values, terminated = _evaluate(compiled)
    dt = env.step_dt
    # world 0: feet 0 (0.3 s) and 2 (not in the air) touch down; world 1: commanded below
    # 0.1 m/s (0 reward, the timers still run); world 2: every foot after 0.6 s
    np.testing.assert_allclose(values["air"], np.array([0.3 - 0.5, 0.0, 4 * 0.1]) * dt, atol=1e-7)
    expected = np.where(contact > 0, 0.0, air + dt)
    np.testing.assert_allclose(arrays["air_time"].numpy(), expected, rtol=1e-6)
    np.testing.assert_array_equal(terminated, [False, True, False])
    np.testing.assert_allclose(values["terminated"], [0.0, -10.0 * dt, 0.0], rtol=1e-6)
    out = {"critic": wp.zeros((N, f), dtype=float)}
    compiled.observe(0, env.ctx.rng_counter, out)
    np.testing.assert_array_equal(out["critic"].numpy(), contact)
