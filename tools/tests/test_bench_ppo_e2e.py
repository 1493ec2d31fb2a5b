"""benchlib's helpers (bench_ppo_e2e.py's run through `train()`: test_bench_ppo_e2e_run.py)."""

import json
import math
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "bench"))
import benchlib  # noqa: E402

LINE = {
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


def _rows(times: list[float], steps: int = 100, **profile: list[float]) -> list[dict]:
    rows = []
    for i, t in enumerate(times):
        row = {
            "iteration": i + 1,
            "env_steps/global": float(steps * (i + 1)),
            "perf/iteration_s": t,
            "perf/steps_per_s": steps / t,
        }
        row.update({f"profile/{k}_s": v[i] for k, v in profile.items()})
        rows.append(row)
    return rows


def test_curve_point_keeps_return_terms_and_learner_metrics():
    p = benchlib.curve_point(LINE, wall_s=3.0)
    assert (p["iteration"], p["env_steps"], p["mean_return"]) == (7, 98304.0, 12.5)
    assert p["curriculum_level"] is None  # no curriculum in this line
    assert p["terrain_level"] is None
    rough = benchlib.curve_point({**LINE, "curriculum/terrain_levels/mean": 3.25}, wall_s=3.0)
    assert rough["terrain_level"] == 3.25
    assert p["terms"] == {"track_lin_vel": 9.0}
    assert p["learner"] == {"action_std": 0.8, "value": None, "kl": 0.01, "lr": 0.001}
    points = [p, benchlib.curve_point({**LINE, "iteration": 8}, wall_s=3.5)]
    benchlib.finish_curve(points)
    assert math.isclose(points[0]["time_s"], 0.2) and math.isclose(points[1]["time_s"], 0.7)
    assert math.isclose(points[1]["train_s"], 0.4)
    # no wall clock (a finished run's file): time_s is the sum of the iteration times
    points = [benchlib.curve_point(LINE, None), benchlib.curve_point(LINE, None)]
    benchlib.finish_curve(points)
    assert [p["time_s"] for p in points] == pytest.approx([0.2, 0.4])


def test_metrics_tail_reads_only_complete_new_lines(tmp_path):
    path = tmp_path / "metrics.jsonl"
    tail = benchlib.MetricsTail(path)
    assert tail.read() == []  # not written yet
    path.write_text(json.dumps({"iteration": 1}) + "\n" + '{"iteration"')
    assert tail.read() == [{"iteration": 1}]
    with open(path, "a") as f:
        f.write(': 2}\n{"iteration": 3}\n')
    assert tail.read() == [{"iteration": 2}, {"iteration": 3}]
    assert benchlib.read_metrics(path) == [{"iteration": i} for i in (1, 2, 3)]
    with pytest.raises(FileNotFoundError, match=r"runner\.logging\.loggers"):
        benchlib.read_metrics(tmp_path / "none.jsonl")


def test_throughput_and_phase_medians_skip_the_warmup():
    rows = _rows([5.0, 1.0, 2.0, 1.0], inference=[4.0, 0.2, 0.5, 0.3], other=[1.0, 0.8, 1.5, 0.7])
    got = benchlib.throughput(rows, warmup=1)
    assert got["timed_iterations"] == 3
    assert got["env_steps_per_s"] == pytest.approx(100.0)  # median of 100, 50, 100
    assert got["window_env_steps_per_s"] == pytest.approx(300 / 4.0)
    assert got["median_iteration_s"] == pytest.approx(1.0)
    medians = benchlib.phase_medians(rows, warmup=1)
    assert list(medians) == ["inference", "other", "total"]
    assert medians == pytest.approx({"inference": 0.3, "other": 0.8, "total": 1.0})
    with pytest.raises(ValueError, match="none after the 4"):
        benchlib.throughput(rows, warmup=4)
    with pytest.raises(ValueError, match=r"runner\.profile"):
        benchlib.phase_medians(_rows([1.0, 1.0]), warmup=1)
    assert benchlib.median([None, 3.0, float("nan"), 1.0]) == 2.0
    assert benchlib.median([None]) is None


def test_write_json_goes_to_out(tmp_path, monkeypatch):
    monkeypatch.delenv("OUT", raising=False)
    assert benchlib.write_json("x.json", {"a": 1}) is None
    monkeypatch.setenv("OUT", str(tmp_path / "out"))
    path = benchlib.write_json("x.json", {"a": Path("/p")})
    assert path == tmp_path / "out" / "x.json" and json.loads(path.read_text()) == {"a": "/p"}


def test_use_sources_reaches_the_workers_environment(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    value = benchlib.use_sources(benchlib.BENCH_DIR)
    parts = value.split(os.pathsep)
    assert parts[-1] == "/elsewhere" and str(benchlib.BENCH_DIR) in parts
    assert str(ROOT / "integration" / "src") in parts and os.environ["PYTHONPATH"] == value
