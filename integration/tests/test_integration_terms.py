"""A task from terms in the user's own module, trained through `unilab train` on a CPU worker:
each term shows up in metrics.jsonl and in the exported ONNX metadata."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import onnx
import pytest

HERE = Path(__file__).parent


@pytest.fixture
def walker(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    )
    yield
    sys.modules.pop("_unilab_terms_task", None)


def test_a_task_from_user_terms_trains_and_exports(walker, tmp_path):
    from unilab_integration import export_onnx
    from unilab_integration.cli import main

    argv = ["train", "user-walker", "--cpu-workers", "1", "--iterations", "2"]
    argv += [
        "--set",
        'runner.imports=["_unilab_terms_task"]',
        "--set",
        "runner.logging.progress=false",
    ]
    argv += ["--set", 'runner.logging.loggers=["jsonl"]', "--set", "runner.logging.run_name=walker"]
    assert main([*argv, "--log-dir", str(tmp_path)]) == 0
    run = next(p for p in tmp_path.rglob("metrics.jsonl")).parent
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [1, 2]
    for term in ("height", "action_rate_l2", "alive"):
        assert f"episode_term/{term}" in rows[-1], sorted(rows[-1])
    out = export_onnx(run, tmp_path / "walker.onnx")
    meta = {p.key: json.loads(p.value) for p in onnx.load(str(out)).metadata_props}
    names = [t["name"] for t in meta["observation_terms"]]
    assert names == ["base_ang_vel", "projected_gravity", "base_height", "joint_pos", "actions"]
    assert meta["observation_terms"][2]["scale"] == 2.0
    assert meta["obs_dim"] == 3 + 3 + 1 + 12 + 12
