"""Velocity tasks on warp's CPU device: reward/observation kernels on hand-made states,
contract checks, standing, curriculum, and custom MJCF files."""

from __future__ import annotations

import math
import re
from pathlib import Path

import attrs
import mujoco
import numpy as np
import pytest
import torch
import warp as wp

import unilab_envs
from unilab_envs import EnvConfig, VecEnv
from unilab_envs.tasks.robots import QUADRUPED_JOINTS, RobotConfig, quadruped
from unilab_envs.tasks.velocity import VelocityConfig, VelocityTask, make_quadruped_velocity
from unilab_envs.testing import check_vec_env

DT = 0.02  # step_dt of both tasks: 0.005 s x 4


def _quadruped_task(**overrides) -> VelocityTask:
    task = make_quadruped_velocity(**overrides)
    task.mjm = task.build_model()  # indexes the joints, as the env does
    return task


def _quat_z(yaw: float) -> list[float]:
    return [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]


def _quat_x(roll: float) -> list[float]:
    return [math.cos(roll / 2), math.sin(roll / 2), 0.0, 0.0]


def _qadr(task: VelocityTask) -> np.ndarray:
    """The qpos address of each driven joint (action order)."""
    mjm = task.mjm
    ids = [mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_JOINT, n) for n in task.robot.joint_names]
    return mjm.jnt_qposadr[ids]


def _states(task: VelocityTask, n: int):
    """Hand-made states: default pose, base at 0.28 m, everything else zero."""
    mjm = task.mjm
    qpos = np.zeros((n, mjm.nq), np.float32)
    qpos[:, 2] = 0.28
    qpos[:, 3] = 1.0
    qpos[:, _qadr(task)] = task.robot.default_pose
    return qpos, np.zeros((n, mjm.nv), np.float32)


def _env_on_state(task, qpos, qvel, cmd, **arrays) -> VecEnv:
    """An env of a fresh copy of `task` whose state is the hand-made one: MJWarp's qpos, qvel
    and `arrays` ("actuator_force", "qacc" of its data; "action", "last_action",
    "episode_length" of the context; "foot_contact", "bad_contact", "air_time" of the task;
    zero where not given, the feet on the ground)."""
    n, f = qpos.shape[0], len(task.robot.foot_bodies)
    env = VecEnv(type(task)(task.robot, task.config), EnvConfig(num_envs=n, device="cpu"))
    ctx, t = env.ctx, env.task
    given = {"qpos": qpos, "qvel": qvel, "command": cmd, "foot_contact": np.ones((n, f))}
    targets = {name: getattr(ctx.data, name) for name in ("qpos", "qvel", "actuator_force", "qacc")}
    targets |= {name: getattr(ctx, name) for name in ("action", "last_action", "episode_length")}
    targets |= {name: getattr(t, name) for name in ("command", "foot_contact", "bad_contact")}
    targets["air_time"] = t.air_time
    for name, value in {**given, **arrays}.items():
        dst = wp.to_torch(targets[name])
        dst.copy_(torch.as_tensor(np.asarray(value)).to(dst.dtype))
    return env


def _evaluate(
    task, qpos, qvel, cmd, *, act_force=None, action=None, contact=None, air=None, bad=None
):
    """The task's compiled rewards and terminations on a hand-made state: (reward,
    terminated, {term: weighted value}, air times after)."""
    given = {"actuator_force": act_force, "action": action, "foot_contact": contact}
    given |= {"air_time": air, "bad_contact": bad}
    env = _env_on_state(task, qpos, qvel, cmd, **{k: v for k, v in given.items() if v is not None})
    n, t = qpos.shape[0], env.task
    reward, terminated = wp.zeros(n, dtype=float), wp.zeros(n, dtype=wp.bool)
    log = wp.zeros((len(t.spec.log_terms), n), dtype=float)
    t.terms.evaluate(reward, terminated, env.ctx.time_out, log)
    logs = {name: log.numpy()[i] for i, name in enumerate(t.spec.log_terms)}
    return reward.numpy(), terminated.numpy(), logs, t.air_time.numpy()


def _observe(task, qpos, qvel, cmd, *, seed=0, counter=0, **arrays):
    """The task's compiled observation groups on a hand-made state: (policy, critic)."""
    env = _env_on_state(task, qpos, qvel, cmd, **arrays)
    dims = env.task.spec.observation_dims
    obs = {g: wp.zeros((qpos.shape[0], d), dtype=float) for g, d in dims.items()}
    env.task.terms.observe(seed, wp.array([counter], dtype=wp.int32), obs)
    return obs["policy"].numpy(), obs["critic"].numpy()


def test_reward_terms_on_hand_made_states():
    task = _quadruped_task()
    qpos, qvel = _states(task, 4)
    cmd = np.zeros((4, 3), np.float32)
    # world 0: perfect tracking of (0.5, -0.2) m/s and 0.3 rad/s, base not rotated
    cmd[0] = (0.5, -0.2, 0.3)
    qvel[0, 0:2] = (0.5, -0.2)
    qvel[0, 5] = 0.3
    # world 1: heading +90 deg, moving along world +y = body +x: perfect tracking of vx = 0.5
    qpos[1, 3:7] = _quat_z(math.pi / 2)
    cmd[1] = (0.5, 0.0, 0.0)
    qvel[1, 1] = 0.5
    # world 2: 0.5 m/s short of the command, one 10 N m torque, actions 0.5 after zero,
    # foot 0 lands after 0.7 s in the air, foot 1 still in the air
    cmd[2] = (1.0, 0.0, 0.0)
    qvel[2, 0] = 0.5
    force = np.zeros((4, 12), np.float32)
    force[2, 3] = 10.0
    action = np.zeros((4, 12), np.float32)
    action[2] = 0.5
    contact = np.ones((4, 4), np.float32)
    contact[2, 1] = 0.0
    air = np.zeros((4, 4), np.float32)
    air[2, 0], air[2, 1] = 0.7, 0.3
    # world 3: rolled 1.2 rad (> max_tilt 1.0): terminal
    qpos[3, 3:7] = _quat_x(1.2)
    reward, term, logs, air_after = _evaluate(
        task, qpos, qvel, cmd, act_force=force, action=action, contact=contact, air=air
    )

    w_lin, w_ang = 1.5 * DT, 0.75 * DT
    np.testing.assert_allclose(
        logs["track_lin_vel"][:3], [w_lin, w_lin, w_lin * math.exp(-1.0)], rtol=1e-5
    )
    np.testing.assert_allclose(logs["track_ang_vel"][:3], [w_ang, w_ang, w_ang], rtol=1e-5)
    np.testing.assert_allclose(reward[:2], w_lin + w_ang, rtol=1e-5)  # the maximum per step
    np.testing.assert_allclose(logs["torques"], [0, 0, -2e-4 * 100 * DT, 0], rtol=1e-5)
    np.testing.assert_allclose(logs["action_rate"], [0, 0, -0.01 * 12 * 0.25 * DT, 0], rtol=1e-5)
    np.testing.assert_allclose(logs["feet_air_time"], [0, 0, 0.25 * (0.7 - 0.5) * DT, 0], rtol=1e-5)
    np.testing.assert_allclose(air_after[2], [0.0, 0.3 + DT, 0.0, 0.0], rtol=1e-6)
    np.testing.assert_allclose(
        logs["orientation"], [0, 0, 0, -2.5 * math.sin(1.2) ** 2 * DT], rtol=1e-5
    )
    assert term.tolist() == [False, False, False, True]
    np.testing.assert_allclose(logs["termination"], [0, 0, 0, -50.0 * DT])
    total = sum(logs.values())
    np.testing.assert_allclose(reward, total, rtol=1e-6)


def test_terminations_and_limits():
    task = _quadruped_task()
    qpos, qvel = _states(task, 3)
    cmd = np.zeros((3, 3), np.float32)
    bad = np.array([0, 1, 0], np.int32)  # world 1: the trunk touches the ground
    qpos[2, 2] = 0.10  # world 2: below min_base_height 0.12
    calf = _qadr(task)[2]  # FL_calf_joint, range [-2.818, -0.888]
    qpos[0, calf] = -0.9
    _, term, logs, _ = _evaluate(task, qpos, qvel, cmd, bad=bad)
    assert term.tolist() == [False, True, True]
    soft_hi = -1.853 + 0.5 * (2.818 - 0.888) * 0.95
    np.testing.assert_allclose(logs["joint_limits"][0], -1.0 * (-0.9 - soft_hi) * DT, rtol=1e-4)
    # air-time reward is off under a small command even on touchdown
    air = np.full((3, 4), 0.9, np.float32)
    _, _, logs, _ = _evaluate(task, qpos, qvel, cmd, air=air)
    assert logs["feet_air_time"].tolist() == [0.0, 0.0, 0.0]


def test_observations_on_hand_made_state():
    task = _quadruped_task(obs_noise=False)
    qpos, qvel = _states(task, 2)
    qpos[1, 3:7] = _quat_z(math.pi / 2)
    qvel[1, 1] = 0.5  # world +y = body +x
    qvel[1, 3:6] = (0.1, 0.2, 0.3)
    qpos[1, _qadr(task)[4]] += 0.05  # FR_thigh 0.05 rad above default
    cmd = np.array([[0.1, 0.2, 0.3], [0.5, 0, 0]], np.float32)
    action = np.full((2, 12), 0.25, np.float32)
    episode_length = np.array([0, 7], np.int32)
    p, c = _observe(task, qpos, qvel, cmd, action=action, episode_length=episode_length)
    np.testing.assert_allclose(p, c[:, :45])  # no noise: the critic starts with the policy terms
    np.testing.assert_allclose(p[:, 3:6], [[0, 0, -1]] * 2, atol=1e-6)  # upright gravity
    np.testing.assert_allclose(p[1, 0:3], [0.1, 0.2, 0.3], rtol=1e-6)
    np.testing.assert_allclose(p[:, 6:9], [[0.1, 0.2, 0.3], [0.5, 0, 0]])
    expected_dq = np.zeros(12)
    expected_dq[4] = 0.05
    np.testing.assert_allclose(p[1, 9:21], expected_dq, atol=1e-6)
    np.testing.assert_allclose(p[0, 33:45], 0.0)  # episode_length 0: last action is zero
    np.testing.assert_allclose(p[1, 33:45], 0.25)
    np.testing.assert_allclose(c[1, 45:48], [0.5, 0, 0], atol=1e-6)  # body-frame velocity
    np.testing.assert_allclose(c[:, 48], 0.28, rtol=1e-6)
    np.testing.assert_allclose(c[:, 49:53], 1.0)


def _observe_noisy(task, counter: int, n: int = 64):
    qpos, qvel = _states(task, n)
    cmd = np.tile([[0.1, 0.2, 0.3]], (n, 1)).astype(np.float32)
    action = np.full((n, 12), 0.25, np.float32)
    episode_length = np.full(n, 5, np.int32)
    return _observe(
        task, qpos, qvel, cmd, seed=3, counter=counter, action=action, episode_length=episode_length
    )


def test_observation_noise_per_column_within_bounds():
    task = _quadruped_task()
    cfg = task.config
    p, c = _observe_noisy(task, counter=1)
    noise = p - c[:, :45]
    bounds = [cfg.noise_ang_vel] * 3 + [cfg.noise_gravity] * 3 + [0.0] * 3
    bounds += [cfg.noise_joint_pos] * 12 + [cfg.noise_joint_vel] * 12 + [0.0] * 12
    bounds = np.asarray(bounds, np.float32)
    assert (np.abs(noise) <= bounds + 1e-6).all()
    noisy = bounds > 0
    assert (noise[:, ~noisy] == 0).all()  # command and last action are exact
    # Spread over the whole range, independently per world and per column.
    scaled = noise[:, noisy] / bounds[noisy]
    assert scaled.min() < -0.9 and scaled.max() > 0.9
    assert abs(float(scaled.mean())) < 0.05
    assert len(np.unique(scaled)) > 0.99 * scaled.size  # float32 ties aside, no repeats
    corr = np.corrcoef(scaled[:, 0], scaled[:, 1])[0, 1]
    assert abs(corr) < 0.4
    p_again, _ = _observe_noisy(task, counter=1)
    p_next, _ = _observe_noisy(task, counter=2)
    assert np.array_equal(p, p_again) and not np.array_equal(p, p_next)


def test_final_observation_holds_the_last_action_of_a_finished_episode():
    env = unilab_envs.make("humanoid-velocity", num_envs=8, seed=2)
    env.reset()
    j, g = env.action_dim, torch.Generator().manual_seed(0)
    done_seen = 0
    for _ in range(150):
        action = torch.rand(8, j, generator=g) * 2 - 1
        td = env.step(action)
        done = td["done"]
        cols = slice(9 + 2 * j, 9 + 3 * j)
        torch.testing.assert_close(td["final_obs", "critic"][:, cols], action)
        assert torch.equal(td["obs", "critic"][done][:, cols], torch.zeros(int(done.sum()), j))
        done_seen += int(done.sum())
        if done_seen >= 3:
            break
    assert done_seen >= 3  # random joint targets topple the biped within 150 steps


@pytest.mark.parametrize(
    ("name", "steps"), [("quadruped-velocity", 120), ("humanoid-velocity", 80)]
)
def test_check_vec_env_random_actions(name, steps):
    def make():
        return unilab_envs.make(name, num_envs=4, seed=5)

    env = make()
    j = env.action_dim
    assert env.observation_shapes == {
        "policy": (9 + 3 * j,),
        "critic": (13 + 3 * j + (4 if j == 12 else 2),),
    }
    assert env.max_episode_steps == 1000 and math.isclose(env.step_dt, DT)
    counts = check_vec_env(env, steps=steps, make_env=make)
    assert counts["steps"] == steps
    if name == "humanoid-velocity":
        assert counts["terminated"] >= 4  # random joint targets topple the biped: auto-resets ran
    assert env.check_overflow() == 0


def test_quadruped_stands_still_under_zero_actions():
    env = unilab_envs.make("quadruped-velocity", num_envs=3, seed=1, randomization=None)
    env.reset()
    for _ in range(40):
        td = env.step(torch.zeros(3, 12))
    assert not bool(td["done"].any())
    crit = td["obs", "critic"]
    assert torch.equal(crit[:, 49:53], torch.ones(3, 4))  # four feet on the ground
    assert bool((crit[:, 48] > 0.24).all()) and bool((crit[:, 48] < 0.29).all())
    assert bool((crit[:, 5] < -0.99).all())  # upright
    assert torch.equal(td["log", "termination"], torch.zeros(3))


def test_velocity_tracking_reads_the_command_and_the_base_velocities():
    import mujoco

    from unilab_envs.render import load_world

    env = unilab_envs.make("quadruped-velocity", num_envs=2, seed=3)
    env.reset()
    gen = torch.Generator().manual_seed(0)
    for _ in range(5):
        td = env.step(torch.rand(2, 12, generator=gen) * 2 - 1)
    track = env.task.velocity_tracking(td)
    assert set(track) == {"command", "lin_vel", "ang_vel"}
    command = wp.to_torch(env.task.command)
    torch.testing.assert_close(track["command"], command)
    mjd = mujoco.MjData(env.mjm)
    for w in range(2):
        load_world(env, mjd, w)
        rot = np.zeros(9)
        mujoco.mju_quat2Mat(rot, mjd.qpos[3:7])
        lin_body = rot.reshape(3, 3).T @ mjd.qvel[0:3]  # free joint: world-frame linear velocity
        np.testing.assert_allclose(track["lin_vel"][w].numpy(), lin_body, atol=1e-5)
        np.testing.assert_allclose(track["ang_vel"][w].numpy(), mjd.qvel[3:6], atol=1e-5)


def test_curriculum_update_and_round_trip():
    task = make_quadruped_velocity()
    cur = task.curriculum()
    full = 1.5 * 20.0  # w_track_lin_vel x episode seconds
    assert cur.metric_keys == ("track_lin_vel",) and cur.level == 0.0
    assert cur.update({"track_lin_vel": 0.8 * full - 0.01}) is False
    assert cur.update({"track_lin_vel": 0.8 * full}) is True and cur.level == 0.25
    assert cur.update({"track_lin_vel": float("nan")}) is False
    cur.update({"track_lin_vel": full})
    state = cur.state_dict()
    other = make_quadruped_velocity().curriculum()
    other.load_state_dict(state)
    assert other.level == 0.5 and other.state_dict() == state
    assert make_quadruped_velocity(curriculum=False).curriculum() is None


def test_curriculum_level_widens_command_range():
    env = unilab_envs.make("quadruped-velocity", num_envs=64, seed=2, randomization=None)
    env.reset()
    cmd0 = env.task.command.numpy()
    assert (np.abs(cmd0).max(axis=0) <= [1.0, 0.5, 1.0]).all()  # every component, not a list order
    env.curriculum.load_state_dict({"index": 4, "num_levels": 5})
    env.reset()
    cmd1 = np.abs(env.task.command.numpy())
    assert (cmd1.max(axis=0) <= [2.0, 1.0, 2.0]).all()
    assert (cmd1.max(axis=0) > [1.0, 0.5, 1.0]).all()  # 64 draws reach beyond the level-0 bounds
    # the policy observes the command it has to track
    assert np.allclose(
        env.get_observations()["obs", "policy"][:, 6:9].numpy(), env.task.command.numpy()
    )


def test_the_command_and_resets_are_terms_changed_by_overrides():
    own = unilab_envs.make("quadruped-velocity", num_envs=64, seed=2, randomization=None)
    assert list(own.task.terms.command_columns) == ["twist"]
    narrow = unilab_envs.make(
        "quadruped-velocity",
        num_envs=64,
        seed=2,
        randomization=None,
        curriculum=False,
        commands={"twist": {"params": {"bound": (0.3, 0.2, 0.1)}}},  # level 0 without one
        events={"reset_joints": None, "reset_base": {"params": {"pose_yaw": (0.0, 0.0)}}},
    )
    narrow.reset()
    cmd = np.abs(narrow.task.command.numpy())
    assert (cmd.max(axis=0) <= [0.3, 0.2, 0.1]).all() and (cmd.max(axis=0) > 0.05).all()
    qpos = narrow.ctx.data.qpos.numpy()
    np.testing.assert_allclose(qpos[:, 3:7], [[1.0, 0.0, 0.0, 0.0]] * 64)  # no yaw drawn
    narrow.task.mjm = narrow.mjm
    np.testing.assert_allclose(qpos[:, _qadr(narrow.task)], [quadruped().default_pose] * 64)
    # the deployment metadata follows the command term's parameters
    ranges = narrow.task.deployment_info()["command_ranges"]
    assert ranges == {"lin_vel_x": [-0.3, 0.3], "lin_vel_y": [-0.2, 0.2], "ang_vel_z": [-0.1, 0.1]}


def test_a_reset_zeroes_the_contact_state():
    env = unilab_envs.make("quadruped-velocity", num_envs=4, seed=0)
    env.reset()
    arrays = [env.task.foot_contact, env.task.air_time, env.task.bad_contact]
    for a in arrays:
        a.fill_(1)
    env.reset()
    for a in arrays:
        np.testing.assert_array_equal(a.numpy(), 0)


def _bare_quadruped(tmp_path, rename: dict[str, str] | None = None) -> RobotConfig:
    xml = Path(quadruped().mjcf).read_text()
    xml = re.sub(r"<actuator>.*?</actuator>", "", xml, flags=re.S)
    xml = re.sub(r"<keyframe>.*?</keyframe>", "", xml, flags=re.S)
    for old, new in (rename or {}).items():
        xml = xml.replace(old, new)
    path = tmp_path / "my_robot.xml"
    path.write_text(xml)
    return RobotConfig(
        name="my_robot",
        mjcf=path,
        joint_names=QUADRUPED_JOINTS,
        default_pose=quadruped().default_pose,
        action_scale=0.4,
        base_body="trunk",
        foot_bodies=("FL_calf", "FR_calf", "RL_calf", "RR_calf"),
        init_height=0.29,
        min_base_height=0.12,
        kp=(40.0, 40.0, 80.0) * 4,
        kv=(1.0, 1.0, 2.0) * 4,
        effort_limit=(23.7, 23.7, 35.55) * 4,
    )


def test_custom_mjcf_file_runs(tmp_path):
    robot = _bare_quadruped(tmp_path)
    env = unilab_envs.make(
        "quadruped-velocity", robot=robot, num_envs=2, seed=0, randomization=None
    )
    assert env.task.spec.name == "my_robot-velocity"
    td = env.reset()
    assert td["obs", "policy"].shape == (2, 45)
    for _ in range(20):
        td = env.step(torch.zeros(2, 12))
    assert not bool(td["done"].any())
    assert bool(
        (td["obs", "critic"][:, 48] > 0.24).all()
    )  # PD actuators built from kp/kv hold it up


def test_custom_mjcf_missing_joints_error(tmp_path):
    robot = _bare_quadruped(
        tmp_path, rename={"RL_thigh_joint": "RL_upper", "RR_calf_joint": "RR_lower"}
    )
    with pytest.raises(ValueError, match=r"lacks the joints \['RL_thigh_joint', 'RR_calf_joint'\]"):
        unilab_envs.make("quadruped-velocity", robot=robot, num_envs=2)
    with pytest.raises(TypeError, match="RobotConfig"):
        VelocityTask({"name": "x"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="command_bounds_max"):
        VelocityConfig(command_bounds=(1, 1, 1), command_bounds_max=(2, 0.5, 2))
    with pytest.raises(ValueError, match="3 values"):
        VelocityConfig(command_bounds=(1, 1))


def test_unknown_override_is_rejected():
    with pytest.raises(ValueError, match="no_such_option"):
        make_quadruped_velocity(no_such_option=1)
    assert attrs.evolve(VelocityConfig(), w_termination=0.0).w_termination == 0.0


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name", ["quadruped-velocity", "humanoid-velocity"])
def test_cuda_graph_matches_eager(name):
    def run(graph: bool, steps: int):
        env = unilab_envs.make(name, num_envs=512, device="cuda", seed=9, cuda_graph=graph)
        env.reset()
        gen = torch.Generator().manual_seed(0)
        outs = []
        for _ in range(steps):
            action = (torch.rand(512, env.action_dim, generator=gen) * 2 - 1).cuda()
            outs.append(env.step(action))
        return env, outs

    # GPU contact order is not fixed, so compare a few steps (before chaos amplifies float
    # differences), then keep replaying the graph.
    env_g, graph = run(True, 100)
    _, eager = run(False, 5)
    assert env_g.uses_cuda_graph
    for a, b in zip(graph[:5], eager, strict=True):
        for key in ("reward", "done", ("obs", "critic")):
            torch.testing.assert_close(a[key], b[key], rtol=1e-3, atol=1e-3)
    assert all(bool(torch.isfinite(o["obs", "critic"]).all()) for o in graph)
    assert env_g.check_overflow() == 0


def test_unknown_options_name_the_robot_config():
    with pytest.raises(ValueError, match=r"\['max_tilt'\] belong to the robot: pass robot="):
        unilab_envs.make("quadruped-velocity", num_envs=2, max_tilt=0.5)
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['w_nope'\]; VelocityConfig"):
        unilab_envs.make("humanoid-velocity", num_envs=2, w_nope=1.0)


def test_saved_task_state_keeps_its_names_and_shapes():
    # a checkpoint of these tasks from before they were made of terms still loads
    env = unilab_envs.make("quadruped-velocity", num_envs=2, seed=0)
    env.reset()
    arrays = env.state_dict()["arrays"]
    task = {k: tuple(v.shape) for k, v in arrays.items() if k.startswith("task.")}
    assert task == {
        "task.air_time": (2, 4),
        "task.bad_contact": (2,),
        "task.command": (2, 3),
        "task.command_time_left": (2,),
        "task.foot_contact": (2, 4),
    }
