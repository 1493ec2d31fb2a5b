"""Where worker and agent output goes: one file per global rank, rank 0 also to the console.

Every agent and worker sends its log records (and every line it prints) to the launcher's
control server as JSON (`log_to_launcher`): plain data, so a record can never run code where
it arrives. The launcher turns them back into records (`record_from`) and hands them to the
handlers of `LogHandlers`. Records carry `hostname` (as given in the host list) and
`local_rank` (None for an agent).

Levels: a line written to stdout is INFO, a line written to stderr WARNING (torchrunx logs
stderr at ERROR, which made warnings of a successful run look like failures); records a process
logs keep their own level (a failing worker logs its traceback at ERROR).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._net import Channel

__all__ = ["LogHandlers", "log_lines", "log_to_launcher", "rank_log_path", "record_from"]

_FILE_FORMAT = "%(asctime)s %(levelname)s %(message)s"


def rank_log_path(log_dir: Path, rank: int) -> Path:
    """The log file of global rank `rank`."""
    return log_dir / f"rank{rank}.log"


def log_lines(fd: int, level: int) -> None:
    """From now on, log every line written to file descriptor `fd` (1 or 2) at `level`.

    Replaces what `fd` points to with a pipe read by a daemon thread that logs each line on the
    root logger (which `log_to_launcher` sends to the launcher).
    """
    (sys.stdout if fd == 1 else sys.stderr).flush()
    read_fd, write_fd = os.pipe()
    root = logging.getLogger()

    def pump() -> None:
        with os.fdopen(read_fd, errors="replace") as lines:
            for line in lines:
                root.log(level, line.rstrip())

    threading.Thread(target=pump, name=f"unilab-launch-fd{fd}", daemon=True).start()
    os.dup2(write_fd, fd)
    os.close(write_fd)


class _ToLauncher(logging.Handler):
    """Sends each record as a JSON frame: its level, time, logger name and formatted text."""

    def __init__(self, channel: Channel, hostname: str, local_rank: int | None) -> None:
        super().__init__()
        self.channel = channel
        self.origin = {"hostname": hostname, "local_rank": local_rank}

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info:
            text = f"{text}\n{logging.Formatter().formatException(record.exc_info)}"
        data = {
            "name": record.name,
            "levelno": record.levelno,
            "levelname": record.levelname,
            "created": record.created,
            "msg": text,
            **self.origin,
        }
        with contextlib.suppress(OSError, ValueError):  # the launcher is gone: nothing to tell
            self.channel.send_json(data)

    def close(self) -> None:
        self.channel.close()
        super().close()


def log_to_launcher(
    address: tuple[str, int], key: bytes, hostname: str, local_rank: int | None
) -> None:
    """From now on, send every record of this process to the launcher at `address` (a
    connection authenticated with `key`); `local_rank` None marks an agent."""
    channel = Channel.connect(address, key, timeout=60.0)
    channel.send_json({"role": "log"})
    logging.root.setLevel(logging.NOTSET)
    logging.root.addHandler(_ToLauncher(channel, hostname, local_rank))
    logging.captureWarnings(capture=True)


def record_from(data: dict[str, Any]) -> logging.LogRecord:
    """The `LogRecord` of one JSON record from `log_to_launcher`; a non-root logger's name
    prefixes the message ("unilab_launch.worker:rank 1 failed: ...")."""
    fields = {k: data.get(k) for k in ("levelno", "levelname", "created", "hostname")}
    fields["local_rank"] = data.get("local_rank")
    name = str(data.get("name", "root"))
    text = str(data.get("msg", ""))
    fields["msg"] = text if name == "root" else f"{name}:{text}"
    fields["name"] = f"unilab_launch.{fields['hostname']}"
    record = logging.makeLogRecord(fields)
    record.msecs = (record.created - int(record.created)) * 1000
    return record


class _Select(logging.Filter):
    def __init__(self, hostname: str, local_rank: int | None) -> None:
        super().__init__()
        self.hostname = hostname
        self.local_rank = local_rank

    def filter(self, record: logging.LogRecord) -> bool:
        return (
            getattr(record, "hostname", None) == self.hostname
            and getattr(record, "local_rank", None) == self.local_rank
        )


class LogHandlers:
    """Handler factory: `rank<R>.log` per worker, `agent-<host>.log` per host, rank 0 on stdout.

    Args:
        log_dir: folder of the files (created).
        hostnames: hosts in launch order.
        workers_per_host: workers on each host; global ranks run host by host.
        console: also write rank 0's records to the launcher's stdout, prefixed "[rank 0] ".
    """

    def __init__(
        self,
        log_dir: Path,
        hostnames: Sequence[str],
        workers_per_host: Sequence[int],
        *,
        console: bool = True,
    ) -> None:
        self.log_dir = Path(log_dir)
        self.hostnames = list(hostnames)
        self.workers_per_host = list(workers_per_host)
        self.console = console

    def __call__(self) -> list[logging.Handler]:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        formatter = logging.Formatter(_FILE_FORMAT)
        handlers: list[logging.Handler] = []
        rank = 0
        for host, count in zip(self.hostnames, self.workers_per_host, strict=True):
            targets = [(self.log_dir / f"agent-{host}.log", None)]
            for local_rank in range(count):
                targets.append((rank_log_path(self.log_dir, rank), local_rank))
                rank += 1
            for path, local_rank in targets:
                handler = logging.FileHandler(path, mode="w")
                handler.addFilter(_Select(host, local_rank))
                handler.setFormatter(formatter)
                handlers.append(handler)
        if self.console:
            stream = logging.StreamHandler(sys.stdout)
            stream.addFilter(_Select(self.hostnames[0], 0))
            stream.setFormatter(logging.Formatter("[rank 0] %(message)s"))
            handlers.append(stream)
        return handlers
