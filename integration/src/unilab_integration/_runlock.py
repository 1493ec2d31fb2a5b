"""The run folder's lock: one trainer per folder, and its workers named.

- `RUN/.lock` (JSON: pid, host, process start ticks, start time, command) is created
  atomically while a trainer runs and removed when `train()` returns or raises. A lock whose
  process is gone (same host) is taken over, saying so in one line on stderr; a live one, or one held on
  another host (which this machine cannot check), is refused (`RunFolderError`).
- `RUN/.lock-workers/` names the run's worker processes on the lock's host (one empty file
  `<host>-<pid>-<start ticks>` each, written when a worker starts): a takeover first waits for
  them to end (`WORKER_WAIT_S`), and refuses, naming them, if they do not. A worker writes no
  checkpoint once the lock names a process of its host that is gone (its launcher was killed).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "LOCK",
    "WORKERS",
    "WORKER_WAIT_S",
    "RunFolderError",
    "RunLock",
    "check_lock",
    "holder_alive",
    "process_start_ticks",
    "register_worker",
]

LOCK = ".lock"
WORKERS = ".lock-workers"
WORKER_WAIT_S = 30.0
"""How long a takeover waits for the previous trainer's workers to end."""


class RunFolderError(ValueError):
    """A run folder that this command may not write (refused before any worker starts)."""


def process_start_ticks(pid: int) -> int | None:
    """Start time of process `pid` in clock ticks since boot (Linux /proc), None if it is gone;
    with the pid it names one process (pids are reused)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])  # the name (field 2) may hold spaces


def _read_lock(path: Path) -> dict[str, Any] | None:
    """The lock's record; None when there is none; {} when it is unreadable."""
    try:
        text = (path / LOCK).read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _holder(info: dict[str, Any]) -> str:
    return (
        f"pid {info.get('pid')} on host {info.get('host')}, since {info.get('started')}: "
        f"{info.get('command', '?')}"
    )


def _is_stale(path: Path, info: dict[str, Any]) -> bool:
    """True when the lock's process is gone (or the lock is unreadable); raises when it is
    alive or on another host."""
    if not info:  # a holder killed between creating and writing it
        return True
    if info.get("host") != socket.gethostname():
        raise RunFolderError(
            f"run folder {path} is locked by a trainer on another host ({_holder(info)}); this "
            f"machine cannot check it: wait for it to end, train into another --run-name, or, "
            f"if it is gone, delete {path / LOCK}"
        )
    pid, ticks = info.get("pid"), info.get("start_ticks")
    if isinstance(pid, int):
        alive = _pid_exists(pid) if ticks is None else process_start_ticks(pid) == ticks
        if alive:
            raise RunFolderError(
                f"run folder {path} is in use by a live trainer ({_holder(info)}); wait for it "
                f"to end, or train into another --run-name"
            )
    return True


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def check_lock(path: Path) -> None:
    """Refuse a folder that a live trainer (or one on another host) holds; a stale lock passes
    (`RunLock` takes it over), and so does this process's own."""
    info = _read_lock(path)
    mine = info and info.get("pid") == os.getpid() and info.get("host") == socket.gethostname()
    if info is not None and not mine:
        _is_stale(path, info)


def holder_alive(path: str | os.PathLike) -> bool:
    """False when `RUN/.lock` names a process of this host that has ended (the trainer that
    launched this worker was killed); True otherwise: a live holder, no lock (a runner used
    without `train()`), or a holder on another host, which this machine cannot check."""
    info = _read_lock(Path(path))
    if not info or info.get("host") != socket.gethostname():
        return True
    pid, ticks = info.get("pid"), info.get("start_ticks")
    if not isinstance(pid, int):
        return True
    return _pid_exists(pid) if ticks is None else process_start_ticks(pid) == ticks


def register_worker(path: str | os.PathLike) -> None:
    """Name this worker process in `RUN/.lock-workers/`, so a takeover of the run's lock waits
    for it to end. Only where the run folder is (a worker on another host has none)."""
    folder = Path(path) / WORKERS
    if not Path(path).is_dir():
        return
    folder.mkdir(exist_ok=True)
    pid = os.getpid()
    (folder / f"{socket.gethostname()}-{pid}-{process_start_ticks(pid)}").touch()


def _live_workers(path: Path) -> list[int]:
    """The pids of `RUN/.lock-workers/` entries of this host whose process still runs."""
    live = []
    host = socket.gethostname()
    with contextlib.suppress(FileNotFoundError):
        for entry in (path / WORKERS).iterdir():
            name, _, rest = entry.name.rpartition("-")
            who, _, pid = name.rpartition("-")
            if who != host or not pid.isdigit():
                continue
            ticks = None if rest == "None" else int(rest) if rest.isdigit() else -1
            alive = (
                _pid_exists(int(pid)) if ticks is None else process_start_ticks(int(pid)) == ticks
            )
            if alive:
                live.append(int(pid))
    return sorted(live)


def _wait_for_workers(path: Path, timeout_s: float) -> None:
    """Wait until no worker named in `RUN/.lock-workers/` runs, then empty it; RunFolderError
    naming the pids after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    live = _live_workers(path)
    if live:
        print(
            f"{path}: waiting for the previous trainer's workers (pids {live}) to end",
            file=sys.stderr,
            flush=True,
        )
    while live and time.monotonic() < deadline:
        time.sleep(0.1)
        live = _live_workers(path)
    if live:
        raise RunFolderError(
            f"run folder {path}: workers of its previous trainer still run (pids {live}) after "
            f"{timeout_s:.0f} s; end them, or train into another --run-name"
        )
    _clear_workers(path)


def _clear_workers(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        for entry in (path / WORKERS).iterdir():
            entry.unlink(missing_ok=True)
        (path / WORKERS).rmdir()


@contextlib.contextmanager
def _folder_flock(path: Path) -> Iterator[None]:
    """Serialize lock takeovers in `path` (an flock on the folder; skipped where the file
    system has none)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the flock


class RunLock:
    """`RUN/.lock` held by this process: `acquire()` makes the folder (when missing) and the lock,
    `release()` removes both what it made: the lock always, the folder if empty and made here."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.made_folder = False
        self.held = False

    def acquire(self) -> RunLock:
        """Make the folder (when missing) and the lock; RunFolderError naming the folder and
        `--log-dir` when it cannot be written."""
        try:
            return self._acquire()
        except PermissionError as e:
            raise RunFolderError(self._unwritable(e)) from None
        except OSError as e:
            if e.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise
            raise RunFolderError(self._unwritable(e)) from None

    def _unwritable(self, e: OSError) -> str:
        return (
            f"cannot write the run folder {self.path} ({e.strerror or e}): train into a "
            "writable --log-dir"
        )

    def _acquire(self) -> RunLock:
        if not self.path.exists():
            self.path.mkdir(parents=True, exist_ok=True)
            self.made_folder = True
        pid = os.getpid()
        record = {
            "pid": pid,
            "host": socket.gethostname(),
            "start_ticks": process_start_ticks(pid),
            "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
            "command": " ".join(sys.argv),
        }
        lock = self.path / LOCK
        with _folder_flock(self.path):
            info = _read_lock(self.path)
            if info is not None and _is_stale(self.path, info):
                _wait_for_workers(self.path, WORKER_WAIT_S)
                print(
                    f"{lock}: its trainer is gone ({_holder(info) if info else 'unreadable'}); "
                    "taking the lock over",
                    file=sys.stderr,
                    flush=True,
                )
                lock.unlink()
            else:
                _wait_for_workers(self.path, WORKER_WAIT_S)  # a lock removed by hand
            try:
                fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:  # another trainer won the race (no flock here)
                raise RunFolderError(
                    f"run folder {self.path} was just locked by another trainer; train into "
                    "another --run-name"
                ) from None
            with os.fdopen(fd, "w") as f:
                f.write(json.dumps(record) + "\n")
                f.flush()
                os.fsync(f.fileno())
        self.held = True
        return self

    def release(self) -> None:
        if self.held:
            info = _read_lock(self.path)
            if info and info.get("pid") == os.getpid():
                _clear_workers(self.path)  # train() returns after its workers ended
                (self.path / LOCK).unlink(missing_ok=True)
            self.held = False
        if self.made_folder and not any(self.path.iterdir()):
            self.path.rmdir()

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
