"""`unilab train --hosts slurm`: the hosts come from the SLURM allocation (unilab_launch's
`resolve_hosts`, torchrunx's helpers), faked on this machine by `fake_slurm_env`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from unilab_integration.cli import main
from unilab_launch.testing import fake_slurm_env


def test_hosts_slurm_outside_slurm_is_refused_naming_it(monkeypatch, capsys, tmp_path):
    for name in ("SLURM_JOB_ID", "SLURM_JOBID"):
        monkeypatch.delenv(name, raising=False)
    argv = ["train", "cartpole-balance", "--cpu-workers", "2", "--iterations", "1"]
    code = main([*argv, "--hosts", "slurm", "--log-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert (
        "unilab train: error: hosts 'slurm': this process is not inside a SLURM allocation" in err
    )
    assert list(tmp_path.iterdir()) == []  # refused before the run folder


@pytest.mark.slow
def test_train_hosts_slurm_two_cpu_workers_end_to_end(tmp_path):
    env = fake_slurm_env(tmp_path / "slurm", ["localhost"])
    script = Path(sys.executable).with_name("unilab")
    cmd = [
        str(script), "train", "cartpole-balance", "--algo", "ppo", "--hosts", "slurm",
        "--cpu-workers", "2", "--num-envs", "8", "--env-scope", "per-rank", "--iterations", "2",
        "--log-dir", str(tmp_path / "runs"), "--run-name", "slurm", "--no-progress",
        "--set", "runner.num_steps_per_env=8", "--set", 'runner.logging.loggers=["console","jsonl"]',
    ]  # fmt: skip
    out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=500)
    assert out.returncode == 0, out.stderr
    assert "finished: 2 iterations, 256 env steps (128 per rank, 2 rank(s))" in out.stdout
    config = json.loads((tmp_path / "runs" / "slurm" / "config.json").read_text())
    assert config["launch"]["hosts"] == "localhost"  # the node SLURM named, recorded
    assert config["launch"]["cpu_workers"] == 2
    assert (tmp_path / "slurm" / "scontrol.log").read_text() == "show hostnames\n"
    assert len(list((tmp_path / "runs" / "slurm").rglob("rank1.log"))) == 1  # 2 ranks ran
