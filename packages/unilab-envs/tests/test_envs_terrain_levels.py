"""Terrain levels (MJLab's terrain_levels_vel) and the rough tasks' spawning and bounds, on CPU."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
import torch
import warp as wp

from unilab_envs.mdp.terrain import terrain_normal
from unilab_envs.terrain import (
    FlatTerrain,
    PyramidStairsTerrain,
    TerrainConfig,
    TerrainLevels,
    add_terrain,
    proportional_counts,
)
from unilab_envs.testing import mjlab_robot

SMALL = TerrainConfig(
    sub_terrains=(
        FlatTerrain(name="flat", proportion=0.5),
        PyramidStairsTerrain(name="stairs", proportion=0.5, step_height_range=(0.0, 0.1)),
    ),
    num_rows=3,
    border_width=2.0,
)


def _levels(n: int, **kw) -> TerrainLevels:
    layout = add_terrain(mujoco.MjSpec(), SMALL)
    levels = TerrainLevels(layout, episode_length_s=20.0, **kw)
    levels.bind(n, "cpu")
    return levels


def test_proportional_counts_match_mjlab():
    assert proportional_counts(10, [0.2, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1]).tolist() == [
        2, 2, 2, 1, 1, 1, 1,
    ]  # fmt: skip
    assert proportional_counts(3, [0.5, 0.5, 0.25]).tolist() == [1, 1, 1]
    assert proportional_counts(2, [0.2, 0.5, 0.3]).tolist() == [0, 1, 1]


def test_initial_levels_and_types():
    lv = _levels(8, max_init_level=1)
    levels, types = lv.levels.numpy(), lv.types.numpy()
    assert types.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]  # by env index, in proportion
    assert set(levels.tolist()) <= {0, 1}
    table = lv.layout.origins
    np.testing.assert_allclose(lv.origin.numpy(), table[levels, types], atol=1e-6)
    again = _levels(8, max_init_level=1)  # the terrain seed fixes them: the same on every rank
    assert again.levels.numpy().tolist() == levels.tolist()


def test_the_level_rule_against_a_hand_computed_case():
    """Half tile = 4 m; the command's asked distance = |v_xy| * 20 s / 2."""
    n = 6
    lv = _levels(n, max_init_level=0)
    t = lv._torch
    start = torch.tensor([1, 1, 1, 2, 0, 1], dtype=torch.int32)
    lv.adopt_levels(start)
    table = torch.as_tensor(lv.layout.origins, dtype=torch.float32)
    types = torch.as_tensor(lv.types.numpy(), dtype=torch.long)
    t["origin"].copy_(table[start.long(), types])
    origin = t["origin"].numpy().copy()
    #            walked (m), |command xy| (m/s)   -> expected
    walked = [5.0, 1.0, 3.0, 4.5, 0.5, 9.0]
    speed = [0.1, 0.5, 0.2, 0.0, 1.0, 1.0]
    # 0: 5 > 4 up; 1: 1 < 0.5 * 10 = 5 down; 2: 3 > 2, < 4: stays; 3: up past the top (2):
    # a random level; 4: down below 0 stays 0; 5: not reset
    xpos = np.zeros((n, 1, 3), dtype=np.float32)
    xpos[:, 0, :] = origin
    xpos[:, 0, 0] += np.asarray(walked) * 0.6
    xpos[:, 0, 1] += np.asarray(walked) * 0.8
    cmd = np.zeros((n, 3), dtype=np.float32)
    cmd[:, 0], cmd[:, 2] = speed, 3.0  # the yaw rate does not count
    mask = wp.array([True] * 5 + [False], dtype=wp.bool, device="cpu")
    counter = wp.array([7], dtype=wp.int32, device="cpu")
    args = (
        3, counter, mask, wp.array([1], dtype=wp.int32, device="cpu"),
        wp.array(xpos, dtype=wp.vec3, device="cpu"), 0, wp.array(cmd, dtype=wp.vec3, device="cpu"),
    )  # fmt: skip
    lv.move(*args)
    got = lv.levels.numpy()
    assert got[[0, 1, 2, 4, 5]].tolist() == [2, 0, 1, 0, 1]
    assert 0 <= got[3] < 3
    assert lv.outcome_counts().numpy().tolist() == [[1, 0, 0, 1, 0, 0], [0, 1, 0, 0, 1, 0]]
    np.testing.assert_allclose(
        lv.origin.numpy()[:5], table[torch.as_tensor(got[:5]).long(), types[:5]].numpy()
    )
    np.testing.assert_allclose(lv.origin.numpy()[5], origin[5])  # not reset: not moved
    # before the env's first step: no move at all
    fresh = _levels(n, max_init_level=0)
    fresh.move(*args[:3], wp.array([0], dtype=wp.int32, device="cpu"), *args[4:])
    assert fresh.levels.numpy().tolist() == [0] * n
    assert fresh.outcome_counts().sum() == 0


def test_global_rule_and_resplit():
    lv = _levels(4, max_init_level=0)
    lv.adopt_levels(torch.tensor([1, 2, 0, 1], dtype=torch.int32))
    # summed over ranks: slot 0 net up, 1 net up past the top, 2 net down at 0, 3 even
    lv.apply_outcomes(torch.tensor([[2, 1, 0, 1], [1, 0, 3, 1]], dtype=torch.int32))
    got = lv.levels.numpy().tolist()
    assert got[0] == 2 and got[2] == 0 and got[3] == 1 and 0 <= got[1] < 3
    assert lv.shared.numpy().tolist() == got and lv.outcome_counts().sum() == 0
    # a state of 4 worlds (types 0 0 1 1) into 6 (types 0 0 0 1 1 1): re-split by type
    state = lv.state_dict()
    big = _levels(6)
    big.load_state_dict(state)
    assert big.levels.numpy().tolist() == [got[0], got[1], got[0], got[2], got[3], got[2]]
    table = big.layout.origins
    np.testing.assert_allclose(
        big.origin.numpy(), table[big.levels.numpy(), big.types.numpy()], atol=1e-6
    )
    with pytest.raises(ValueError, match="levels"):
        big.load_state_dict({**state, "rows": 5})


@pytest.fixture(scope="module")
def rough_env():
    import unilab_envs

    mjlab_robot("go1")  # skip (or fail) with the reason when no go1.xml is found
    terrain = {"num_rows": 2, "tile_size": (4.0, 4.0), "border_width": 1.0}
    env = unilab_envs.make("go1-velocity-rough", num_envs=7, device="cpu", terrain=terrain)
    env.reset()
    return env


def test_rough_env_reports_a_per_world_curriculum(rough_env):
    features = rough_env.features
    assert features.curriculum is rough_env.curriculum
    assert isinstance(features.curriculum, TerrainLevels)
    assert features.curriculum_mode == "per_world"
    assert features.action_bound is None  # MJLab's tasks act unbounded


def test_rough_worlds_spawn_on_their_tile(rough_env):
    env = rough_env
    lv, task = env.curriculum, env.task
    assert env.observation_shapes == {"policy": (48 + 187,), "critic": (72 + 187,)}
    assert lv.types.numpy().tolist() == list(range(7))  # one world per type
    origin = lv.layout.origins[lv.levels.numpy(), lv.types.numpy()]
    base = env.ctx.data.qpos.numpy()[:, :3]
    assert np.all(np.abs(base[:, :2] - origin[:, :2]) <= 0.5 + 1e-5)
    dz = base[:, 2] - origin[:, 2] - task.robot.init_height
    assert np.all((dz >= 0.01 - 1e-5) & (dz <= 0.05 + 1e-5))
    # the critic's height scan: (base z - ground z) / 5; world 0 is on the flat type (z = 0)
    obs = env.get_observations()
    critic = obs["obs", "critic"][:, 48 : 48 + 187].numpy()
    np.testing.assert_allclose(critic[0], base[0, 2] / 5.0, atol=1e-5)
    assert np.all(critic > 0.0) and np.all(critic < 1.0)
    actor = obs["obs", "policy"][:, 48:].numpy()  # the same plus noise of +-0.1 m before / 5
    assert np.all(np.abs(actor - critic) <= 0.1 / 5.0 + 1e-6) and np.any(actor != critic)


def test_leaving_the_terrain_is_a_time_out(rough_env):
    env = rough_env
    lim = env.task.terrain_bounds[0]  # 2 rows * 4 m / 2 + 1 m border - 0.3 m margin
    assert lim == pytest.approx(4.0 + 1.0 - 0.3)
    qpos = env.ctx.data.qpos.numpy().copy()
    qpos[0, 0] = lim + 0.5
    qpos[1, 1] = -(7 * 4.0 / 2 + 1.0 - 0.3 + 0.5)
    env.task.load_state(env.ctx, {"qpos": qpos})
    out = env.step(torch.zeros(7, env.action_dim))
    assert out["truncated"][:2].all() and not out["terminated"][:2].any()
    assert not out["done"][2:].any()


def test_foot_heights_are_the_ring_scans_clearance(rough_env):
    """World 0 stands on the flat type (ground z = 0): every ring ray hits at z = 0, so each
    foot's clearance is its site's height; G1-sized rings and misses use the same kernel."""
    env = rough_env
    env.reset()
    qpos = env.ctx.data.qpos.numpy().copy()
    qpos[0, 2] += 0.3  # lift world 0: feet 0.3 m up, below the 1 m ring range
    env.task.load_state(env.ctx, {"qpos": qpos})
    out = env.step(torch.zeros(7, env.action_dim))
    assert not out["done"][0]
    site_z = env.ctx.data.site_xpos.numpy()[0, env.task._host["foot_site"], 2]
    assert np.all(site_z > 0.2)
    np.testing.assert_allclose(env.task.foot_height.numpy()[0], site_z, atol=1e-4)
    critic = out["obs", "critic"][0].numpy()
    np.testing.assert_allclose(critic[48 + 187 : 48 + 187 + 4], site_z, atol=1e-4)


def test_g1_rough_layout_steps_and_deployment_info():
    import unilab_envs

    robot = mjlab_robot("g1")
    terrain = {"num_rows": 2, "border_width": 1.0}
    env = unilab_envs.make("g1-velocity-rough", num_envs=4, robot=robot, terrain=terrain)
    assert env.observation_shapes == {"policy": (99 + 187,), "critic": (111 + 187,)}
    task = env.task
    assert env.mjm.body(task._scan_body).name == "pelvis"
    assert task._foot_scan.rays_per_frame == 7 and task._foot_scan.num_frames == 2
    funcs = task.terms.functions  # fell_over on, upright against gravity, no touch sensors
    assert funcs["terminations.fell_over"] == "bad_orientation"
    assert funcs["rewards.upright"] == "upright" and "terminations.illegal_contact" not in funcs
    assert task.touch_force.shape[1] == 0
    env.reset()
    gen = torch.Generator().manual_seed(0)
    for _ in range(5):
        out = env.step(0.3 * torch.randn(4, env.action_dim, generator=gen))
        assert torch.isfinite(out["obs", "critic"]).all()
    policy = env.task.deployment_info()["observations"]["policy"]
    assert (policy[-1]["name"], policy[-1]["size"], policy[-1]["scale"]) == (
        "height_scan",
        187,
        0.2,
    )


@wp.kernel
def _normal_kernel(
    pnt: wp.array2d(dtype=wp.vec3),
    vec: wp.array2d(dtype=wp.vec3),
    dist: wp.array2d(dtype=float),
    idx: wp.array(dtype=wp.int32),
    out: wp.array(dtype=wp.vec3),
):
    w = wp.tid()
    out[w] = terrain_normal(w, pnt, vec, dist, idx, 5.0)


def test_upright_terrain_normal_is_the_plane_fit_of_the_scan():
    """MJLab's fit_terrain_normal on 32 of the 187 terrain_scan rays: a tilted plane gives its
    upward normal; too few hits or collinear hits give (0, 0, 1)."""
    from unilab_envs.terrain import GridPattern

    offsets = GridPattern().offsets()
    n = len(offsets)
    pnt = np.zeros((3, n, 3), np.float32)
    pnt[:, :, :2] = offsets[:, :2]
    pnt[:, :, 2] = 1.0
    a, b = 0.3, -0.2  # world 0: the plane z = a x + b y
    dist = np.stack([1.0 - (a * offsets[:, 0] + b * offsets[:, 1]), np.full(n, -1.0), np.ones(n)])
    dist[1, :2] = 1.0  # world 1: two hits only
    pnt[2, :, 1] = 0.0  # world 2: every hit on the line y = 0
    vec = np.zeros((3, n, 3), np.float32)
    vec[:, :, 2] = -1.0
    idx = np.linspace(0, n - 1, 32).astype(np.int32)
    out = wp.zeros(3, dtype=wp.vec3, device="cpu")
    arrays = [wp.array(x, dtype=t, device="cpu") for x, t in ((pnt, wp.vec3), (vec, wp.vec3))]
    wp.launch(
        _normal_kernel,
        dim=3,
        inputs=[
            *arrays,
            wp.array(dist.astype(np.float32), device="cpu"),
            wp.array(idx, dtype=wp.int32, device="cpu"),
            out,
        ],
        device="cpu",
    )
    got = out.numpy()
    want = np.array([-a, -b, 1.0]) / np.linalg.norm([-a, -b, 1.0])
    np.testing.assert_allclose(got[0], want, atol=1e-5)
    np.testing.assert_allclose(got[1], [0, 0, 1])
    np.testing.assert_allclose(got[2], [0, 0, 1])


def test_the_scan_that_upright_reads_is_in_the_env_state(rough_env):
    import unilab_envs

    env = rough_env
    env.step(torch.zeros(7, env.action_dim))
    state = env.state_dict()
    assert {"task.scan_pnt", "task.scan_vec", "task.scan_dist"} <= set(state["arrays"])
    terrain = {"num_rows": 2, "tile_size": (4.0, 4.0), "border_width": 1.0}
    other = unilab_envs.make("go1-velocity-rough", num_envs=7, device="cpu", terrain=terrain)
    other.reset()
    other.load_state_dict(state)
    for name in ("scan_pnt", "scan_vec", "scan_dist"):
        assert np.array_equal(getattr(other.task, name).numpy(), getattr(env.task, name).numpy())
    assert np.array_equal(other.curriculum.levels.numpy(), env.curriculum.levels.numpy())
