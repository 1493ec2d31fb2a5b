"""bench_time_to_threshold.py judges a run's curve points against its threshold (the points
themselves: test_bench_ppo_e2e.py, benchlib)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "bench"))
import bench_time_to_threshold as ttt  # noqa: E402


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
