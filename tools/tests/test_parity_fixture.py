"""The committed MJLab parity fixtures (tools/parity/README.md) are internally consistent.

Replays nothing: it checks what record_mjlab.py wrote against MJLab's own step arithmetic
(the reward is the dt-scaled sum of the weighted terms, the done flags are the OR of the
termination terms, each observation group is its terms concatenated in order, a reset zeroes
the action history and the episode counter). Needs numpy only.
"""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "packages" / "unilab-envs" / "tests" / "data" / "mjlab"
_spec = importlib.util.spec_from_file_location("parity_fixture", ROOT / "tools/parity/fixture.py")
fixture = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fixture  # dataclasses look their module up there
_spec.loader.exec_module(fixture)

TASKS = {
    "go1_flat": ("Mjlab-Velocity-Flat-Unitree-Go1", 12),
    "g1_flat": ("Mjlab-Velocity-Flat-Unitree-G1", 29),
    "go1_rough": ("Mjlab-Velocity-Rough-Unitree-Go1", 12),
    "g1_rough": ("Mjlab-Velocity-Rough-Unitree-G1", 29),
}
ROUGH = sorted(name for name in TASKS if name.endswith("_rough"))
HFIELD = 1  # mjtGeom.mjGEOM_HFIELD
BOX = 6


@pytest.fixture(scope="module", params=sorted(TASKS))
def fx(request):
    return request.param, fixture.load(DATA / request.param)


def test_metadata_and_shapes(fx):
    name, f = fx
    task, num_actions = TASKS[name]
    assert f.meta["task"] == task
    assert f.meta["versions"]["mjlab"] == "1.6.0"
    assert f.meta["versions"]["mujoco-warp"].startswith("3.11")
    k, n = f.num_steps, f.num_envs
    assert (k, n) == (f.meta["steps"], f.meta["num_envs"])
    assert n == 4 and k in (25, 40)
    assert f["action"].shape == (k, n, num_actions)
    assert len(f.meta["action"]["joint_names"]) == num_actions
    assert f.meta["step_dt"] == pytest.approx(f.meta["physics_dt"] * f.meta["decimation"])
    for key, spec in f.meta["arrays"].items():
        assert list(f[key].shape) == spec["shape"], key
        lead = f[key].shape[:2]
        if key.startswith("terrain/"):
            continue  # the terrain's geometry and grid (test_terrain_geometry)
        if key.startswith(("post/", "obs/", "obs_term/")):
            assert lead == (k + 1, n), key
        elif key.startswith(("model/", "robot/")):
            assert f[key].shape[0] == n, key
        else:
            assert lead == (k, n), key
    for group in f.obs_groups():
        assert f[f"obs/{group}"].shape[2] == f.meta["observations"][group]["dim"][0]
    assert np.all(np.abs(f["action"]) <= 1.0)


def test_finite(fx):
    _, f = fx
    zero_weight = {r["name"] for r in f.reward_terms() if r["weight"] == 0.0}
    for key, value in f.arrays.items():
        if not np.issubdtype(value.dtype, np.floating):
            continue
        if key.startswith("rew_raw/") and key.split("/", 1)[1] in zero_weight:
            # MJLab never evaluates zero-weight terms; stateful ones stay NaN on record.
            continue
        assert np.all(np.isfinite(value)), key


def test_reward_is_dt_scaled_sum_of_weighted_terms(fx):
    _, f = fx
    dt = f.meta["step_dt"]
    total = np.zeros_like(f["reward"])
    for term in f.reward_terms():
        weighted = f[f"rew_weighted/{term['name']}"]
        raw = f[f"rew_raw/{term['name']}"]
        if term["weight"] == 0.0:
            assert np.all(weighted == 0.0)
            continue
        np.testing.assert_allclose(weighted, term["weight"] * raw, rtol=1e-5, atol=1e-7)
        total = total + (weighted * np.float32(dt)).astype(np.float32)
    np.testing.assert_allclose(f["reward"], total, rtol=1e-5, atol=1e-6)
    # Tracking terms are exp(-e/std^2): in [0, 1] (random joint poses underflow to 0).
    for name in ("track_linear_velocity", "track_angular_velocity", "upright", "pose"):
        assert np.all((f[f"rew_raw/{name}"] >= 0) & (f[f"rew_raw/{name}"] <= 1))


def test_done_flags_are_the_or_of_termination_terms(fx):
    _, f = fx
    terminated = np.zeros(f["terminated"].shape, bool)
    truncated = np.zeros_like(terminated)
    for term in f.termination_terms():
        value = f[f"term/{term['name']}"]
        if term["time_out"]:
            truncated |= value
        else:
            terminated |= value
    np.testing.assert_array_equal(f["terminated"], terminated)
    np.testing.assert_array_equal(f["truncated"], truncated)
    # time_out is the episode counter against the limit, as MJLab's time_out computes it.
    np.testing.assert_array_equal(
        f["term/time_out"], f["mid/episode_length"] >= f.meta["max_episode_length"]
    )
    assert terminated.any(), "the fixture should hold at least one episode end"


def test_reset_zeroes_history_and_redraws_command(fx):
    _, f = fx
    done = f["terminated"] | f["truncated"]
    before = f["post/episode_length"][:-1]  # state each step starts from
    after = f["post/episode_length"][1:]
    np.testing.assert_array_equal(f["mid/episode_length"], before + 1)
    np.testing.assert_array_equal(after, np.where(done, 0, before + 1))
    np.testing.assert_array_equal(f["mid/action/action"], f["action"])
    np.testing.assert_array_equal(f["mid/action/prev_action"], f["post/action/action"][:-1])
    for key in ("action", "prev_action", "prev_prev_action"):
        assert np.all(f[f"post/action/{key}"][1:][done] == 0.0)
    kept = ~done
    np.testing.assert_array_equal(f["post/action/action"][1:][kept], f["action"][kept])
    # A reset draws a fresh command: counter 1, timer within the resampling range.
    lo, hi = f.meta["command"]["cfg"]["resampling_time_range"]
    assert np.all(f["post/command/command_counter"][1:][done] == 1)
    left = f["post/command/time_left"][1:][done]
    assert np.all((left >= lo) & (left <= hi))


def test_observation_groups_are_their_terms_concatenated(fx):
    _, f = fx
    for group in f.obs_groups():
        parts = []
        for term in f.meta["observations"][group]["terms"]:
            value = f[f"obs_term/{group}/{term['name']}"].astype(np.float32)
            assert value.shape[2] == term["dim"][0], term["name"]
            if term["clip"] is not None:
                value = np.clip(value, *term["clip"])
            if term["scale"] is not None:
                value = value * np.float32(term["scale"])
            parts.append(value)
        np.testing.assert_array_equal(f[f"obs/{group}"], np.concatenate(parts, axis=2))
    # Corruption was off, and the terms read the recorded state.
    assert not f.meta["observations"]["actor"]["enable_corruption_recorded"]
    assert f.meta["observations"]["actor"]["enable_corruption_configured"]
    np.testing.assert_array_equal(f["obs_term/actor/actions"], f["post/action/action"])
    np.testing.assert_array_equal(f["obs_term/actor/command"], f["post/command/vel_command_b"])
    joint_rel = f["obs_term/critic/joint_pos"] + f["robot/default_joint_pos"]
    biased_rel = f["obs_term/actor/joint_pos"] - f["robot/encoder_bias"]
    np.testing.assert_allclose(biased_rel, f["obs_term/critic/joint_pos"], atol=1e-6)
    qpos = f["post/data/qpos"][..., 7:]  # free joint first; actuated joints in action order
    np.testing.assert_allclose(joint_rel, qpos, atol=1e-6)


@pytest.fixture(scope="module", params=ROUGH)
def rough(request):
    return fixture.load(DATA / request.param)


def test_terrain_geometry(rough):
    # The recorded terrain is MJLab's generator output, on a grid of its own: boxes and
    # heightfields on the terrain body, one column per sub-terrain type.
    f = rough
    gen = f.meta["terrain"]["generator"]
    assert f.meta["terrain"]["override"] == "small" and gen["curriculum"]
    kinds = f["terrain/geom_type"]
    assert {HFIELD, BOX} <= set(kinds.tolist())
    hf = kinds == HFIELD
    ids = f["terrain/geom_dataid"][hf]
    assert sorted(ids.tolist()) == list(range(len(f["terrain/hfield_size"])))
    assert np.all(f["terrain/geom_dataid"][~hf] == -1)
    cells = int((f["terrain/hfield_nrow"] * f["terrain/hfield_ncol"]).sum())
    data = f["terrain/hfield_data"]
    assert len(data) == cells and data.min() >= 0.0 and data.max() <= 1.0
    assert f["terrain/geom_pos"].dtype == np.float64  # exact, not the float32 of the rest
    rows, cols = f["terrain/origins"].shape[:2]
    assert (rows, cols) == (gen["num_rows"], len(gen["sub_terrains"]))
    types = f["terrain/types"]
    assert np.all(np.diff(types) >= 0) and set(types.tolist()) == set(range(cols))


def test_env_origins_follow_the_terrain_levels(rough):
    # MJLab's TerrainEntity: each env's origin is the tile (level, type).
    f = rough
    rows = f["terrain/origins"].shape[0]
    for where in ("mid", "post"):
        levels = f[f"{where}/terrain/levels"]
        assert levels.min() >= 0 and levels.max() < rows
        expected = f["terrain/origins"][levels, f["terrain/types"][None, :]]
        np.testing.assert_array_equal(f[f"{where}/terrain/env_origins"], expected)
    # Levels move only at resets.
    done = f["terminated"] | f["truncated"]
    moved = f["post/terrain/levels"][1:] != f["post/terrain/levels"][:-1]
    assert not np.any(moved & ~done)


def test_out_of_terrain_bounds_is_the_root_against_the_limit(rough):
    f = rough
    gen = f.meta["terrain"]["generator"]
    (oob,) = [t for t in f.termination_terms() if t["name"] == "out_of_terrain_bounds"]
    rows, cols = f["terrain/origins"].shape[:2]
    margin = oob["params"]["margin"]
    limit_x = rows * gen["size"][0] / 2 + gen["border_width"] - margin
    limit_y = cols * gen["size"][1] / 2 + gen["border_width"] - margin
    root = f.meta["model_names"]["body"].index("robot/" + f.meta["robot"]["body_names"][0])
    xy = f["mid/data/xpos"][:, :, root, :2]  # the root link, one substep stale
    expected = (np.abs(xy[..., 0]) > limit_x) | (np.abs(xy[..., 1]) > limit_y)
    np.testing.assert_array_equal(f["term/out_of_terrain_bounds"], expected)
    assert f["term/out_of_terrain_bounds"].any(), "the window should hold a bounds time-out"


def test_height_scan_is_bounded_and_the_terrain_normal_a_unit_up_vector(rough):
    f = rough
    max_d = f.meta["sensors"]["terrain_scan"]["cfg"]["max_distance"]
    for group in ("actor", "critic"):
        scan = f[f"obs_term/{group}/height_scan"]
        assert scan.shape[2] == 17 * 11 and scan.min() >= 0.0 and scan.max() <= max_d
    normal = (
        f["mid/reward_state/upright/terrain_normal"] if "go1" in f.meta["task"].lower() else None
    )
    if normal is not None:
        np.testing.assert_allclose(np.linalg.norm(normal, axis=-1), 1.0, atol=1e-5)
        assert np.all(normal[..., 2] > 0) and np.abs(normal[..., :2]).max() > 0.05
