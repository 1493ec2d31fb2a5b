"""plot_curves.py: how it reads the benchmark scripts' JSON documents, and its arithmetic.

Synthetic documents of each script's format; the plotting itself needs matplotlib, which the
tools session does not install (those parts run only where it is importable).
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "bench"))
import plot_curves  # noqa: E402


def test_efficiency_of_a_synthetic_four_gpu_run():
    scaling = [("a", 1, 100.0), ("a", 2, 190.0), ("a", 4, 360.0), ("b", 2, 5.0)]
    learner = [("c", 1, 10.0), ("c", 4, 9.0)]
    eff = plot_curves.efficiencies(scaling, learner)
    assert eff == {"a": [(1, 1.0), (2, 0.95), (4, 0.9)], "c": [(1, 1.0), (4, 0.9)]}


def test_a_threshold_far_beyond_the_curves_is_not_drawn():
    returns = [2.0, 40.0, 88.0]
    assert plot_curves.within_reach(90.0, returns)  # just above: drawn, "not reached"
    assert plot_curves.within_reach(150.0, returns)
    assert not plot_curves.within_reach(1e30, returns)  # trained to the cap: no threshold
    assert not plot_curves.within_reach(-500.0, returns)
    assert plot_curves.within_reach(-1.0, [-5.0, -2.0])  # all-negative returns
    assert not plot_curves.within_reach(0.0, [])


def ttt_doc(name: str, task: str = "quadruped-velocity", reached: bool = True) -> dict:
    """A bench_time_to_threshold.py document: one training curve, reached at its 2nd point."""
    points = [
        {"time_s": 10.0 * i, "env_steps": 1e6 * i, "mean_return": 5.0 * i} for i in range(1, 4)
    ]
    result = {"reached": reached, "time_s": 20.0, "env_steps": 2e6}
    return {
        "kind": "time_to_threshold",
        "args": {"algo": "ppo", "task": task, "name": name},
        "threshold": 10.0,
        "result": result,
        "curves": {"1": {"points": points}},
    }


def ttw_doc(label: str, seed: int) -> dict:
    pts = [{"iteration": 100, "time_s": 50.0, "env_steps": None, "lin_vel_error": 0.4}]
    return {
        "kind": "time_to_walk",
        "task": "go1-velocity-flat",
        "label": label,
        "seed": seed,
        "points": pts,
    }


def test_time_to_threshold_runs_give_curves_and_the_reached_mark_on_either_axis():
    for x, at in (("time_s", 20.0), ("env_steps", 2e6)):
        marks: dict = {}
        curves, scaling, _ = plot_curves.collect([("a.json", ttt_doc("q"))], marks, [], x=x)
        panel = "UniLab ppo on quadruped-velocity"
        assert [y for _, y in curves[panel]["q"]] == [5.0, 10.0, 15.0] and scaling == []
        assert marks[panel] == [(10.0, at, "q")]
    marks = {}
    plot_curves.collect([("a.json", ttt_doc("q", reached=False))], marks, [])
    assert marks["UniLab ppo on quadruped-velocity"] == [(10.0, None, "q")]


def test_the_env_steps_axis_skips_sources_without_env_steps_per_point():
    mjlab = {
        "task": "Mjlab-Velocity-Flat-Unitree-Go1",
        "runs": [
            {
                "gpus": 1,
                "num_envs": 4096,
                "median_steps_per_s": 1e5,
                "iterations": [{"wall_s": 5.0, "iteration_s": 1.0, "mean_reward": 1.0}],
            }
        ],
    }
    docs = [("mjlab_go1.json", mjlab), ("ttt.json", ttt_doc("q"))]
    curves, scaling, _ = plot_curves.collect(docs, {}, [], x="env_steps")
    assert set(curves) == {"UniLab ppo on quadruped-velocity"} and scaling == []
    curves, scaling, _ = plot_curves.collect(docs, {}, [], x="time_s")
    assert "MJLab + RSL-RL" in curves and scaling == [("MJLab + RSL-RL", 1, 1e5)]
    assert curves["MJLab + RSL-RL"]["MJLab, 1 GPU, 4096 envs"] == [(1.0, 1.0)]  # from its start


def test_a_rerun_of_the_same_seed_is_drawn_beside_the_first_under_its_file_name():
    tracking: list = []
    docs = [
        ("ttw_a.json", ttw_doc("UniLab ppo", 1)),
        ("ttw_b.json", ttw_doc("UniLab ppo", 1)),
        ("ttw_c.json", ttw_doc("UniLab ppo", 2)),
    ]
    plot_curves.collect(docs, {}, [], "time_s", tracking)
    assert [label for _, label, _ in tracking] == [
        "UniLab ppo, seed 1",
        "UniLab ppo, seed 1 (ttw_b)",
        "UniLab ppo, seed 2",
    ]


def test_axis_helpers_leave_out_points_without_a_value():
    key, scale, label = plot_curves.training_axis("env_steps")
    assert (key, scale) == ("env_steps", 1e6) and "env steps" in label
    assert plot_curves.training_axis("time_s")[0] == "time_s"
    pts = [{"env_steps": None, "time_s": 1.0}, {"env_steps": 5.0, "time_s": 2.0}]
    assert plot_curves.on_axis(pts, "env_steps") == pts[1:]
    assert plot_curves.on_axis(pts, "time_s") == pts
