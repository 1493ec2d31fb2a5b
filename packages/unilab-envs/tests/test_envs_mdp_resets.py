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


def _mjlab_quat(roll, pitch, yaw) -> np.ndarray:
    """MJLab's `quat_from_euler_xyz` (w, x, y, z), in float64."""
    cr, sr = np.cos(0.5 * roll), np.sin(0.5 * roll)
    cp, sp = np.cos(0.5 * pitch), np.sin(0.5 * pitch)
    cy, sy = np.cos(0.5 * yaw), np.sin(0.5 * yaw)
    return np.stack(
        [
            cy * cr * cp + sy * sr * sp,
            cy * sr * cp - sy * cr * sp,
            cy * cr * sp + sy * sr * cp,
            sy * cr * cp - cy * sr * sp,
        ],
        axis=-1,
    )


def _rotation(q: np.ndarray) -> np.ndarray:
    """Rotation matrices [N, 3, 3] of unit quaternions (w, x, y, z) [N, 4]."""
    w, x, y, z = q.T
    return np.stack(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    ).transpose(2, 0, 1)


def _root_pose(env: VecEnv) -> tuple[np.ndarray, np.ndarray]:
    s = env.task.env_state
    qpos, qvel = env.ctx.data.qpos.numpy(), env.ctx.data.qvel.numpy()
    return qpos[:, s.root_qadr + 3 : s.root_qadr + 7], qvel[:, s.root_dadr + 3 : s.root_dadr + 6]


def test_the_root_reset_turns_the_base_by_roll_pitch_yaw_as_mjlab():
    # ranges of width 0 draw nothing: the orientation is MJLab's composition of the three
    angles = {"pose_roll": (0.3, 0.3), "pose_pitch": (-0.2, -0.2), "pose_yaw": (1.1, 1.1)}
    env = _env({"base": _reset_base(**angles, velocity_roll=(0.5, 0.5))})
    env.reset()
    q, ang_b = _root_pose(env)
    want = _mjlab_quat(0.3, -0.2, 1.1)
    np.testing.assert_allclose(q, np.broadcast_to(want, q.shape), atol=1e-6)
    # the world-frame roll rate, held by the free joint in the turned base's frame
    want_b = _rotation(want[None])[0].T @ np.array([0.5, 0.0, 0.0])
    np.testing.assert_allclose(ang_b, np.broadcast_to(want_b, ang_b.shape), atol=1e-6)


def test_the_root_reset_draws_roll_and_pitch_in_their_ranges():
    ranges = {"pose_roll": (-0.4, 0.1), "pose_pitch": (0.05, 0.3)}
    env = _env({"base": _reset_base(**ranges)})
    env.reset()
    q, _ = _root_pose(env)
    w, x, y, z = q.astype(np.float64).T
    # the Euler angles of R = Rz(yaw) Ry(pitch) Rx(roll), MJLab's convention
    roll = np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = np.arcsin(np.clip(2 * (w * y - z * x), -1.0, 1.0))
    yaw = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    for angle, (lo, hi) in zip((roll, pitch), ranges.values(), strict=True):
        assert lo - 1e-5 <= angle.min() and angle.max() <= hi + 1e-5
        assert np.ptp(angle) > 0.8 * (hi - lo)  # drawn per world, not constant
    assert np.ptp(yaw) > 5.0
    np.testing.assert_allclose(q, _mjlab_quat(roll, pitch, yaw), atol=1e-5)
    # independent draws: roll and pitch do not move together
    assert abs(np.corrcoef(roll, pitch)[0, 1]) < 0.2


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
