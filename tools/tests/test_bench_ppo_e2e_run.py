"""bench_ppo_e2e.py --quick trains through `train()` on 1 and 2 CPU ranks and records its numbers.

It needs the whole stack (torch, every UniLab package): `nox -s integration` runs it, the `tools`
session (stdlib and numpy only) leaves it out.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "bench"))
import benchlib  # noqa: E402


def test_quick_run_trains_one_and_two_ranks_and_profiles_them(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path)}
    cmd = [sys.executable, str(ROOT / "tools" / "bench" / "bench_ppo_e2e.py"), "--quick"]
    cmd += ["--task", "cartpole-balance", "--name", "quick"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads((tmp_path / "ppo_e2e_quick.json").read_text())
    assert doc["kind"] == "ppo_e2e" and doc["args"]["name"] == "quick"
    assert [r["gpus"] for r in doc["results"]] == [1, 2]
    for r in doc["results"]:
        assert r["env_steps_per_iteration"] == 16 * 4 * r["gpus"]  # --quick: 16 envs x 4 steps
        assert r["timed_iterations"] == 2 and r["env_steps_per_s"] > 0
        assert "cpu" in r["startup"]
        curve = r["ranks"][0]["curve"]  # what plot_curves.py reads
        assert [p["iteration"] for p in curve] == [1, 2, 3]
        assert all(p["time_s"] > 0 for p in curve)
        prof = r["profile_median_s"]
        phases = {"inference", "env", "storage", "returns", "update"}
        assert phases | {"other", "total"} <= set(prof)
        assert ("sync" in prof) == (r["gpus"] > 1)  # the collectives, timed on 2 ranks
        assert sum(v for k, v in prof.items() if k != "total") == pytest.approx(
            prof["total"], rel=0.05
        )
        saved = tmp_path / "ppo_e2e_quick" / f"W{r['gpus']}_profile" / "metrics.jsonl"
        assert len(benchlib.read_metrics(saved)) == 2
    assert doc["weak_scaling_efficiency"]["1"] == pytest.approx(1.0)
    assert "profiled iteration" in proc.stdout and "\nenv " in proc.stdout  # the env's row
