"""`WorkerFailedError`, and how the launcher finds the worker whose failure came first.

Evidence comes from two places that may overlap: the shared run folder (`failures/rank<R>.json`
written by failing workers, `exits/<host>.json` by agents) and the reports every agent sends to
the launcher (the same records and exit reports, which arrive also without a shared folder).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import signal
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._logs import rank_log_path

__all__ = ["WorkerFailedError", "failure_from", "read_records"]


class WorkerFailedError(RuntimeError):
    """A worker of a launch failed; the others were stopped.

    Attributes:
        rank: global rank of the first worker that failed (None if unknown, e.g. an agent died).
        local_rank: its rank on its host (None if unknown).
        host: the host it ran on.
        pid: its process id (None if unknown).
        error: "ExceptionType: message" of the worker's exception, or how it ended without one
            ("killed by signal SIGKILL", "exited with status 3").
        traceback: the worker's formatted traceback ("" if none was recorded).
        signal: name of the signal that killed it ("SIGKILL"), None otherwise.
        exit_status: its exit status when it ended without a traceback, None otherwise.
        log_path: that rank's log file on the launcher's machine.
        run_dir: the launch's folder (logs, failure records).
    """

    def __init__(
        self,
        message: str,
        *,
        rank: int | None = None,
        local_rank: int | None = None,
        host: str | None = None,
        pid: int | None = None,
        error: str = "",
        traceback: str = "",
        signal: str | None = None,
        exit_status: int | None = None,
        log_path: Path | None = None,
        run_dir: Path | None = None,
    ) -> None:
        super().__init__(message)
        self.rank = rank
        self.local_rank = local_rank
        self.host = host
        self.pid = pid
        self.error = error
        self.traceback = traceback
        self.signal = signal
        self.exit_status = exit_status
        self.log_path = log_path
        self.run_dir = run_dir


def read_records(folder: Path, pattern: str = "rank*.json") -> list[dict[str, Any]]:
    """The JSON records in `folder` (those that cannot be read are skipped)."""
    records = []
    for path in sorted(folder.glob(pattern)):
        with contextlib.suppress(OSError, ValueError):
            records.append(json.loads(path.read_text()))
    return records


def _how_it_ended(exitcode: int) -> tuple[str, str | None, int | None]:
    """("killed by signal SIGKILL", "SIGKILL", None) or ("exited with status 3", None, 3)."""
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"killed by signal {name}", name, None
    return f"exited with status {exitcode}", None, exitcode


def failure_from(
    cause: str,
    carried: Sequence[dict[str, Any]],
    carried_exits: Sequence[dict[str, Any]],
    run_dir: Path,
    hosts: Sequence[str],
    counts: Sequence[int],
) -> WorkerFailedError:
    """The `WorkerFailedError` for the worker whose failure came first.

    `carried` and `carried_exits` are the failure records and exit reports that the agents
    sent; the run folder's files add to them (duplicates count once). A worker that ended on
    its own without a failure record (a signal, `os._exit`, a crash; its agent saw it end before
    stopping anything) comes first: its peers' records are the collective errors that its death
    caused. Otherwise the earliest failure record wins. Without either, the error names `cause`.
    """
    records = [*read_records(run_dir / "failures"), *carried]
    # the same record may come both from the shared folder and from its agent
    records = list({(r["rank"], r["time_ns"]): r for r in records}.values())
    world = sum(counts)
    starts = dict(zip(hosts, itertools.accumulate([0, *counts]), strict=False))
    recorded = {int(r["rank"]) for r in records}
    exits = [r for record in read_records(run_dir / "exits", "*.json") for r in record["reports"]]
    exits = list({(r["host"], r["local_rank"]): r for r in [*exits, *carried_exits]}.values())
    silent = [
        {**r, "rank": starts[r["host"]] + int(r["local_rank"])}
        for r in exits
        if r["host"] in starts
    ]
    silent = [r for r in silent if r["rank"] not in recorded]
    if silent:
        first = min(silent, key=lambda r: r["seen_ns"])
        host = machine_name(first["host"])
        rank = int(first["rank"])
        how, sig, status = _how_it_ended(int(first["exitcode"]))
        others = sorted(recorded | {int(r["rank"]) for r in silent if r is not first})
        log_path = rank_log_path(run_dir, rank)
        return WorkerFailedError(
            f"rank {rank} of {world} (host {host}, local rank {first['local_rank']}, "
            f"pid {first['pid']}) failed first: {how} (no traceback)\n"
            + _stopped_line(others, log_path),
            rank=rank,
            local_rank=int(first["local_rank"]),
            host=host,
            pid=int(first["pid"]),
            error=how,
            signal=sig,
            exit_status=status,
            log_path=log_path,
            run_dir=run_dir,
        )
    if not records:
        return WorkerFailedError(
            f"the launch failed ({cause}); logs in {run_dir}", error=cause, run_dir=run_dir
        )
    first = min(records, key=lambda r: r["time_ns"])
    rank = int(first["rank"])
    host = machine_name(next(h for h in reversed(hosts) if starts[h] <= rank))
    log_path = rank_log_path(run_dir, rank)
    others = sorted(int(r["rank"]) for r in records if r is not first)
    message = (
        f"rank {rank} of {world} (host {host}, local rank {first['local_rank']}, "
        f"pid {first['pid']}) failed first: {first['error']}\n"
        f"{first['traceback'].rstrip()}\n" + _stopped_line(others, log_path)
    )
    return WorkerFailedError(
        message,
        rank=rank,
        local_rank=int(first["local_rank"]),
        host=host,
        pid=int(first["pid"]),
        error=first["error"],
        traceback=first["traceback"],
        log_path=log_path,
        run_dir=run_dir,
    )


def _stopped_line(others: Sequence[int], log_path: Path) -> str:
    after = f"; ranks {list(others)} failed after it" if others else ""
    return f"(all workers were stopped{after}; logs: {log_path})"


def machine_name(host: str) -> str:
    """How a failure names `host`: this machine's own name for a loopback name (a one-host run
    launches on "localhost"), as the run folder's lock and `hostname` name it."""
    if host in ("localhost", "127.0.0.1", "::1"):
        return socket.gethostname()
    return host
