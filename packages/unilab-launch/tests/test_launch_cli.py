"""The `unilab-launch` command end to end, in a subprocess (real exit status and output)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from unilab_launch.testing import run_console_script

TESTS = Path(__file__).resolve().parent


def _clean_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # the target must be found through the working directory
    return env


def test_launch_cli_console_script_help() -> None:
    script = Path(sys.executable).with_name("unilab-launch")
    assert script.exists()
    out = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    assert "usage: unilab-launch" in out.stdout and "--cpu-workers" in out.stdout


HEAVY = ("torch", "torchrunx", "cloudpickle", "fabric", "numpy")


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["--help"], 0, ""),
        (["--gpus", "0,x", "m:f"], 2, "unilab-launch: error: malformed GPU list '0,x'"),
        (["--cpu-workers", "2", "--hosts", "a,a", "m:f"], 2, "appear more than once"),
        (["--cpu-workers", "two", "m:f"], 2, "invalid int value: 'two'"),
    ],
)
def test_launch_cli_help_and_argument_errors_import_no_torch(argv, code, message) -> None:
    run = run_console_script("unilab-launch", argv, watch=HEAVY)
    assert run.code == code and message in run.stderr
    assert run.imported == []


@pytest.mark.slow
def test_launch_cli_runs_and_reports_the_failing_rank(tmp_path: Path) -> None:
    log_dir = tmp_path / "logs"
    cmd = [
        sys.executable, "-m", "unilab_launch.cli",
        "--cpu-workers", "2", "--seed", "3", "--log-dir", str(log_dir), "--timeout", "300",
        "--num-threads", "1", "launch_targets:cli_body", "1.5", "1",
    ]  # fmt: skip
    start = time.monotonic()
    out = subprocess.run(
        cmd, cwd=TESTS, env=_clean_env(), capture_output=True, text=True, timeout=400
    )
    elapsed = time.monotonic() - start
    assert out.returncode == 1, out.stderr
    # both ranks ran the target with the string arguments: 1.5 * 1 + 1.5 * 2
    assert "[rank 0] rank 0 of 2 total 4.50" in out.stdout
    assert "rank 1 of 2 total 4.50" in (log_dir / "rank1.log").read_text()
    assert "rank 1 of 2 total" not in out.stdout  # only rank 0 is echoed
    assert f"unilab-launch: rank 1 of 2 (host {socket.gethostname()}, local rank 1" in out.stderr
    assert "failed first: RuntimeError: cli failure on rank 1" in out.stderr
    assert 'raise RuntimeError(f"cli failure on rank {rank}")' in out.stderr
    assert elapsed < 150  # a peer left in its collective would wait out the 300 s timeout
