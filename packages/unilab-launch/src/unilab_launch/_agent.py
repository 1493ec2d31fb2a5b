"""The per-host agent, `python -m unilab_launch._agent`: starts this host's workers, watches them.

The launcher starts one agent per host (a child process on its own machine, over SSH
elsewhere). The agent:

1. connects to the launcher's control server (`UNILAB_LAUNCH_CONTROL`) and proves it holds the
   launch's key (`UNILAB_LAUNCH_KEY`); its log records go to the launcher as JSON;
2. on the first host, holds the workers' process-group store: a `TCPStore` listening on the
   address by which it reaches the launcher (loopback on one host), so that no worker binds
   a port of its own for it;
3. receives the worker layout and the pickled function, and spawns its workers, each with its
   rank, the store's address and, unless the user set them, `GLOO_SOCKET_IFNAME` and
   `NCCL_SOCKET_IFNAME` naming the interface of that same address;
4. every 0.1 s: notes each worker that ended on its own (pid, exit code; negative: the signal)
   before it stops anything, collects failure records and results from the workers' pipes, and
   tells the launcher "failed" (records, exit reports; also `<run_dir>/exits/<host>.json`) or
   "done" (the pickled results, passed on unread);
5. stops its workers (SIGTERM, then SIGKILL after 5 s) when one failed, when the launcher says
   "stop", when the launcher's connection ends (the launcher is gone), or on SIGTERM. It ignores
   SIGINT (`_signals.py`). On the launcher's machine it also ends with the launcher (Linux
   parent-death signal).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from ._logs import log_lines, log_to_launcher
from ._net import Channel, interface_of
from ._proc import parent_death_signal, process_start_ticks
from ._signals import ignore_terminal_interrupt
from ._worker import (
    ENV_CONTROL,
    ENV_HOST,
    ENV_KEY,
    ENV_LAUNCHER,
    ENV_RUN_DIR,
    RESULT,
    worker_main,
    write_json_atomic,
)

__all__ = ["main"]

_log = logging.getLogger("unilab_launch.agent")

STOP_GRACE_S = 5.0
"""How long a stopped worker has between SIGTERM and SIGKILL."""


class _Workers:
    """This host's worker processes and what they told or showed the agent."""

    def __init__(self, host: str, run_dir: Path | None) -> None:
        self.host = host
        self.run_dir = run_dir
        self.procs: list[Any] = []
        self.pipes: list[Any] = []
        self.results: dict[int, bytes] = {}
        self.failures: list[dict[str, Any]] = []
        self.exits: dict[int, dict[str, Any]] = {}

    def start(self, envs: list[dict[str, str]], payload: bytes) -> None:
        ctx = multiprocessing.get_context("spawn")
        for env in envs:
            read, write = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=worker_main, args=(env, payload, write), daemon=False)
            proc.start()
            write.close()
            self.procs.append(proc)
            self.pipes.append(read)

    def poll(self, *, note_exits: bool = True) -> None:
        """Note the workers that ended on their own (not once the agent stops them), then read
        what the workers sent."""
        for local_rank, proc in enumerate(self.procs):
            if note_exits and proc.exitcode is not None and local_rank not in self.exits:
                self.exits[local_rank] = {
                    "host": self.host,
                    "local_rank": local_rank,
                    "pid": proc.pid,
                    "exitcode": proc.exitcode,
                    "seen_ns": time.time_ns(),
                }
        for local_rank, pipe in enumerate(self.pipes):
            with contextlib.suppress(EOFError, OSError):
                while pipe.poll():
                    message = pipe.recv_bytes()
                    if message.startswith(RESULT):
                        self.results[local_rank] = message[len(RESULT) :]
                    else:
                        self.failures.append(json.loads(message))

    def failed(self) -> bool:
        ended_badly = any(
            e["exitcode"] != 0 or i not in self.results for i, e in self.exits.items()
        )
        return bool(self.failures) or ended_badly

    def done(self) -> bool:
        return len(self.exits) == len(self.procs) and len(self.results) == len(self.procs)

    def exit_reports(self) -> list[dict[str, Any]]:
        """Workers that ended on their own without a result (exitcode < 0: a signal)."""
        reports = [e for i, e in self.exits.items() if e["exitcode"] != 0 or i not in self.results]
        if self.run_dir is not None:
            with contextlib.suppress(Exception):
                write_json_atomic(
                    self.run_dir / "exits" / f"{self.host}.json", {"reports": reports}
                )
        return reports

    def stop(self) -> None:
        alive = [p for p in self.procs if p.exitcode is None]
        for proc in alive:
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        while any(p.exitcode is None for p in alive) and time.monotonic() < deadline:
            time.sleep(0.05)
        for proc in alive:
            if proc.exitcode is None:
                with contextlib.suppress(OSError):
                    os.kill(proc.pid, signal.SIGKILL)
                proc.join(5.0)


def _worker_envs(start: dict[str, Any], host: str, local_address: str) -> list[dict[str, str]]:
    ranks: list[int] = start["ranks"]
    common = {
        "WORLD_SIZE": str(start["world_size"]),
        "LOCAL_WORLD_SIZE": str(len(ranks)),
        "GROUP_RANK": str(start["host_index"]),
        "MASTER_ADDR": start["store"][0],
        "MASTER_PORT": str(start["store"][1]),
        ENV_HOST: host,
    }
    interface = interface_of(local_address)
    if interface is not None:
        for name in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"):
            if name not in os.environ:
                common[name] = interface
    return [
        {**common, "RANK": str(rank), "LOCAL_RANK": str(local)} for local, rank in enumerate(ranks)
    ]


def _hold_store(address: str, timeout_s: float) -> tuple[Any, socket.socket]:
    """The workers' TCPStore, served by this process on a port of `address` bound here."""
    import torch.distributed as dist

    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    listener = socket.create_server((address, 0), family=family)
    port = listener.getsockname()[1]
    store = dist.TCPStore(
        address,
        port,
        None,
        True,
        timedelta(seconds=timeout_s),
        wait_for_workers=False,
        master_listen_fd=listener.fileno(),
    )
    return store, listener


def _watch_launcher(channel: Channel, stop: threading.Event) -> None:
    """Set `stop` when the launcher says so or its connection ends."""

    def read() -> None:
        with contextlib.suppress(Exception):
            while channel.recv_json().get("type") != "stop":
                pass
        stop.set()

    threading.Thread(target=read, name="unilab-launch-control", daemon=True).start()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m unilab_launch._agent")
    p.add_argument("--host-index", type=int, required=True)
    p.add_argument("--hostname", type=str, required=True)
    p.add_argument("--agent-timeout", type=float, default=60.0)
    return p


def _tied_to_launcher() -> None:
    """On the launcher's machine, end with the launcher (it is this process's parent)."""
    with contextlib.suppress(ValueError):
        host, pid, start = os.environ.get(ENV_LAUNCHER, "").split()
        mine = host == socket.gethostname() and int(pid) == os.getppid()
        if mine and process_start_ticks(int(pid)) == int(start):
            parent_death_signal(signal.SIGKILL)
            if os.getppid() != int(pid):
                os._exit(1)


def main(argv: Sequence[str] | None = None) -> int:
    """Run this host's workers until they are done, one failed, or the launcher says stop."""
    args = _parser().parse_args(argv)
    _tied_to_launcher()
    ignore_terminal_interrupt()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    host, port = os.environ[ENV_CONTROL].split()
    key = bytes.fromhex(os.environ[ENV_KEY])
    os.environ[ENV_HOST] = args.hostname
    log_to_launcher((host, int(port)), key, args.hostname, None)
    log_lines(1, logging.INFO)
    log_lines(2, logging.WARNING)
    channel = Channel.connect((host, int(port)), key, timeout=args.agent_timeout)
    local_address = channel.sock.getsockname()[0]
    hello: dict[str, Any] = {"role": "agent", "host_index": args.host_index, "pid": os.getpid()}
    held = None
    if args.host_index == 0:
        held = _hold_store(local_address, args.agent_timeout)
        hello["store"] = [local_address, held[1].getsockname()[1]]
    channel.send_json(hello)
    start = channel.recv_json()
    payload = channel.recv_bytes()
    run_dir = os.environ.get(ENV_RUN_DIR)
    workers = _Workers(args.hostname, Path(run_dir) if run_dir else None)
    _watch_launcher(channel, stop)
    workers.start(_worker_envs(start, args.hostname, local_address), payload)
    _log.info("started %d worker processes", len(workers.procs))
    return _supervise(workers, channel, stop)


def _supervise(workers: _Workers, channel: Channel, stop: threading.Event) -> int:
    with contextlib.suppress(OSError):
        while not stop.is_set():
            workers.poll()
            if workers.failed():
                channel.send_json(_status("failed", workers))
                workers.stop()
                workers.poll(note_exits=False)
                channel.send_json(_status("stopped", workers))
                return 1
            if workers.done():
                channel.send_json({"type": "done", "count": len(workers.procs)})
                for local_rank in range(len(workers.procs)):
                    channel.send_bytes(workers.results[local_rank])
                stop.wait()
                return 0
            time.sleep(0.1)
    workers.stop()
    with contextlib.suppress(OSError):
        channel.send_json(_status("stopped", workers))
    _log.info("agent stopped; its workers were stopped")
    return 0


def _status(state: str, workers: _Workers) -> dict[str, Any]:
    return {"type": state, "failures": workers.failures, "exits": workers.exit_reports()}


if __name__ == "__main__":
    code = main()
    # Skip the interpreter's exit hooks: torch's (e.g. dynamo's compile-time report) would log
    # through a connection that is closing. The agent has nothing left to clean up.
    logging.shutdown()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)
