"""What `unilab train` prints when a worker dies without a traceback (real processes, gloo)."""

from __future__ import annotations

import os
import re
import socket
import time
from pathlib import Path

import pytest

from unilab_integration.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def test_dying_rank_is_named_with_its_pid_and_exit_status(tmp_path, capsys, monkeypatch):
    # _unilab_dying_rank (imported by every worker through runner.imports) makes rank 1 call
    # os._exit(3): no traceback, no failure record; its agent saw the exit status
    here = str(Path(__file__).parent)
    monkeypatch.syspath_prepend(here)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    )
    start = time.monotonic()
    code = main(
        [
            "train", "cartpole-balance", "--cpu-workers", "2", "--num-envs", "8", "--env-scope", "per-rank",
            "--iterations", "2", "--no-progress", "--log-dir", str(tmp_path),
            "--run-name", "dead", "--timeout", "30",
            "--set", 'runner.imports=["_unilab_dying_rank"]',
        ]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    logs = tmp_path / "dead" / "logs"
    match = re.search(
        r"unilab train: training failed: rank 1 of 2 \(host "
        + re.escape(socket.gethostname())
        + r", local rank 1, "
        r"pid (\d+)\) failed first: exited with status 3 \(no traceback\)\n",
        err,
    )
    assert match, err
    pid = int(match.group(1))
    assert f'"pid": {pid},' in (logs / "pids" / "rank1.json").read_text()
    assert f"logs: {logs / 'rank1.log'})" in err
    assert time.monotonic() - start < 90
