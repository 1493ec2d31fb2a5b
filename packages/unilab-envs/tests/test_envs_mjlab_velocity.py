"""go1-velocity-flat (MJLab 1.6.0's Mjlab-Velocity-Flat-Unitree-Go1) on warp's CPU device.

The Go1 is `unilab_envs.tasks.robots.go1()`: MJLab's go1.xml from an installed mjlab (the nox
sessions install the wheel without dependencies) or Menagerie; skipped when neither is there,
failed instead under UNILAB_REQUIRE_MJLAB=1.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from unilab_envs.testing import mjlab_robot

N = 4


@pytest.fixture(scope="module")
def env():
    import unilab_envs

    mjlab_robot("go1")  # skip (or fail) with the reason when no go1.xml is found
    env = unilab_envs.make("go1-velocity-flat", num_envs=N, seed=3)
    env.reset()
    return env


def test_observation_layout_is_mjlab(env):
    task = env.task
    assert task.spec.observation_dims == {"policy": 48, "critic": 72}
    # MJLab actor: base_lin_vel, base_ang_vel, projected_gravity, joint_pos, joint_vel,
    # actions, command; critic adds foot_height, foot_air_time, foot_contact, contact forces.
    assert task.spec.log_terms == (
        "track_linear_velocity",
        "track_angular_velocity",
        "upright",
        "pose",
        "dof_pos_limits",
        "action_rate_l2",
        "foot_clearance",
        "foot_swing_height",
        "foot_slip",
        "soft_landing",
    )
    assert task.spec.max_episode_steps == 1000 and task.spec.step_dt == pytest.approx(0.02)
    assert task.spec.action_bound is None


def test_action_offset_scale_and_encoder_bias(env):
    task, d = env.task, env.ctx.data
    a = torch.linspace(-2.0, 2.0, 12).repeat(N, 1)  # beyond [-1, 1]: MJLab does not clip
    env.step(a)
    ctrl = d.ctrl.numpy()[:, task._host["act_id"]]
    bias = task.encoder_bias.numpy()
    assert np.all(np.abs(bias) <= 0.015) and np.ptp(bias) > 0
    scale = task._host["scale"]
    # GO1_ACTION_SCALE = 0.25 * effort / stiffness: hip/thigh ~0.373, calf ~0.249.
    assert scale[0] == pytest.approx(0.373, abs=2e-3) and scale[2] == pytest.approx(
        0.2485, abs=2e-3
    )
    want = task._host["default"] + scale * a.numpy() - bias
    np.testing.assert_allclose(ctrl, want, rtol=1e-6, atol=1e-6)


def _set_state(env, quat, lin_w, ang_b, joint_offset=0.0):
    import mujoco_warp as mjw

    task, d = env.task, env.ctx.data
    qpos, qvel = d.qpos.numpy(), d.qvel.numpy()
    qpos[:, 0:3] = (0.0, 0.0, 0.3)
    qpos[:, 3:7] = quat
    qpos[:, task._host["qadr"]] = task._host["default"] + joint_offset
    qvel[:] = 0.0
    qvel[:, 0:3] = lin_w
    qvel[:, 3:6] = ang_b
    d.qpos.assign(qpos)
    d.qvel.assign(qvel)
    mjw.forward(env.ctx.model, d)


def _evaluate(env, command):
    import warp as wp

    task = env.task
    task.command.assign(np.tile(np.asarray(command, np.float32), (N, 1)))
    reward = wp.zeros(N, dtype=float)
    term = wp.zeros(N, dtype=wp.bool)
    log = wp.zeros((len(task.spec.log_terms), N), dtype=float)
    task.evaluate(env.ctx, reward, term, log)
    return reward.numpy(), term.numpy(), dict(zip(task.spec.log_terms, log.numpy(), strict=True))


def _rot(quat):
    w, x, y, z = quat
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def test_rewards_against_hand_computed_values(env):
    th = 0.3  # roll about x
    quat = (math.cos(th / 2), math.sin(th / 2), 0.0, 0.0)
    lin_w, ang_b = np.array([0.5, -0.2, 0.1]), np.array([0.1, -0.3, 0.4])
    _set_state(env, quat, lin_w, ang_b, joint_offset=0.05)
    cmd = (0.8, 0.1, 0.2)
    reward, term, log = _evaluate(env, cmd)
    r = _rot(quat)
    v = r.T @ lin_w
    g = r.T @ np.array([0.0, 0.0, -1.0])
    dt = 0.02
    lin = math.exp(-((cmd[0] - v[0]) ** 2 + (cmd[1] - v[1]) ** 2 + v[2] ** 2) / 0.25)
    ang = math.exp(-((cmd[2] - ang_b[2]) ** 2 + ang_b[0] ** 2 + ang_b[1] ** 2) / 0.5)
    upright = math.exp(-(g[0] ** 2 + g[1] ** 2) / 0.2)
    # |cmd| = 0.806 + 0.2 > 0.05 (walking) and < 1.5: std_walking 0.3 (hip, thigh), 0.6 (calf)
    std = np.array([0.3, 0.3, 0.6] * 4)
    pose = math.exp(-np.mean(0.05**2 / std**2))
    np.testing.assert_allclose(log["track_linear_velocity"], 2.0 * lin * dt, rtol=1e-5)
    np.testing.assert_allclose(log["track_angular_velocity"], 2.0 * ang * dt, rtol=1e-5)
    np.testing.assert_allclose(log["upright"], 1.0 * upright * dt, rtol=1e-5)
    np.testing.assert_allclose(log["pose"], 1.0 * pose * dt, rtol=1e-5)
    np.testing.assert_allclose(log["dof_pos_limits"], 0.0, atol=1e-8)
    a = env.ctx.action.numpy() - env.ctx.last_action.numpy()
    np.testing.assert_allclose(log["action_rate_l2"], -0.1 * (a**2).sum(1) * dt, rtol=1e-5)
    np.testing.assert_allclose(reward, sum(log.values()), rtol=1e-5, atol=1e-7)
    assert not term.any()
    # standing command (|cmd| < 0.05): std_standing, and the foot terms are inactive
    _, _, log = _evaluate(env, (0.0, 0.0, 0.0))
    std = np.array([0.05, 0.05, 0.1] * 4)
    np.testing.assert_allclose(log["pose"], math.exp(-np.mean(0.05**2 / std**2)) * dt, rtol=1e-5)
    for name in ("foot_clearance", "foot_swing_height", "foot_slip", "soft_landing"):
        np.testing.assert_array_equal(log[name], 0.0)


def test_foot_clearance_against_hand_computed_value(env):
    task, d = env.task, env.ctx.data
    _set_state(env, (1.0, 0.0, 0.0, 0.0), np.array([0.7, 0.0, 0.0]), np.zeros(3))
    heights = np.array([[0.02, 0.05, 0.12, 0.3]] * N, np.float32)
    task.foot_height.assign(heights)
    _, _, log = _evaluate(env, (0.7, 0.0, 0.0))
    # pure translation: every foot site moves at 0.7 m/s in x
    want = -2.0 * (np.abs(heights - 0.1) * 0.7).sum(1) * 0.02
    np.testing.assert_allclose(log["foot_clearance"], want, rtol=1e-4)
    del d


def test_fell_over_termination(env):
    for angle, want in ((math.radians(60.0), False), (math.radians(80.0), True)):
        _set_state(
            env, (math.cos(angle / 2), 0.0, math.sin(angle / 2), 0.0), np.zeros(3), np.zeros(3)
        )
        _, term, _ = _evaluate(env, (0.0, 0.0, 0.0))
        assert term.tolist() == [want] * N


def _command_update(env):
    import warp as wp

    mask = wp.zeros(N, dtype=wp.bool)
    env.task.reset_worlds(env.ctx, mask)
    return env.task.command.numpy()


def test_command_heading_standing_and_resampling(env):
    from unilab_envs.mdp import commands as K

    task = env.task
    _set_state(env, (1.0, 0.0, 0.0, 0.0), np.zeros(3), np.zeros(3))  # heading 0
    task.command_time_left.fill_(100.0)
    task.push_time_left.fill_(100.0)
    task.command.assign(np.tile(np.float32([0.5, 0.2, 0.0]), (N, 1)))
    task.heading_target.assign(np.float32([0.4, 1.0, -3.0, 0.4]))
    task.command_flags.assign(np.int32([K.FLAG_HEADING] * 3 + [K.FLAG_HEADING | K.FLAG_STANDING]))
    cmd = _command_update(env)
    # yaw rate = clip(0.5 * wrap(target - heading), ang_vel_z range (-0.5, 0.5) at stage 0)
    np.testing.assert_allclose(cmd[:3, 2], [0.2, 0.5, -0.5], rtol=1e-5)
    np.testing.assert_allclose(cmd[:3, :2], [[0.5, 0.2]] * 3)
    np.testing.assert_array_equal(cmd[3], 0.0)
    np.testing.assert_allclose(task.command_time_left.numpy(), 100.0 - 0.02, rtol=1e-6)
    # a timer that runs out redraws: time in [3, 8] s, command in MJLab's stage-0 ranges
    task.command_time_left.fill_(0.01)
    cmd = _command_update(env)
    t = task.command_time_left.numpy()
    assert np.all((t >= 3.0) & (t <= 8.0))
    fwd = (task.command_flags.numpy() & K.FLAG_FORWARD) != 0
    assert np.all(np.abs(cmd[:, 0]) <= 1.0) and np.all(np.abs(cmd[:, 1]) <= 1.0)
    assert np.all(cmd[fwd, 0] >= 0.3) and np.all(cmd[fwd, 1:] == 0.0)


def test_random_actions_no_nan_and_resets(env):
    torch.manual_seed(0)
    env.reset()
    dones = 0
    for _ in range(200):
        td = env.step(torch.randn(N, 12))
        for key in (("obs", "policy"), ("obs", "critic"), "reward"):
            assert torch.isfinite(td[key]).all()
        dones += int(td["done"].sum())
        assert not td["truncated"].any()
    assert env.task.env_step.numpy()[0] >= 200
    # air time is tracked at the physics rate: a multiple of 5 ms
    air = env.task.air_time.numpy()
    np.testing.assert_allclose(air / 0.005, np.round(air / 0.005), atol=1e-2)


def _check_vec_env_and_file_round_trip(make, action_dim, same_task_state=None):
    """check_vec_env (its own state_dict round trip included; 10-step episodes put time-outs,
    resets and command draws inside the window), then the state through a file, as a checkpoint
    would, into a fresh env: the per-world model fields (friction, COM and what set_const
    derived from it) and the task state come along, so both envs step identically."""
    import io

    from unilab_envs.testing import check_vec_env

    env = make()
    counts = check_vec_env(env, steps=25, make_env=make)
    assert counts["truncated"] > 0
    buf = io.BytesIO()
    torch.save(env.state_dict(), buf)
    other = make()
    other.reset()
    buf.seek(0)
    other.load_state_dict(torch.load(buf))
    gen = torch.Generator().manual_seed(1)
    for t in range(12):
        a = torch.randn(N, action_dim, generator=gen)
        x, y = env.step(a), other.step(a)
        for key in x.keys(include_nested=True, leaves_only=True):
            assert torch.equal(x[key], y[key]), (t, key)
        if same_task_state is not None:
            same_task_state(env.task, other.task)


def test_check_vec_env_and_state_dict_round_trip():
    import unilab_envs

    mjlab_robot("go1")
    _check_vec_env_and_file_round_trip(
        lambda: unilab_envs.make("go1-velocity-flat", num_envs=N, seed=5, episode_length_s=0.2),
        12,
    )


def test_rough_check_vec_env_and_state_dict_round_trip():
    """go1-velocity-rough on a 2-row grid: time-outs and out-of-bounds resets move levels; the
    levels, origins and ground-touch histories survive the state round trip."""
    import unilab_envs

    mjlab_robot("go1")

    def same_levels(a, b):
        for name in ("levels", "shared", "origin", "outcomes"):
            assert np.array_equal(getattr(a.levels, name).numpy(), getattr(b.levels, name).numpy())
        assert np.array_equal(a.touch_force.numpy(), b.touch_force.numpy())

    terrain = {"num_rows": 2, "border_width": 1.0}
    _check_vec_env_and_file_round_trip(
        lambda: unilab_envs.make(
            "go1-velocity-rough", num_envs=N, seed=5, episode_length_s=0.2, terrain=terrain
        ),
        12,
        same_levels,
    )


def test_broadphase_choice_finds_the_same_contacts():
    """MuJoCo Warp's sweep-and-prune broadphase against its all-pairs one (its choice for this
    model) on a rough grid: the same contacts in every world, the same state up to the float
    rounding of another contact order; an unknown name is refused with the valid ones."""
    import torch

    import unilab_envs

    mjlab_robot("go1")
    terrain = {"num_rows": 2, "border_width": 1.0}

    def run(**kw):
        env = unilab_envs.make("go1-velocity-rough", num_envs=N, seed=5, terrain=terrain, **kw)
        env.reset()
        gen = torch.Generator().manual_seed(0)
        for _ in range(6):
            env.step(0.5 * torch.randn(N, 12, generator=gen))
        d = env.ctx.data
        n = int(d.nacon.numpy()[0])
        geoms = d.contact.geom.numpy()[:n]
        found = sorted(zip(d.contact.worldid.numpy()[:n].tolist(), map(tuple, geoms.tolist())))
        return int(env.ctx.model.opt.broadphase), found, d.qpos.numpy().copy()

    nxn_type, nxn, nxn_qpos = run()
    sap_type, sap, sap_qpos = run(broadphase="sap_tile")
    assert (nxn_type, sap_type) == (0, 1)  # mujoco_warp.BroadphaseType NXN, SAP_TILE
    assert len(nxn) >= N and sap == nxn  # feet on the ground in every world
    np.testing.assert_allclose(sap_qpos, nxn_qpos, atol=1e-5)
    with pytest.raises(ValueError, match=r"'sap' is not one of .*nxn, sap_tile, sap_segmented"):
        unilab_envs.make_task("go1-velocity-flat", broadphase="sap")


def test_sweep_and_prune_with_heightfields_is_refused_on_cuda_only():
    """Both sweep-and-prune broadphases crashed MuJoCo Warp 4.0.0 on CUDA with the rough grid's
    heightfields: the env refuses that combination up front, names the fix, and lets it run on
    the CPU device and on flat models."""
    import unilab_envs
    from unilab_envs._core.env import check_broadphase

    mjlab_robot("go1")
    rough = unilab_envs.make_task("go1-velocity-rough", terrain={"num_rows": 2}).build_model()
    flat = unilab_envs.make_task("go1-velocity-flat").build_model()
    assert rough.nhfield > 0 and flat.nhfield == 0
    for name in ("sap_tile", "sap_segmented"):
        with pytest.raises(ValueError, match=rf"'{name}' with heightfield .* or give 'nxn'"):
            check_broadphase("go1-velocity-rough", name, rough, on_cuda=True)
        check_broadphase("go1-velocity-rough", name, rough, on_cuda=False)
        check_broadphase("go1-velocity-flat", name, flat, on_cuda=True)
    check_broadphase("go1-velocity-rough", "nxn", rough, on_cuda=True)


# ----------------------------------------------------------------------------- G1
# g1-velocity-flat (MJLab's Mjlab-Velocity-Flat-Unitree-G1) is configuration on the same
# task; its term-by-term parity is in test_envs_mjlab_parity.py.


def _make_g1(**overrides):
    import unilab_envs

    mjlab_robot("g1")  # skip (or fail) with the reason when no g1.xml is found
    return unilab_envs.make("g1-velocity-flat", num_envs=N, **overrides)


def test_g1_layout_terms_and_startup_friction():
    env = _make_g1(seed=3)
    env.reset()
    task = env.task
    assert env.action_dim == 29
    assert task.spec.observation_dims == {"policy": 99, "critic": 111}
    # MJLab's order, zero-weight air_time skipped
    assert task.spec.log_terms == (
        "track_linear_velocity",
        "track_angular_velocity",
        "upright",
        "pose",
        "body_ang_vel",
        "angular_momentum",
        "dof_pos_limits",
        "action_rate_l2",
        "foot_clearance",
        "foot_swing_height",
        "foot_slip",
        "soft_landing",
        "self_collisions",
    )
    c, joints = task.config, task.robot.joint_names
    walk = dict(zip(joints, c.pose_std_walking, strict=True))
    run = dict(zip(joints, c.pose_std_running, strict=True))
    assert (walk["left_knee_joint"], walk["waist_roll_joint"], walk["right_wrist_yaw_joint"]) == (
        0.35,
        0.08,
        0.3,
    )
    assert (run["right_hip_pitch_joint"], run["left_ankle_roll_joint"]) == (0.5, 0.15)
    assert set(c.pose_std_standing) == {0.05}
    # foot friction: slide axis drawn in [0.3, 1.2], one value shared by the 14 foot geoms per
    # world; spin and roll keep the MJCF's values
    import mujoco

    ids = [mujoco.mj_name2id(env.mjm, mujoco.mjtObj.mjOBJ_GEOM, g) for g in c.friction_geoms]
    assert len(ids) == 14 and min(ids) >= 0
    fr = env.ctx.model.geom_friction.numpy()[:, ids]
    assert np.all((fr[..., 0] >= 0.3) & (fr[..., 0] <= 1.2)) and np.ptp(fr[:, 0, 0]) > 0
    np.testing.assert_array_equal(fr[..., 0], np.repeat(fr[:, :1, 0], 14, axis=1))
    np.testing.assert_array_equal(
        fr[..., 1:],
        np.broadcast_to(env.mjm.geom_friction[ids, 1:].astype(np.float32), fr[..., 1:].shape),
    )
    assert task.self_collision_force.shape == (N, 4)


def test_g1_random_steps_no_nan():
    env = _make_g1(seed=1)
    env.reset()
    gen = torch.Generator().manual_seed(0)
    hits = 0.0
    for _ in range(100):
        td = env.step(torch.rand(N, 29, generator=gen) * 2 - 1)
        for key in (("obs", "policy"), ("obs", "critic"), "reward"):
            assert torch.isfinite(td[key]).all(), key
        history = env.task.self_collision_force.numpy()
        assert np.all(np.isfinite(history)) and np.all(history >= 0)
        hits += float((history > 10.0).sum())
    assert hits > 0  # a random G1 hits itself: the history is filled


def test_g1_check_vec_env_and_state_dict_round_trip():
    def same_history(a, b):
        np.testing.assert_array_equal(
            a.self_collision_force.numpy(), b.self_collision_force.numpy()
        )

    _check_vec_env_and_file_round_trip(
        lambda: _make_g1(seed=5, episode_length_s=0.2), 29, same_task_state=same_history
    )


def test_g1_self_collision_history_rolls_per_substep_and_clears_at_reset():
    import warp as wp

    env = _make_g1(seed=2)
    env.reset()
    task, ctx = env.task, env.ctx
    adr = task._p.self_force_adr
    assert adr >= 0
    forces = [3.0, 12.0, 0.0, 40.0, 11.0]  # |force| of 5 substeps, along z
    for f in forces:
        sd = ctx.data.sensordata.numpy()
        sd[:, adr : adr + 3] = (0.0, 0.0, f)
        ctx.data.sensordata.assign(sd)
        task.post_substep(ctx)
    want = np.tile(np.asarray(forces[::-1][:4], np.float32), (N, 1))  # newest first
    np.testing.assert_array_equal(task.self_collision_force.numpy(), want)
    mask = wp.array([True, False, True, False], dtype=wp.bool, device=ctx.device)
    task.reset_worlds(ctx, mask)
    history = task.self_collision_force.numpy()
    np.testing.assert_array_equal(history[[0, 2]], 0.0)
    np.testing.assert_array_equal(history[[1, 3]], want[[1, 3]])


def test_rough_task_on_a_given_terrain_is_the_generated_one(tmp_path):
    """`terrain=TerrainGeometry` (or its saved file) builds the same model and spawn table as
    the generator it was taken from."""
    import mujoco

    import unilab_envs
    from unilab_envs.terrain import TerrainConfig, TerrainGeometry, add_terrain

    mjlab_robot("go1")
    config = TerrainConfig(num_rows=2, border_width=1.0)
    spec = mujoco.MjSpec()
    layout = add_terrain(spec, config)
    geometry = TerrainGeometry.from_model(spec.compile(), layout, border_width=1.0)
    geometry.save(tmp_path / "terrain.npz")
    generated = unilab_envs.make("go1-velocity-rough", num_envs=N, terrain=config)
    for terrain in (geometry, str(tmp_path / "terrain.npz")):
        given = unilab_envs.make("go1-velocity-rough", num_envs=N, terrain=terrain)
        a, b = generated.mjm, given.mjm
        for field in ("geom_type", "geom_pos", "geom_size", "geom_bodyid", "hfield_data"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field), field)
        assert given.task.terrain_bounds == generated.task.terrain_bounds
        np.testing.assert_array_equal(
            given.task.levels.table.numpy(), generated.task.levels.table.numpy()
        )
