"""How the launcher turns failure records into `WorkerFailedError` (no processes started)."""

from __future__ import annotations

import json
from pathlib import Path

import torchrunx

from unilab_launch._launch import _failure_from
from unilab_launch._worker import FAILURE_MARKER, write_json_atomic


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
    # torchrunx carries rank 0's record again (same rank and time): counted once
    exc = torchrunx.WorkerFailedError(FAILURE_MARKER + json.dumps(_record(0, 0, 200)))
    err = _failure_from(exc, tmp_path, ["a", "b"], [2, 2])
    assert (err.rank, err.local_rank, err.host) == (2, 0, "b")
    assert err.error == "ValueError: r2" and err.traceback.endswith("ValueError: r2\n")
    assert err.log_path == tmp_path / "rank2.log"
    assert str(err).startswith("rank 2 of 4 (host b, local rank 0, pid 1002) failed first")
    assert "; ranks [0] failed after it;" in str(err)


def test_launch_record_from_torchrunx_only(tmp_path: Path) -> None:
    # a remote host without a shared log_dir: the record arrives only through torchrunx
    exc = torchrunx.WorkerFailedError(FAILURE_MARKER + json.dumps(_record(5, 1, 7)))
    err = _failure_from(exc, tmp_path, ["a", "b", "c"], [2, 2, 2])
    assert (err.rank, err.local_rank, err.host) == (5, 1, "c")
    assert "failed after it" not in str(err)


def test_launch_failure_without_record(tmp_path: Path) -> None:
    write_json_atomic(tmp_path / "pids" / "rank3.json", {"rank": 3, "pid": 555, "start": 1})
    exc = torchrunx.WorkerFailedError("Signal 9 (SIGKILL) received by PID 555")
    err = _failure_from(exc, tmp_path, ["a"], [4])
    assert err.rank == 3 and err.traceback == ""
    assert str(err).startswith("rank 3 of 4 failed without a traceback (WorkerFailedError: ")
    err = _failure_from(torchrunx.WorkerFailedError("exit 1"), tmp_path, ["a"], [4])
    assert err.rank is None and str(err).startswith("a worker failed without a traceback")
    err = _failure_from(RuntimeError("agent never connected"), tmp_path, ["a"], [4])
    assert err.rank is None
    assert str(err).startswith("the launch failed (RuntimeError: agent never connected)")


def test_port_taken_before_any_target_started(tmp_path: Path) -> None:
    from unilab_launch._launch import _port_taken_before_start

    taken = "DistNetworkError: The server socket has failed to listen ... EADDRINUSE"
    # torchrunx's own rendezvous failed: no worker record
    assert _port_taken_before_start(RuntimeError(taken), tmp_path)
    assert not _port_taken_before_start(RuntimeError("connection refused"), tmp_path)
    # a worker failed while creating its process group on a taken MASTER_PORT
    rec = _record(0, 0, 100)
    rec["error"] = "DistNetworkError: ... address already in use"
    rec["traceback"] = 'File "x", in run_worker\n    dist.init_process_group(\nDistNetworkError'
    write_json_atomic(tmp_path / "failures" / "rank0.json", rec)
    assert _port_taken_before_start(RuntimeError("worker failed"), tmp_path)
    # the target itself failed (even on a taken port): never launched again
    other = {**rec, "rank": 1, "traceback": 'File "train.py", in main\n    server.bind(\n'}
    write_json_atomic(tmp_path / "failures" / "rank1.json", other)
    assert not _port_taken_before_start(RuntimeError(taken), tmp_path)
