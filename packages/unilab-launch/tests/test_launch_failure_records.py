"""How the launcher turns failure records into `WorkerFailedError` (no processes started)."""

from __future__ import annotations

from pathlib import Path

from unilab_launch._failures import failure_from
from unilab_launch._worker import write_json_atomic


def _record(rank: int, local_rank: int, time_ns: int) -> dict:
    return {
        "rank": rank,
        "local_rank": local_rank,
        "host": "n",
        "pid": 1000 + rank,
        "time_ns": time_ns,
        "error": f"ValueError: r{rank}",
        "traceback": f"Traceback ...\nValueError: r{rank}\n",
    }


def test_launch_earliest_record_wins_and_duplicates_merge(tmp_path: Path) -> None:
    write_json_atomic(tmp_path / "failures" / "rank0.json", _record(0, 0, 200))
    write_json_atomic(tmp_path / "failures" / "rank2.json", _record(2, 0, 100))
    # the agent carries rank 0's record again (same rank and time): counted once
    err = failure_from("failed", [_record(0, 0, 200)], [], tmp_path, ["a", "b"], [2, 2])
    assert (err.rank, err.local_rank, err.host) == (2, 0, "b")
    assert err.error == "ValueError: r2" and err.traceback.endswith("ValueError: r2\n")
    assert err.log_path == tmp_path / "rank2.log"
    assert str(err).startswith("rank 2 of 4 (host b, local rank 0, pid 1002) failed first")
    assert "; ranks [0] failed after it;" in str(err)


def test_launch_record_from_its_agent_only(tmp_path: Path) -> None:
    # a remote host without a shared log_dir: the record arrives only through its agent
    err = failure_from("failed", [_record(5, 1, 7)], [], tmp_path, ["a", "b", "c"], [2, 2, 2])
    assert (err.rank, err.local_rank, err.host) == (5, 1, "c")
    assert "failed after it" not in str(err)


def test_launch_silent_exit_comes_before_the_records_it_caused(tmp_path: Path) -> None:
    exits = [{"host": "b", "local_rank": 1, "pid": 77, "exitcode": -9, "seen_ns": 5}]
    err = failure_from("failed", [_record(0, 0, 9)], exits, tmp_path, ["a", "b"], [2, 2])
    assert (err.rank, err.pid, err.signal, err.exit_status) == (3, 77, "SIGKILL", None)
    assert "; ranks [0] failed after it;" in str(err)


def test_launch_failure_without_record(tmp_path: Path) -> None:
    err = failure_from("no agent connected from ['a'] in 60 s", [], [], tmp_path, ["a"], [4])
    assert err.rank is None and err.traceback == ""
    assert str(err).startswith("the launch failed (no agent connected from ['a'] in 60 s)")
