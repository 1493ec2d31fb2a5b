"""Real signals: a worker killed or exiting without a traceback, the launcher itself stopped.

Every test runs real CPU (gloo) workers and sends real signals with `os.kill`; each checks that
no process of the launch outlives it (pid records, /proc).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import launch_targets
import pytest

from unilab_launch import WorkerFailedError, launch
from unilab_launch._proc import process_start_ticks
from unilab_launch.testing import process_tree, terminal_signals

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

TESTS = Path(__file__).resolve().parent


def _pid_records(run_dir: Path, world_size: int, timeout_s: float = 40.0) -> dict[int, dict]:
    """Wait until every rank has written its pid record; {rank: record}."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        records = {}
        for path in (run_dir / "pids").glob("rank*.json"):
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            records[record["rank"]] = record
        if len(records) == world_size:
            return records
        time.sleep(0.05)
    raise AssertionError(f"pid records of {world_size} ranks not written in {timeout_s} s")


def _descendants(root: int) -> dict[int, int | None]:
    """{pid: start ticks} of every process below `root` (from /proc)."""
    return {pid: process_start_ticks(pid) for pid in process_tree(root) - {root}}


def _still_running(procs: dict[int, int | None]) -> list[int]:
    return [pid for pid, start in procs.items() if start and process_start_ticks(pid) == start]


def _all_end_within(procs: dict[int, int | None], seconds: float) -> float:
    start = time.monotonic()
    while _still_running(procs):
        if time.monotonic() - start > seconds:
            raise AssertionError(f"still running after {seconds} s: {_still_running(procs)}")
        time.sleep(0.05)
    return time.monotonic() - start


def _kill_rank_when_running(run_dir: Path, rank: int, sig: int, out: dict) -> threading.Thread:
    def kill() -> None:
        records = _pid_records(run_dir, 2)
        time.sleep(1.0)  # inside the all-reduce loop
        out["pid"] = records[rank]["pid"]
        os.kill(records[rank]["pid"], sig)

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_launch_names_the_rank_killed_by_a_signal(tmp_path: Path, sig: signal.Signals) -> None:
    log_dir = (tmp_path / "logs").resolve()
    killed: dict = {}
    thread = _kill_rank_when_running(log_dir, 1, sig, killed)
    with pytest.raises(WorkerFailedError) as info:
        launch(launch_targets.allreduce_for, (60,), cpu_workers=2, log_dir=log_dir, timeout=300)
    thread.join()
    err = info.value
    pid = killed["pid"]
    assert (err.rank, err.local_rank, err.host, err.pid) == (1, 1, socket.gethostname(), pid)
    assert (err.signal, err.exit_status, err.traceback) == (sig.name, None, "")
    assert err.error == f"killed by signal {sig.name}"
    # rank 0 is listed when it noticed the lost peer (a collective error) before its agent
    # stopped it; on a loaded machine it may be stopped first, so both texts are right
    after = "; ranks [0] failed after it" if (log_dir / "failures" / "rank0.json").exists() else ""
    assert str(err) == (
        f"rank 1 of 2 (host {socket.gethostname()}, local rank 1, pid {pid}) failed first: "
        f"killed by signal {sig.name} (no traceback)\n"
        f"(all workers were stopped{after}; logs: {log_dir / 'rank1.log'})"
    )
    assert not (log_dir / "failures" / "rank1.json").exists()
    procs = {r["pid"]: r["start"] for r in _pid_records(log_dir, 2).values()}
    assert not _still_running(procs)


def test_launch_names_the_rank_that_exited_without_a_traceback(tmp_path: Path) -> None:
    log_dir = (tmp_path / "logs").resolve()
    with pytest.raises(WorkerFailedError) as info:
        launch(launch_targets.exit_while_others_wait, (1, 3), cpu_workers=2, log_dir=log_dir)
    err = info.value
    pid = _pid_records(log_dir, 2)[1]["pid"]
    assert (err.rank, err.pid, err.signal, err.exit_status) == (1, pid, None, 3)
    assert str(err).startswith(
        f"rank 1 of 2 (host {socket.gethostname()}, local rank 1, pid {pid}) failed first: "
        "exited with status 3 (no traceback)\n(all workers were stopped"
    )
    procs = {r["pid"]: r["start"] for r in _pid_records(log_dir, 2).values()}
    assert not _still_running(procs)


def _cli(log_dir: Path) -> subprocess.Popen:
    cmd = [
        sys.executable, "-m", "unilab_launch.cli", "--cpu-workers", "2", "--log-dir",
        str(log_dir), "--num-threads", "1", "launch_targets:allreduce_for", "60",
    ]  # fmt: skip
    return subprocess.Popen(
        cmd,
        cwd=TESTS,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a shell gives a command
        preexec_fn=terminal_signals,  # Ctrl-C's default, however pytest was started
    )


@pytest.mark.parametrize(
    ("sig", "to_group", "status"),
    [(signal.SIGTERM, False, 143), (signal.SIGINT, True, 130), (signal.SIGKILL, False, -9)],
    ids=["SIGTERM", "Ctrl-C", "SIGKILL"],
)
def test_stopping_the_launcher_stops_every_process(
    tmp_path: Path, sig: signal.Signals, to_group: bool, status: int
) -> None:
    log_dir = (tmp_path / "logs").resolve()
    proc = _cli(log_dir)
    try:
        _pid_records(log_dir, 2)
        time.sleep(1.0)
        procs = _descendants(proc.pid)  # the agent and its two workers
        assert len(procs) >= 3
        sent = time.monotonic()
        if to_group:  # a Ctrl-C in the terminal: SIGINT to every process of the group
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
        _, stderr = proc.communicate(timeout=30)
        assert proc.returncode == status
        ended_s = _all_end_within(procs, 10.0)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert time.monotonic() - sent < 30
    print(f"{sig.name}: every process ended {ended_s:.2f} s after the launcher")
    if sig != signal.SIGKILL:
        assert stderr.splitlines() == [
            f"unilab-launch: interrupted by {sig.name}; all workers were stopped (logs: {log_dir})"
        ]


def test_launch_successful_run_logs_no_errors(tmp_path: Path) -> None:
    log_dir = (tmp_path / "logs").resolve()
    assert launch(launch_targets.note_on_stderr, cpu_workers=2, log_dir=log_dir) == [2, 2]
    for rank in (0, 1):
        text = (log_dir / f"rank{rank}.log").read_text()
        assert f" WARNING rank {rank} notes on stderr\n" in text
        assert f" INFO rank {rank} prints\n" in text
    for path in log_dir.glob("*.log"):  # workers and agent, shutdown included
        assert " ERROR " not in path.read_text(), path.name


def test_terminal_signals_undo_an_inherited_ignored_ctrl_c():
    # pytest started as a background job of a script: SIGINT ignored, and inherited so
    probe = "import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        inherited = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
        restored = subprocess.run(
            [sys.executable, "-c", probe],
            capture_output=True,
            text=True,
            preexec_fn=terminal_signals,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    assert inherited.stdout.strip() == "True"
    assert restored.stdout.strip() == "False"  # Python's Ctrl-C handler is installed
