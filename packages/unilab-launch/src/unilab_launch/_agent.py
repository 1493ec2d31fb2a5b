"""The per-host agent: torchrunx 0.4.0's agent, run as `python -m unilab_launch._agent`.

The launcher starts this module where torchrunx would start `python -m torchrunx` (same
arguments); it runs `torchrunx.agent.main` with these additions, all inside this process:

1. Exit reports. Before each poll of torch-elastic (which stops the other workers of a host as
   soon as it sees one end), the agent notes every worker that has ended on its own with a
   non-zero status: host, local rank, pid and exit code (negative: the signal), written to
   `<run_dir>/exits/<host>.json` and appended to the failure message that torchrunx carries to
   the launcher. Only a parent learns how a process ended, and a worker killed by a signal
   writes no failure record: this is how the launcher names a rank that was killed or called
   `os._exit`.
2. The launcher's end. On the launcher's machine the agent checks every 0.2 s that the
   launcher process still exists, and SIGKILLs itself when it does not; its workers follow
   through their parent-death signal. (An agent on another host notices at its next status
   sync with the launcher, within seconds.)
3. Polling. torch-elastic is polled every 0.1 s and the status synced every second (torchrunx:
   every second and every 5 s), so a failure reaches the launcher sooner.
4. Output. The SIGTERM by which the launcher stops every agent at the end of a run (and the
   SIGINT of a Ctrl-C) ends the agent with one log line instead of a traceback; stderr lines
   are logged at WARNING, not ERROR.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._logs import log_lines
from ._proc import process_start_ticks
from ._worker import ENV_LAUNCHER, ENV_RUN_DIR, EXITS_MARKER, write_json_atomic

__all__ = ["main"]

_log = logging.getLogger("unilab_launch.agent")


class _ExitReports:
    """Wraps torch-elastic's process context: notes every worker that ends on its own.

    torch-elastic stops (SIGTERM) the other workers of the host as soon as it sees one end, so
    the agent looks before each of its polls: what it notes ended before anything was stopped.
    The worker that torch-elastic reports as failed is added too (it saw that one first).
    """

    def __init__(self, ctx: Any, host: str, run_dir: Path | None) -> None:
        self.ctx = ctx
        self.host = host
        self.run_dir = run_dir
        self.noted: dict[int, dict[str, Any]] = {}
        self._close = ctx.close
        self._wait = ctx.wait

    def _note(self, local_rank: int, pid: int, exitcode: int) -> None:
        if local_rank not in self.noted:
            self.noted[local_rank] = {
                "host": self.host,
                "local_rank": local_rank,
                "pid": pid,
                "exitcode": exitcode,
                "seen_ns": time.time_ns(),
            }

    def note_ended(self) -> None:
        procs = getattr(getattr(self.ctx, "_pc", None), "processes", None) or []
        for local_rank, proc in enumerate(procs):
            code = proc.exitcode  # the same Popen torch-elastic polls, in the same thread
            if code is not None:
                self._note(local_rank, proc.pid, code)

    def reports(self) -> list[dict[str, Any]]:
        """Workers that ended on their own with a non-zero status (exitcode < 0: a signal)."""
        reports = [r for r in self.noted.values() if r["exitcode"] != 0]
        if self.run_dir is not None:
            with contextlib.suppress(Exception):
                path = self.run_dir / "exits" / f"{self.host}.json"
                write_json_atomic(path, {"reports": reports})
        return reports

    def close(self, death_sig: signal.Signals | None = None, timeout: int = 30) -> None:
        self.reports()
        self._close(death_sig, timeout)

    def wait(self, timeout: float = -1, period: float = 1) -> Any:
        deadline = time.monotonic() + (1.0 if timeout < 0 else min(timeout, 1.0))
        while True:
            self.note_ended()
            result = self._wait(0)
            if result is not None:
                for failure in result.failures.values():
                    self._note(failure.local_rank, failure.pid, failure.exitcode)
                if result.failures:
                    text = EXITS_MARKER + json.dumps(self.reports())
                    for failure in result.failures.values():
                        failure.message = f"{failure.message}\n{text}"
                return result
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.1)


def _patch_torchrunx_agent(host: str, run_dir: Path | None) -> None:
    import torch.distributed.elastic.multiprocessing as dist_mp
    import torchrunx.agent as agent

    def start_processes(**kwargs: Any) -> Any:
        ctx = dist_mp.start_processes(**kwargs)
        watch = _ExitReports(ctx, host, run_dir)
        # instance attributes: torch-elastic's own stop (inside its poll) comes here too
        ctx.close, ctx.wait = watch.close, watch.wait
        return ctx

    agent.dist_mp = types.SimpleNamespace(
        start_processes=start_processes, DefaultLogsSpecs=dist_mp.DefaultLogsSpecs
    )

    def redirect_stdio_to_logger(logger: logging.Logger) -> None:
        logging.captureWarnings(capture=True)
        log_lines(1, logging.INFO)
        log_lines(2, logging.WARNING)

    agent.redirect_stdio_to_logger = redirect_stdio_to_logger


def _watch_launcher(spec: str) -> None:
    """SIGKILL this agent once the launcher process of `spec` ('host pid start') has ended."""
    with contextlib.suppress(ValueError):
        host, pid_text, start_text = spec.split()
        pid, start = int(pid_text), int(start_text)
        if host != socket.gethostname() or process_start_ticks(pid) != start:
            return

        def watch() -> None:
            while process_start_ticks(pid) == start:
                time.sleep(0.2)
            os.kill(os.getpid(), signal.SIGKILL)

        threading.Thread(target=watch, name="unilab-launch-launcher-watch", daemon=True).start()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m unilab_launch._agent")
    p.add_argument("--launcher-hostname", type=str)
    p.add_argument("--launcher-port", type=int)
    p.add_argument("--logger-port", type=int)
    p.add_argument("--world-size", type=int)
    p.add_argument("--rank", type=int)
    p.add_argument("--hostname", type=str)
    p.add_argument("--agent-timeout", type=int, default=30)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run torchrunx's agent with the additions of the module docstring; the exit status."""
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torchrunx.agent import main as agent_main
    from torchrunx.utils.errors import AgentFailedError

    args = _parser().parse_args(argv)
    run_dir = os.environ.get(ENV_RUN_DIR)
    _patch_torchrunx_agent(args.hostname, Path(run_dir) if run_dir else None)
    _watch_launcher(os.environ.get(ENV_LAUNCHER, ""))
    try:
        agent_main(
            launcher_hostname=args.launcher_hostname,
            launcher_port=args.launcher_port,
            world_size=args.world_size,
            rank=args.rank,
            logger_hostname=args.launcher_hostname,
            logger_port=args.logger_port,
            hostname=args.hostname,
            agent_timeout=args.agent_timeout,
        )
    except SignalException as exc:  # the launcher stops every agent when the run ends
        _log.info("agent stopped by %s", signal.Signals(exc.sigval).name)
        return 128 + int(exc.sigval)
    except AgentFailedError:
        _log.warning("agent lost contact with the launcher; its workers were stopped")
        return 1
    return 0


if __name__ == "__main__":
    code = main()
    # Skip the interpreter's exit hooks: torch's (e.g. dynamo's compile-time report) would log
    # through handlers whose launcher end is closing and print a traceback into the log of a
    # run that succeeded. The agent has nothing left to clean up; flush what it wrote.
    logging.shutdown()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)
