"""bench_time_to_threshold.py turns a metrics.jsonl line into a curve point."""

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "bench"))
import bench_time_to_threshold as ttt  # noqa: E402


def test_point_keeps_return_terms_and_learner_metrics():
    line = {
        "iteration": 7,
        "env_steps/global": 98304.0,
        "episode/return": 12.5,
        "episode/length": 300.0,
        "episode/count": 40.0,
        "perf/iteration_s": 0.2,
        "perf/steps_per_s": 491520.0,
        "episode_term/track_lin_vel": 9.0,
        "learner/action_std": 0.8,
        "learner/value": math.nan,
        "kl": 0.01,
        "lr": 0.001,
        "dist/bytes": 0.0,
    }
    p = ttt._point(line, wall_s=3.0)
    assert (p["iteration"], p["env_steps"], p["mean_return"]) == (7, 98304.0, 12.5)
    assert p["curriculum_level"] is None  # no curriculum in this line
    assert p["terms"] == {"track_lin_vel": 9.0}
    assert p["learner"] == {"action_std": 0.8, "value": None, "kl": 0.01, "lr": 0.001}
    points = [p, ttt._point({**line, "iteration": 8}, wall_s=3.5)]
    ttt.finish_curve(points)
    assert math.isclose(points[0]["time_s"], 0.2) and math.isclose(points[1]["time_s"], 0.7)


def test_the_runners_evaluations_are_judged_over_evaluations_only():
    def point(i, train, ev):
        return {"iteration": i, "mean_return": train, "eval_return": ev, "env_steps": i * 10.0}

    points = [point(1, 30.0, None), point(2, 1.0, 25.0), point(3, 30.0, None), point(4, 1.0, 26.0)]
    assert ttt.first_reach(ttt.judged(points, False), 24.0, 2) is None  # 30, 1, 30, 1
    reach = ttt.first_reach(ttt.judged(points, True), 24.0, 2)  # evaluations: 25 then 26
    assert reach["iteration"] == 2 and reach["mean_return"] == 25.0
    assert ttt.reach_fields({**reach, "wall_s": 1.0, "time_s": 0.5, "train_s": 0.4}) == {
        "iteration": 2,
        "env_steps": 20.0,
        "wall_s": 1.0,
        "time_s": 0.5,
        "train_s": 0.4,
    }
