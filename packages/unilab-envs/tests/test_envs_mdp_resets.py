"""The library's reset events and level-scaled command with the options UniLab's velocity
tasks take (`mdp.reset_root_state_uniform`'s velocity ranges, `mdp.reset_joints_by_offset`
clamped to the joints' full range, `mdp.level_velocity_command`), run by a task made of
terms on CPU."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import torch

from unilab_envs import EnvConfig, VecEnv, mdp, terms
from unilab_envs.tasks import robots
from unilab_envs.tasks.term_task import TermTask, TermTaskConfig

N = 256


def _env(events=None, commands=None) -> VecEnv:
    policy = {"command": terms.ObservationTerm(func=mdp.generated_commands)}
    config = TermTaskConfig(
        episode_length_s=1.0,
        command_dim=3,
        observations={"policy": terms.ObservationGroup(terms=policy)},
        rewards={"alive": terms.RewardTerm(func=mdp.is_alive, weight=1.0)},
        terminations={"time_out": terms.TerminationTerm(func=mdp.time_out, time_out=True)},
        commands=commands or {},
        events=events or {},
        soft_joint_limit_factor=0.9,
    )
    return VecEnv(TermTask(robots.quadruped(), config, "t"), EnvConfig(num_envs=N, device="cpu"))


def _base(env: VecEnv) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Yaw (rad), world linear velocity and free-joint angular velocity of each world's base."""
    s = env.task.env_state
    qpos, qvel = env.ctx.data.qpos.numpy(), env.ctx.data.qvel.numpy()
    q = qpos[:, s.root_qadr + 3 : s.root_qadr + 7]
    np.testing.assert_allclose(q[:, 1:3], 0.0)  # upright: a yaw only
    yaw = 2.0 * np.arctan2(q[:, 3], q[:, 0])
    v = s.root_dadr
    return yaw, qvel[:, v : v + 3], qvel[:, v + 3 : v + 6]


def _reset_base(**params) -> terms.EventTerm:
    params = {"pose_yaw": (-math.pi, math.pi), "height": 0.4, **params}
    return terms.EventTerm(func=mdp.reset_root_state_uniform, mode="reset", params=params)


def test_the_root_reset_draws_velocities_in_the_world_frame_as_mjlab():
    ranges = {"velocity_x": (-0.5, 0.5), "velocity_y": (0.1, 0.3), "velocity_z": (-0.2, 0.0)}
    env = _env({"base": _reset_base(**ranges, velocity_roll=(0.3, 0.3))})
    env.reset()
    yaw, lin, ang_b = _base(env)
    for i, (lo, hi) in enumerate(ranges.values()):
        assert lo <= lin[:, i].min() and lin[:, i].max() <= hi
        assert lin[:, i].max() - lin[:, i].min() > 0.8 * (hi - lo)  # drawn, not constant
    # a roll rate of 0.3 rad/s about the world's x axis (a range of width 0: no draw), held
    # by the free joint in the base's frame: rotated by -yaw
    want = np.stack([0.3 * np.cos(yaw), -0.3 * np.sin(yaw), np.zeros(N)], axis=1)
    np.testing.assert_allclose(ang_b, want, atol=1e-6)


def test_the_root_reset_can_draw_the_angular_velocity_in_the_base_frame():
    ranges = {"velocity_roll": (-0.2, 0.2), "velocity_pitch": (-0.2, 0.2)}
    env = _env({"base": _reset_base(**ranges, velocity_yaw=(0.1, 0.1), body_frame_ang_vel=1)})
    env.reset()
    yaw, lin, ang_b = _base(env)
    np.testing.assert_array_equal(lin, 0.0)
    assert np.abs(ang_b[:, :2]).max() <= 0.2 and np.abs(ang_b[:, :2]).max() > 0.18
    np.testing.assert_allclose(ang_b[:, 2], 0.1)
    assert np.ptp(yaw) > 5.0  # the yaws differ, the base frame's draws do not turn with them


def test_the_root_reset_at_rest_by_default():
    env = _env({"base": _reset_base()})
    env.reset()
    _, lin, ang_b = _base(env)
    np.testing.assert_array_equal(lin, 0.0)
    np.testing.assert_array_equal(ang_b, 0.0)


def _joint_positions(soft_limits: int) -> tuple[np.ndarray, np.ndarray]:
    params = {"position_range": (-10.0, 10.0), "soft_limits": soft_limits}
    env = _env(
        {"joints": terms.EventTerm(func=mdp.reset_joints_by_offset, mode="reset", params=params)}
    )
    env.reset()
    robot, mjm = env.task.robot, env.mjm
    ids = [mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_JOINT, n) for n in robot.joint_names]
    return env.ctx.data.qpos.numpy()[:, mjm.jnt_qposadr[ids]], mjm.jnt_range[ids]


def test_the_joint_reset_clamps_to_the_soft_limits_or_the_full_range():
    full, rng = _joint_positions(soft_limits=0)
    assert rng[:, 1].max() > rng[:, 0].min()  # the quadruped's joints are limited
    np.testing.assert_allclose(full.min(0), rng[:, 0].astype(np.float32), atol=1e-6)
    np.testing.assert_allclose(full.max(0), rng[:, 1].astype(np.float32), atol=1e-6)
    soft, _ = _joint_positions(soft_limits=1)  # MJLab's: the soft limits (factor 0.9)
    mid, half = rng.mean(1), 0.5 * (rng[:, 1] - rng[:, 0])
    assert (soft.min(0) > mid - half + 1e-3).all() and (soft.max(0) < mid + half - 1e-3).all()


def test_the_level_command_scales_its_bounds_with_the_curriculum_level():
    bound, bound_max = (1.0, 0.5, 0.25), (2.0, 1.0, 0.5)
    command = terms.CommandTerm(
        func=mdp.level_velocity_command,
        params={"bound": bound, "bound_max": bound_max, "rel_standing_envs": 0.25},
        resampling_time_range=(10.0, 10.0),
    )
    for level, limit in ((0.0, bound), (1.0, bound_max), (0.5, (1.5, 0.75, 0.375))):
        env = _env(commands={"twist": command})
        env.ctx.curriculum_level.fill_(level)  # what the env mirrors of a task's curriculum
        cmd = env.reset()["obs", "policy"].numpy()
        moving = np.abs(cmd).sum(1) > 0.0
        assert 0.6 < moving.mean() < 0.9  # a quarter stand
        for i in range(3):
            c = cmd[moving, i]
            assert np.abs(c).max() <= limit[i] and np.abs(c).max() > 0.9 * limit[i]
    env.step(torch.zeros(N, env.action_dim))
