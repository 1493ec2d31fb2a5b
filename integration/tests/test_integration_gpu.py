"""The training runner on CUDA: the default PPO and FastSAC configs capture their updates in CUDA
graphs (the startup line says so), train with finite metrics, and resume (which re-captures).
On two GPUs the replicas stay identical. Skipped without CUDA; run on a CUDA machine with
`python3 -m pytest tests -m "gpu or multigpu"`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from unilab_integration import apply_overrides, load_checkpoint, make_config, train

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
needs_two = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")


def _config(log_dir: Path, name: str, algo: str, gpus: str, iterations: int):
    return apply_overrides(
        make_config("cartpole-balance", algo),
        [
            f"launch.gpus={json.dumps(gpus)}",
            f"runner.iterations={iterations}",
            "runner.logging.progress=false",
            'runner.logging.loggers=["console","jsonl"]',
            f"runner.logging.log_dir={json.dumps(str(log_dir))}",
            f"runner.logging.run_name={name}",
        ],
    )


def _startup(run_dir: Path) -> str:
    """The startup line of rank 0's log (the system, and how the env and learner run)."""
    lines = (run_dir / "logs" / "rank0.log").read_text().splitlines()
    (line,) = [x for x in lines if " system: GPU " in x]
    return line


def _rows(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _finite_learner_metrics(rows: list[dict]) -> None:
    for row in rows:
        for key, value in row.items():
            if key.startswith("learner/"):
                assert math.isfinite(value), (row["iteration"], key, value)


@needs_cuda
@pytest.mark.gpu
@pytest.mark.parametrize("algo", ["ppo", "fastsac"])
def test_default_update_is_captured_and_resumes(tmp_path, algo):
    first = train(_config(tmp_path, f"{algo}_a", algo, "0", 4))
    run_dir = Path(first["run_dir"])
    expected = "update and rollout in CUDA graphs" if algo == "ppo" else "update in CUDA graphs"
    line = _startup(run_dir)
    assert expected in line and "| env step in a CUDA graph |" in line
    assert f"torch {torch.__version__} (CUDA {torch.version.cuda})" in line
    assert "| warp mempool on (release threshold " in line or "warp mempool off" in line
    _finite_learner_metrics(_rows(run_dir))
    resumed = train(_config(tmp_path, f"{algo}_b", algo, "0", 7), resume=str(run_dir))
    rows = _rows(Path(resumed["run_dir"]))
    assert [r["iteration"] for r in rows] == [5, 6, 7]
    _finite_learner_metrics(rows)


@needs_two
@pytest.mark.multigpu
def test_two_gpus_keep_identical_replicas(tmp_path):
    result = train(_config(tmp_path, "ppo_2gpu", "ppo", "0,1", 4))
    run_dir = Path(result["run_dir"])
    assert result["world_size"] == 2
    assert "update and rollout in CUDA graphs" in _startup(run_dir)
    ck = load_checkpoint(run_dir)
    for key in ("actor", "critic"):
        for name, value in ck["learner"][0][key].items():
            assert torch.equal(value, ck["learner"][1][key][name]), (key, name)
