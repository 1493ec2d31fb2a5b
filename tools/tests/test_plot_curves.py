"""plot_curves.py reads the recorded benchmark JSONs (docs/benchmarks/data) correctly.

Only the parsing and the efficiency arithmetic: the plotting itself needs matplotlib, which the
tools session does not install.
"""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "bench"))
import plot_curves  # noqa: E402

DATA = ROOT / "docs" / "benchmarks" / "data"


def test_recorded_results_give_scaling_and_efficiency():
    learner: list = []
    curves, scaling, profiles = plot_curves.collect(plot_curves.load([str(DATA)]), {}, learner)
    rate = {(s, g): v for s, g, v in scaling}
    # docs/benchmarks/ppo-end-to-end.md: MJLab 109k; UniLab captured 626k -> 1.17M on 2 GPUs
    assert rate["MJLab + RSL-RL", 1] == pytest.approx(109e3, rel=0.01)
    assert rate["UniLab quadruped_capture", 2] == pytest.approx(1.166e6, rel=0.01)
    eff = plot_curves.efficiencies(scaling, learner)
    assert dict(eff["UniLab quadruped_capture"])[2] == pytest.approx(0.931, abs=0.001)
    assert dict(eff["UniLab go1_capture"])[2] == pytest.approx(0.994, abs=0.001)
    # docs/benchmarks/fastsac-learner.md: 264 -> 252 updates/s captured fp32 (95%)
    assert dict(eff["FastSAC learner fp32 captured"])[2] == pytest.approx(252 / 264, abs=0.002)
    assert "MJLab + RSL-RL" not in eff  # measured on 1 GPU only: no efficiency
    # the third lease: MJLab rerun on 1 and 2 GPUs (its own series), the rollout captured
    rerun = "MJLab + RSL-RL (mjlab_go1_2026-11-30c)"
    assert rate[rerun, 1] == pytest.approx(142471, rel=1e-6)
    assert dict(eff[rerun])[2] == pytest.approx(290241 / (2 * 142471), abs=1e-4)
    assert dict(eff["UniLab quadruped_rollout"])[2] == pytest.approx(0.974, abs=0.001)
    assert {p[1] for p in profiles} == {1, 2}
    assert curves  # the end-to-end runs carry per-iteration returns


def test_efficiency_of_a_synthetic_four_gpu_run():
    scaling = [("a", 1, 100.0), ("a", 2, 190.0), ("a", 4, 360.0), ("b", 2, 5.0)]
    learner = [("c", 1, 10.0), ("c", 4, 9.0)]
    eff = plot_curves.efficiencies(scaling, learner)
    assert eff == {"a": [(1, 1.0), (2, 0.95), (4, 0.9)], "c": [(1, 1.0), (4, 0.9)]}


def test_env_steps_axis_keeps_only_the_time_to_threshold_runs():
    marks: dict = {}
    curves, _, _ = plot_curves.collect(
        plot_curves.load([str(DATA / "quadruped_seeds")]), marks, [], x="env_steps"
    )
    assert list(curves) == ["UniLab ppo on quadruped-velocity"]
    lines = curves["UniLab ppo on quadruped-velocity"]
    assert set(lines) == {f"q_{c}_s{s}" for c in ("cap", "eager") for s in (1, 2, 3)} | {
        "q_upd_s1",
        "q_upd_s2",
    }
    xs = [x for x, _ in lines["q_eager_s3"]]
    assert xs == sorted(xs) and 6.0e7 < xs[-1] < 8.0e7  # env steps, not seconds
    assert all(reached is None for _, reached, _ in marks["UniLab ppo on quadruped-velocity"])
    # the other sources carry no env steps per point: nothing else is collected
    everything = plot_curves.collect(plot_curves.load([str(DATA)]), {}, [], x="env_steps")
    assert set(everything[0]) == {
        "UniLab ppo on quadruped-velocity",
        "UniLab fastsac on humanoid-velocity",
        "UniLab ppo on go1-velocity-rough",
        "UniLab ppo on go1-velocity-flat",
        "UniLab fastsac on go1-velocity-flat",
        "UniLab ppo on g1-velocity-flat",
        "UniLab fastsac on g1-velocity-flat",
    }
    assert everything[1] == [] and everything[2] == []


def test_the_deterministic_curve_and_its_reach_are_plotted():
    marks: dict = {}
    curves, _, _ = plot_curves.collect(
        plot_curves.load([str(DATA / "humanoid_eval")]), marks, [], x="time_s"
    )
    lines = curves["UniLab fastsac on humanoid-velocity"]
    assert set(lines) == {
        "h_def_alone",
        "h_def_alone, deterministic policy",
        "h_s1",
        "h_s1, deterministic policy",
    }
    reached = {label: x for _, x, label in marks["UniLab fastsac on humanoid-velocity"]}
    assert reached["h_def_alone"] is None and reached["h_s1"] is None  # training: never
    assert 75 < reached["h_def_alone, deterministic policy"] < 85  # 79 s (iteration 90)
    assert 40 < reached["h_s1, deterministic policy"] < 48  # 44 s (iteration 50)


def test_time_to_walk_runs_become_tracking_series():
    tracking: list = []
    docs = plot_curves.load(
        [
            str(DATA / "ttw_mjlab_go1_flat_s0_2026-12-01.json"),
            str(DATA / "ttw_unilab_go1_flat_default_s0_2026-12-01.json"),
        ]
    )
    curves, scaling, _ = plot_curves.collect(docs, {}, [], "time_s", tracking)
    assert not curves and not scaling  # tracking points only
    by_label = {label: (task, pts) for task, label, pts in tracking}
    task, mj = by_label["MJLab + RSL-RL, seed 0"]
    assert task == "go1-velocity-flat" and len(mj) == 12  # model_0 to model_660
    # docs/benchmarks/mjlab-tasks.md: MJLab's last checkpoint before 600 s
    assert mj[-1]["time_s"] == pytest.approx(574.3, abs=0.1)
    assert mj[-1]["lin_vel_error"] == pytest.approx(0.3709, abs=1e-4)
    _, ul = by_label["UniLab ppo (default), seed 0"]
    assert [p["iteration"] for p in ul] == [400]


def test_a_rerun_of_the_same_seed_is_drawn_beside_the_first_under_its_file_name():
    # mjlab-tasks.md: Go1 `rsl_rl` seed 1 ran on two leases of 2026-12-04
    tracking: list = []
    stem = "unilab_go1_flat_rslrl_captured_s1_2026-12-04"
    names = [f"ttw_{stem}.json", f"ttw_{stem}b.json", f"ttt_{stem}b.json"]
    docs = plot_curves.load([str(DATA / n) for n in names])
    docs.append((f"ttt_{stem}.json", docs[2][1]))  # the same --name from another file
    curves, _, _ = plot_curves.collect(docs, {}, [], "time_s", tracking)
    label = "UniLab ppo (rsl_rl), algo.lr_on_device=true, algo.capture=auto, seed 1"
    by_label = {lab: pts for _, lab, pts in tracking}
    assert set(by_label) == {label, f"{label} (ttw_{stem}b)"}
    assert [p["iteration"] for p in by_label[label]] == [100, 200, 300, 400]
    assert [p["iteration"] for p in by_label[f"{label} (ttw_{stem}b)"]][-1] == 500
    run = "unilab_go1_flat_rslrl_captured_s1"
    assert set(curves["UniLab ppo on go1-velocity-flat"]) == {run, f"{run} (ttt_{stem})"}


def test_terrain_level_summaries_become_level_panels(tmp_path):
    levels: list = []
    docs = plot_curves.load([str(DATA / "ttl_go1_rough_2026-12-04.json")])
    curves, scaling, _ = plot_curves.collect(docs, {}, [], "time_s", [], levels)
    assert not curves and not scaling
    (doc,) = levels
    entry = doc["tasks"]["go1-velocity-rough"]
    # docs/benchmarks/rough-terrain.md: MJLab's 10-minute level (seed 1; seed 0's shorter run
    # left out of the reference), and no UniLab run trained long enough to reach it
    ref = entry["reference"]
    assert ref["time_s"] == pytest.approx(599.2, abs=0.1) and ref["left_out"] == 1
    assert ref["terrain_level"] == pytest.approx(0.8588, abs=1e-4)
    by_seed = {(r["side"], r["seed"]): r for r in entry["runs"]}
    assert by_seed[("unilab", 0)]["time_to_reference_s"] is None
    assert by_seed[("unilab", 0)]["last"]["terrain_level"] == pytest.approx(0.5552, abs=1e-4)
    # both sides' points carry the env steps that trained them (the --x env_steps axis)
    for run in entry["runs"]:
        assert all(p["env_steps"] for p in run["points"])
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    for x in ("time_s", "env_steps"):
        assert plot_curves.plot_levels(plt, levels, str(tmp_path / f"{x}.png"), x)
        assert (tmp_path / f"{x}.png").stat().st_size > 0


def test_a_threshold_far_beyond_the_curves_is_not_drawn():
    returns = [2.0, 40.0, 88.0]
    assert plot_curves.within_reach(90.0, returns)  # just above: drawn, "not reached"
    assert plot_curves.within_reach(150.0, returns)
    assert not plot_curves.within_reach(1e30, returns)  # trained to the cap: no threshold
    assert not plot_curves.within_reach(-500.0, returns)
    assert plot_curves.within_reach(-1.0, [-5.0, -2.0])  # all-negative returns
    assert not plot_curves.within_reach(0.0, [])


def test_tracking_panels_against_env_steps(tmp_path):
    tracking: list = []
    docs = plot_curves.load(
        [
            str(DATA / "ttw_mjlab_g1_flat_s0_2026-12-04.json"),
            str(DATA / "ttw_unilab_g1_flat_default_s0_2026-12-04.json"),
        ]
    )
    plot_curves.collect(docs, {}, [], "env_steps", tracking)
    assert {label for _, label, _ in tracking} == {
        "MJLab + RSL-RL, seed 0",
        "UniLab ppo (default), seed 0",
    }
    key, scale, label = plot_curves.training_axis("env_steps")
    assert (key, scale) == ("env_steps", 1e6) and "env steps" in label
    assert plot_curves.training_axis("time_s")[0] == "time_s"
    # a point without a value on the axis (an MJLab line without its step count) is left out
    pts = [{"env_steps": None, "time_s": 1.0}, {"env_steps": 5.0, "time_s": 2.0}]
    assert plot_curves.on_axis(pts, "env_steps") == pts[1:]
    assert plot_curves.on_axis(pts, "time_s") == pts
    by_label = {lab: pts for _, lab, pts in tracking}
    # docs/benchmarks/mjlab-tasks.md: MJLab's G1 checkpoint near 41 M steps, UniLab's near 44 M
    mj = {round(p[key] / scale): p for p in by_label["MJLab + RSL-RL, seed 0"]}
    ul = {round(p[key] / scale): p for p in by_label["UniLab ppo (default), seed 0"]}
    assert mj[41]["lin_vel_error"] == pytest.approx(1.292, abs=1e-3)
    assert ul[44]["lin_vel_error"] == pytest.approx(1.289, abs=1e-3)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    assert plot_curves.plot_tracking(plt, tracking, str(tmp_path / "t.png"), "env_steps")
    assert (tmp_path / "t.png").stat().st_size > 0
