"""bench_time_to_walk.py: checkpoint times of both sides' runs and the reference rule."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "bench"))
import bench_time_to_walk as ttw  # noqa: E402


def test_mjlab_checkpoint_times_come_from_the_iteration_lines(tmp_path):
    run_dir = tmp_path / "go1_velocity" / "2026-12-01_00-00-00"
    run_dir.mkdir(parents=True)
    for it in (0, 60, 120, 999):  # 999: saved after the last parsed line, no time
        (run_dir / f"model_{it}.pt").write_bytes(b"")
    iterations = [
        {
            "iteration": i,
            "wall_s": 40.0 + 1.5 * (i + 1),
            "iteration_s": 1.5,
            "total_steps": 98304 * (i + 1),
        }
        for i in range(121)
    ]
    doc = {
        "task": "Mjlab-Velocity-Flat-Unitree-Go1",
        "args": {"seed": 3},
        "runs": [{"log_root": str(tmp_path), "iterations": iterations}],
    }
    task, seed, points = ttw.mjlab_checkpoints(doc)
    assert (task, seed) == ("go1-velocity-flat", 3)
    assert [p["iteration"] for p in points] == [0, 60, 120]
    # the first iteration started at 40 s (its line at 41.5 s, 1.5 s long)
    assert [p["time_s"] for p in points] == [1.5, 91.5, 181.5]
    assert points[1]["env_steps"] == 98304 * 61
    # it trained until its last line: iteration 120's, 181.5 s; one more line, later, counts
    assert ttw.trained_s(doc) == 181.5
    doc["runs"][0]["iterations"] += [{"iteration": 121, "wall_s": 260.0, "iteration_s": 1.5}]
    assert ttw.trained_s(doc) == 220.0


def test_unilab_checkpoints_take_the_times_of_their_iterations(tmp_path):
    ckpts = tmp_path / "runA" / "checkpoints"
    ckpts.mkdir(parents=True)
    for it in (100, 200):
        (ckpts / f"ckpt_{it:06d}.pt").write_bytes(b"")
    points = [
        {"iteration": i, "wall_s": 90.0 + i, "time_s": float(i), "env_steps": 1000.0 * i}
        for i in range(1, 201)
    ]
    doc = {
        "kind": "time_to_threshold",
        "args": {"run_dir": str(tmp_path), "name": "runA", "algo": "ppo"},
        "config": {"env": {"task": "go1-velocity-flat"}, "runner": {"seed": 1}},
        "curves": {"ppo go1-velocity-flat, 1gpu": {"points": points}},
    }
    task, seed, got = ttw.unilab_checkpoints(doc)
    assert (task, seed) == ("go1-velocity-flat", 1)
    assert [(p["iteration"], p["time_s"], p["wall_s"]) for p in got] == [
        (100, 100.0, 190.0),
        (200, 200.0, 290.0),
    ]
    points.append({"iteration": 201, "wall_s": 291.0, "time_s": 201.0, "env_steps": 201000.0})
    assert ttw.trained_s(doc) == 201.0


def _run(side, pts):
    keys = ("time_s", "lin_vel_error", "yaw_rate_error", "time_limit_fraction")
    return {
        "side": side,
        "task": "g1-velocity-flat",
        "label": side,
        "seed": 0,
        "points": [dict(zip(keys, p, strict=True)) for p in pts],
    }


def test_reference_is_the_mean_of_mjlab_runs_at_the_reference_time():
    mj = [
        _run("mjlab", [(60, 0.9, 0.9, 0.2), (590, 0.3, 0.4, 0.9), (650, 0.1, 0.1, 1.0)]),
        _run("mjlab", [(300, 0.5, 0.5, 0.5), (600, 0.5, 0.6, 0.7)]),
    ]
    ref = ttw.reference(mj, 600.0)
    assert ref["runs"] == 2
    assert abs(ref["lin_vel_error"] - 0.4) < 1e-12
    assert abs(ref["yaw_rate_error"] - 0.5) < 1e-12
    assert abs(ref["time_limit_fraction"] - 0.8) < 1e-12
    assert ref["left_out"] == 0 and not ref["short"]
    assert ttw.reference([_run("mjlab", [(700, 0.1, 0.1, 1.0)])], 600.0) is None


def test_runs_shorter_than_the_reference_time_count_only_when_no_run_is_long_enough():
    full = _run("mjlab", [(300, 0.5, 0.5, 0.5), (590, 0.3, 0.4, 0.9), (650, 0.1, 0.1, 1.0)])
    short = _run("mjlab", [(120, 0.9, 0.9, 0.1), (360, 0.7, 0.7, 0.3)])
    ref = ttw.reference([short, full], 600.0)
    assert (ref["runs"], ref["left_out"], ref["short"]) == (1, 1, False)
    assert ref["lin_vel_error"] == 0.3 and ref["time_s"] == 590
    alone = ttw.reference([short], 600.0)
    assert (alone["runs"], alone["left_out"], alone["short"]) == (1, 0, True)
    assert alone["lin_vel_error"] == 0.7 and alone["time_s"] == 360


def test_a_run_that_trained_past_the_reference_time_counts_with_its_last_earlier_checkpoint():
    # MJLab saves every 60 iterations: a run that trained 613 s may have its last checkpoint at
    # 574 s; it trained the reference's 600 s, so its 574 s checkpoint stands for it
    saved_early = _run("mjlab", [(300, 0.5, 0.5, 0.5), (574, 0.4, 0.2, 0.8)])
    saved_late = _run("mjlab", [(552, 0.2, 0.1, 0.9), (612, 0.1, 0.1, 1.0)])
    ref = ttw.reference([saved_early, saved_late], 600.0)
    assert (ref["runs"], ref["left_out"]) == (1, 1)  # without trained_s: its points end short
    saved_early["trained_s"] = 613.0
    ref = ttw.reference([saved_early, saved_late], 600.0)
    assert (ref["runs"], ref["left_out"], ref["short"]) == (2, 0, False)
    assert ref["lin_vel_error"] == pytest.approx(0.3) and ref["time_s"] == 563
    saved_early["trained_s"] = 590.0  # stopped before 600 s: left out again
    assert ttw.reference([saved_early, saved_late], 600.0)["left_out"] == 1


def test_a_run_reaches_the_reference_only_when_no_worse_on_all_three_metrics():
    ref = {"lin_vel_error": 0.4, "yaw_rate_error": 0.5, "time_limit_fraction": 0.8}
    run = _run(
        "unilab",
        [(30, 0.3, 0.4, 0.7), (60, 0.41, 0.3, 0.9), (90, 0.4, 0.5, 0.8), (120, 0.1, 0.1, 1.0)],
    )
    assert ttw.time_to_reference(run, ref) == 90
    assert ttw.time_to_reference(_run("unilab", [(30, 0.5, 0.5, 0.9)]), ref) is None
    table = ttw.summary([_run("mjlab", [(600, 0.4, 0.5, 0.8)]), run], 600.0)
    rows = table["g1-velocity-flat"]["runs"]
    assert [r["time_to_reference_s"] for r in rows] == [600, 90]


def test_a_run_meets_the_reference_within_the_evaluators_noise():
    ref_run = _run("mjlab", [(600, 0.4, 0.5, 0.8)])
    # 0.42 m/s and 0.79 survival: worse than the reference, by less than the noise
    run = _run("unilab", [(30, 0.46, 0.5, 0.9), (60, 0.42, 0.49, 0.79), (90, 0.3, 0.3, 0.9)])
    assert (
        ttw.summary([ref_run, run], 600.0)["g1-velocity-flat"]["runs"][1]["time_to_reference_s"]
        == 90
    )  # no noise recorded: strict
    run["noise"] = {"lin_vel_error": 0.03, "yaw_rate_error": 0.01, "time_limit_fraction": 0.01}
    other = _run("unilab", [(30, 0.9, 0.9, 0.1)])
    other["noise"] = {"lin_vel_error": 0.01, "yaw_rate_error": 0.01, "time_limit_fraction": 0.03}
    table = ttw.summary([ref_run, run, other], 600.0)["g1-velocity-flat"]
    assert table["noise"]["lin_vel_error"] == pytest.approx(0.02)  # the mean over two runs
    assert table["noise"]["runs"] == 2
    assert [r["time_to_reference_s"] for r in table["runs"]] == [600, 60, None]
    assert not ttw.reaches(
        {"lin_vel_error": 0.43, "yaw_rate_error": 0.5, "time_limit_fraction": 0.8},
        table["reference"],
        table["noise"],
    )


def test_when_mjlabs_seeds_disagree_each_seed_is_a_reference_as_well():
    # G1's two MJLab seeds at 600 s trade tracking for survival: neither meets their mean
    fast = _run("mjlab", [(560, 0.86, 0.53, 0.77)])
    safe = _run("mjlab", [(570, 1.05, 0.51, 0.95)])
    safe["seed"] = 1
    run = _run("unilab", [(100, 1.0, 0.5, 0.96), (150, 0.8, 0.5, 0.8)])
    table = ttw.summary([fast, safe, run], 600.0)["g1-velocity-flat"]
    assert [(s["seed"], s["meets_mean"]) for s in table["seed_references"]] == [
        (0, False),
        (1, False),
    ]
    assert table["runs"][2]["time_to_reference_s"] is None  # 0.955 m/s mean: not at 100 s
    assert table["runs"][2]["time_to_seed_s"] == {"0": 150, "1": 100}
    # seeds that agree add nothing
    agree = _run("mjlab", [(560, 0.86, 0.53, 0.77)])
    agree["seed"] = 1
    table = ttw.summary([fast, agree, run], 600.0)["g1-velocity-flat"]
    assert "seed_references" not in table and "time_to_seed_s" not in table["runs"][2]


def _level_run(side, pts):
    return {
        "side": side,
        "task": "go1-velocity-rough",
        "label": side,
        "seed": 0,
        "source": f"{side}.json",
        "points": [
            {"iteration": i, "time_s": t, "env_steps": 1000.0 * i, "terrain_level": lv}
            for i, (t, lv) in enumerate(pts)
        ],
    }


def test_level_curves_read_both_sides_runs():
    mj_iterations = [
        {"iteration": 0, "wall_s": 401.5, "iteration_s": 1.5, "total_steps": 98304},
        {"iteration": 1, "wall_s": 403.0, "iteration_s": 1.5, "total_steps": 196608},
        {"iteration": 2, "wall_s": 404.5, "iteration_s": 1.5, "terrain_level": 2.25},
    ]
    mj_iterations[0]["terrain_level"], mj_iterations[1]["terrain_level"] = 2.5, 2.4
    mj = ttw.level_curve(
        "mjlab_r.json",
        {
            "task": "Mjlab-Velocity-Rough-Unitree-Go1",
            "args": {"seed": 0},
            "runs": [{"log_root": "/nowhere", "iterations": mj_iterations}],
        },
    )
    assert (mj["side"], mj["task"], mj["seed"]) == ("mjlab", "go1-velocity-rough", 0)
    assert [(p["time_s"], p["terrain_level"]) for p in mj["points"]] == [
        (1.5, 2.5),
        (3.0, 2.4),
        (4.5, 2.25),
    ]
    points = [
        {"iteration": 1, "time_s": 0.7, "wall_s": 40.7, "env_steps": 98304.0, "terrain_level": 2.5},
        {
            "iteration": 2,
            "time_s": 1.4,
            "wall_s": 41.4,
            "env_steps": 196608.0,
            "terrain_level": None,
        },
    ]
    ul = ttw.level_curve(
        "ttt_r.json",
        {
            "kind": "time_to_threshold",
            "args": {"algo": "ppo", "preset": "default"},
            "config": {"env": {"task": "go1-velocity-rough"}, "runner": {"seed": 1}},
            "curves": {"ppo go1-velocity-rough, 1gpu": {"points": points}},
        },
    )
    assert (ul["label"], ul["seed"]) == ("UniLab ppo (default)", 1)
    assert [p["iteration"] for p in ul["points"]] == [1]  # a point without a level is left out
    with pytest.raises(SystemExit, match="no terrain level"):
        ttw.level_curve("ttt_flat.json", {**_flat_ttt(), "curves": {"c": {"points": points[1:]}}})


def _flat_ttt():
    return {
        "kind": "time_to_threshold",
        "args": {"algo": "ppo"},
        "config": {"env": {"task": "go1-velocity-flat"}, "runner": {"seed": 0}},
    }


def test_a_run_reaches_a_level_only_after_its_lowest_point():
    # the levels start spread (mean 2.5) and fall before the policy walks: the start does not
    # count as reaching MJLab's level
    run = _level_run("unilab", [(1, 2.5), (50, 0.2), (100, 0.01), (150, 0.05), (200, 0.3)])
    assert ttw.time_to_level(run, 0.1) == 200
    assert ttw.time_to_level(run, 0.05) == 150
    assert ttw.time_to_level(run, 1.0) is None
    mj = _level_run("mjlab", [(1, 2.5), (300, 0.0), (590, 0.08), (650, 0.4)])
    table = ttw.level_summary([mj, run], 600.0)
    entry = table["tasks"]["go1-velocity-rough"]
    assert entry["reference"]["terrain_level"] == 0.08 and entry["reference"]["time_s"] == 590
    assert [r["time_to_reference_s"] for r in entry["runs"]] == [590, 200]
    assert table["kind"] == "terrain_levels" and entry["runs"][1]["last"]["terrain_level"] == 0.3


def test_a_unilab_runs_label_names_what_it_set_apart_from_its_preset():
    def label(**args):
        return ttw.unilab_label({"args": {"algo": "ppo", "preset": "default", **args}})

    assert label() == "UniLab ppo (default)"
    # the seed and the matmul precision are set alike in every run of a comparison
    assert label(set=["runner.seed=1", "runner.matmul_precision=high"]) == "UniLab ppo (default)"
    assert (
        label(num_envs=16384, set=["runner.seed=0", "algo.grad_clip=separate"])
        == "UniLab ppo (default), 16384 envs, algo.grad_clip=separate"
    )
    # the random episode start, from the config (a task default or a --set alike)
    start = {"runner": {"random_episode_start": True}}
    doc = {"args": {"algo": "ppo", "set": ["runner.random_episode_start=true"]}, "config": start}
    assert ttw.unilab_label(doc) == "UniLab ppo (default), random episode start"
    doc["args"]["set"] = []
    assert ttw.unilab_label(doc) == "UniLab ppo (default), random episode start"
    doc["config"]["runner"]["random_episode_start"] = False
    assert ttw.unilab_label(doc) == "UniLab ppo (default)"


def test_evaluation_is_written_after_every_checkpoint(tmp_path, monkeypatch):
    """An evaluation stopped while a run's checkpoints are evaluated keeps the points done."""
    import types
    from argparse import Namespace

    ckpts = tmp_path / "runB" / "checkpoints"
    ckpts.mkdir(parents=True)
    for it in (10, 20, 30):
        (ckpts / f"ckpt_{it:06d}.pt").write_bytes(b"")
    doc = {
        "kind": "time_to_threshold",
        "args": {"run_dir": str(tmp_path), "name": "runB", "algo": "fastsac", "set": []},
        "config": {"env": {"task": "go1-velocity-flat"}, "runner": {"seed": 2}},
        "curves": {
            "fastsac go1-velocity-flat, 1gpu": {
                "points": [
                    {"iteration": i, "wall_s": 30.0 + i, "time_s": float(i), "env_steps": 9.0 * i}
                    for i in range(1, 31)
                ]
            }
        },
    }
    src = tmp_path / "ttt_runB.json"
    src.write_text(json.dumps(doc))
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setenv("OUT", str(out))
    seen = []

    def evaluate_tracking(ckpt, **kw):
        seen.append(ckpt)
        if len(seen) == 3:
            # the third checkpoint: the two before it are on disk already
            on_disk = json.loads((out / "ttw_runB.json").read_text())
            assert [p["iteration"] for p in on_disk["points"]] == [10, 20]
            raise KeyboardInterrupt  # stopped here (Ctrl-C)
        return types.SimpleNamespace(
            lin_vel_error=1.0 / len(seen),
            yaw_rate_error=0.1,
            time_limit_fraction=0.5,
            mean_return=3.0,
            episodes=16,
        )

    fakes = {
        "unilab_integration": {
            "load_policy_checkpoint": lambda p, task: p,
            "evaluate_tracking": evaluate_tracking,
            "quiet_warp": lambda: None,
        },
    }
    for name, attrs_ in fakes.items():
        module = types.ModuleType(name)
        module.__dict__.update(attrs_)
        monkeypatch.setitem(sys.modules, name, module)
    args = Namespace(num_envs=16, seed=5, device="cpu")
    with pytest.raises(KeyboardInterrupt):
        ttw.evaluate_run(str(src), args)
    kept = json.loads((out / "ttw_runB.json").read_text())
    assert kept["checkpoints"] == 3 and kept["seed"] == 2 and kept["side"] == "unilab"
    assert [(p["iteration"], p["lin_vel_error"]) for p in kept["points"]] == [(10, 1.0), (20, 0.5)]
    assert not list(out.glob("*.tmp"))


def test_a_missing_or_cut_short_file_is_named_not_a_traceback(tmp_path):
    cut = tmp_path / "ttt_cut.json"
    cut.write_text('{"kind": "time_to_threshold", "curves": {')
    with pytest.raises(SystemExit, match=r"ttt_gone\.json: no such file"):
        ttw.main(["levels", str(tmp_path / "ttt_gone.json")])
    with pytest.raises(SystemExit, match=r"ttt_cut\.json: not JSON .*cut short"):
        ttw.main(["summary", str(cut)])


def _check_two_seed_reference(ref, lin, yaw, time_limit, time_s):
    """A recorded reference: both MJLab seeds counted, and its numbers as mjlab-tasks.md gives
    them (errors to 5e-5, the time-limit fraction to 5e-4, the mean time to 0.1 s)."""
    assert ref["runs"] == 2 and ref["left_out"] == 0 and not ref["short"]
    assert ref["lin_vel_error"] == pytest.approx(lin, abs=5e-5)
    assert ref["yaw_rate_error"] == pytest.approx(yaw, abs=5e-5)
    assert ref["time_limit_fraction"] == pytest.approx(time_limit, abs=5e-4)
    assert ref["time_s"] == pytest.approx(time_s, abs=0.1)
