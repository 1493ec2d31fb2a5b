"""The launcher's side of a launch: its control server, the agents, and what they report.

`run_agents` listens on one port (`_net.bind_address`: loopback on one host), starts one agent
per host (`python -m unilab_launch._agent`: a child process here, `ssh` through torchrunx's
`execute_command` elsewhere), hands every agent its ranks, the store's address and the pickled
function once all have connected, and then waits for each to report "done" (results) or
"failed" (failure records, exit reports), telling all to stop at the first failure. Every
connection proves the launch's key first (`_net.Channel.verify`); log connections carry JSON
records only.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import queue
import secrets
import shlex
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import attrs
import cloudpickle

from ._logs import record_from
from ._net import Channel, bind_address, is_local_host
from ._worker import ENV_CONTROL, ENV_KEY

__all__ = ["AgentsFailed", "Plan", "run_agents"]

STOP_WAIT_S = 15.0
"""How long the launcher waits for every agent to report its workers stopped."""


@attrs.frozen(kw_only=True)
class Plan:
    """What the agents run: hosts in rank order, workers per host, and their environment."""

    hostnames: list[str]
    counts: list[int]
    env: dict[str, str]
    copy_env: tuple[str, ...]
    ssh_config_file: str | None
    agent_timeout: float


class AgentsFailed(Exception):
    """A launch ended without every result: the reports the agents sent, and why."""

    def __init__(
        self, cause: str, failures: list[dict[str, Any]], exits: list[dict[str, Any]]
    ) -> None:
        super().__init__(cause)
        self.failures = failures
        self.exits = exits


class _Server:
    """The control server: authenticated connections, JSON log records, agent messages."""

    def __init__(self, address: str, key: bytes, handlers: list[Any], timeout: float) -> None:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        self.listener = socket.create_server((address, 0), family=family)
        self.address = (address, self.listener.getsockname()[1])
        self.key = key
        self.handlers = handlers
        self.timeout = timeout
        self.events: queue.Queue[tuple[str, int, Any]] = queue.Queue()
        self.agents: dict[int, Channel] = {}
        self.open_logs = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, name="unilab-launch-accept", daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                sock, _ = self.listener.accept()
                threading.Thread(target=self._serve, args=(Channel(sock),), daemon=True).start()

    def _serve(self, channel: Channel) -> None:
        if not channel.verify(self.key, self.timeout):
            channel.close()  # not a process of this launch: nothing it sent was read
            return
        try:
            hello = channel.recv_json()
        except (OSError, EOFError, ValueError):
            channel.close()
            return
        if hello.get("role") == "log":
            self._serve_logs(channel)
        elif hello.get("role") == "agent":
            self._serve_agent(channel, hello)
        channel.close()

    def _serve_logs(self, channel: Channel) -> None:
        with self.lock:
            self.open_logs += 1
        try:
            with contextlib.suppress(OSError, EOFError, ValueError):
                while True:
                    record = record_from(channel.recv_json())
                    for handler in self.handlers:
                        if handler.filter(record):
                            handler.handle(record)
        finally:
            with self.lock:
                self.open_logs -= 1

    def _serve_agent(self, channel: Channel, hello: dict[str, Any]) -> None:
        index = int(hello["host_index"])
        with self.lock:
            self.agents[index] = channel
        self.events.put(("hello", index, hello))
        try:
            while True:
                message = channel.recv_json()
                if message.get("type") == "done":
                    blobs = [channel.recv_bytes() for _ in range(int(message["count"]))]
                    values = [cloudpickle.loads(b) for b in blobs]  # authenticated agent
                    self.events.put(("done", index, values))
                else:
                    self.events.put((message.get("type", "?"), index, message))
        except (OSError, EOFError, ValueError):
            pass
        self.events.put(("closed", index, None))

    def tell_all(self, message: dict[str, Any]) -> None:
        with self.lock:
            channels = list(self.agents.values())
        for channel in channels:
            with contextlib.suppress(OSError):
                channel.send_json(message)

    def wait_logs_closed(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self.open_logs and time.monotonic() < deadline:
            time.sleep(0.05)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.close()
        with self.lock:
            channels = list(self.agents.values())
        for channel in channels:
            channel.close()


def _agent_command(plan: Plan, index: int) -> list[str]:
    return [
        sys.executable, "-u", "-m", "unilab_launch._agent", "--host-index", str(index),
        "--hostname", plan.hostnames[index], "--agent-timeout", str(plan.agent_timeout),
    ]  # fmt: skip


def _start_agents(plan: Plan, env: dict[str, str]) -> list[subprocess.Popen[bytes]]:
    """Start every agent: a child process for this machine, over SSH for another host."""
    local_procs = []
    for index, host in enumerate(plan.hostnames):
        command = _agent_command(plan, index)
        if is_local_host(host):
            local_procs.append(subprocess.Popen(command, env={**os.environ, **env}))
            continue
        from torchrunx.utils.environment import execute_command

        copied = {
            k: v for k, v in os.environ.items() if any(fnmatch.fnmatch(k, p) for p in plan.copy_env)
        }
        exports = " ".join(shlex.quote(f"{k}={v}") for k, v in {**copied, **env}.items())
        line = f"cd {shlex.quote(os.getcwd())} && export {exports} && {shlex.join(command)}"
        execute_command(line, host, ssh_config_file=plan.ssh_config_file)
    return local_procs


def run_agents(
    plan: Plan,
    payload: tuple[Any, Callable[..., Any], tuple[Any, ...]],
    handlers: list[Any],
    on_stop: Callable[[], None],
) -> list[Any]:
    """Run the launch; return the results by global rank, or raise `AgentsFailed`.

    `on_stop` runs once every agent has stopped (or the wait for them ended), before
    anything is raised, interrupts included.
    """
    key = secrets.token_bytes(32)
    server = _Server(bind_address(plan.hostnames), key, handlers, plan.agent_timeout)
    env = {**plan.env, ENV_KEY: key.hex(), ENV_CONTROL: f"{server.address[0]} {server.address[1]}"}
    procs: list[subprocess.Popen[bytes]] = []
    reports = _Reports(len(plan.hostnames))
    try:
        procs = _start_agents(plan, env)
        _hand_out(plan, server, reports, procs, cloudpickle.dumps(payload))
        results = _collect(plan, server, reports)
        server.tell_all({"type": "stop"})
        _wait_agents(server, reports, procs)
        server.wait_logs_closed(2.0)
        return [v for host in range(len(plan.hostnames)) for v in results[host]]
    except BaseException:
        server.tell_all({"type": "stop"})
        _wait_agents(server, reports, procs)
        server.wait_logs_closed(2.0)
        on_stop()
        raise
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        server.close()


@attrs.define
class _Reports:
    hosts: int
    failures: list[dict[str, Any]] = attrs.Factory(list)
    exits: list[dict[str, Any]] = attrs.Factory(list)
    ended: set[int] = attrs.Factory(set)

    def add(self, kind: str, index: int, message: Any) -> None:
        if kind in {"failed", "stopped"}:
            self.failures.extend(message.get("failures", []))
            self.exits.extend(message.get("exits", []))
        if kind in {"stopped", "closed"}:
            self.ended.add(index)

    def fail(self, cause: str) -> AgentsFailed:
        return AgentsFailed(cause, self.failures, self.exits)


def _next(server: _Server, reports: _Reports, timeout_s: float) -> tuple[str, int, Any] | None:
    try:
        event = server.events.get(timeout=timeout_s)
    except queue.Empty:
        return None
    reports.add(*event)
    return event


def _hand_out(
    plan: Plan,
    server: _Server,
    reports: _Reports,
    procs: list[subprocess.Popen[bytes]],
    payload: bytes,
) -> None:
    """Wait for every agent's hello, then give each its ranks, the store and the function."""
    hellos: dict[int, dict[str, Any]] = {}
    deadline = time.monotonic() + plan.agent_timeout
    while len(hellos) < len(plan.hostnames):
        missing = [plan.hostnames[i] for i in range(len(plan.hostnames)) if i not in hellos]
        if time.monotonic() > deadline:
            raise reports.fail(f"no agent connected from {missing} in {plan.agent_timeout:g} s")
        ended = [p.returncode for p in procs if p.poll() is not None]
        if ended and server.events.empty():
            raise reports.fail(
                f"an agent on this machine ended with status {ended[0]} before it connected "
                f"(waiting for {missing}; its log: agent-<host>.log)"
            )
        event = _next(server, reports, 0.1)
        if event is None:
            continue
        kind, index, message = event
        if kind == "hello":
            hellos[index] = message
        elif kind == "closed":
            raise reports.fail(f"the agent on {plan.hostnames[index]} ended before it started")
    starts = [0]
    for count in plan.counts:
        starts.append(starts[-1] + count)
    with server.lock:
        channels = dict(server.agents)
    for index in range(len(plan.hostnames)):
        channels[index].send_json(
            {
                "type": "start",
                "host_index": index,
                "ranks": list(range(starts[index], starts[index + 1])),
                "world_size": starts[-1],
                "store": hellos[0]["store"],
            }
        )
        channels[index].send_bytes(payload)


def _collect(plan: Plan, server: _Server, reports: _Reports) -> dict[int, list[Any]]:
    results: dict[int, list[Any]] = {}
    while len(results) < len(plan.hostnames):
        event = _next(server, reports, 0.1)
        if event is None:
            continue
        kind, index, message = event
        if kind == "done":
            results[index] = message
        elif kind in {"failed", "stopped"}:
            raise reports.fail(f"a worker on {plan.hostnames[index]} failed")
        elif kind == "closed" and index not in results:
            raise reports.fail(f"the agent on {plan.hostnames[index]} ended unexpectedly")
    return results


def _wait_agents(server: _Server, reports: _Reports, procs: list[subprocess.Popen[bytes]]) -> None:
    """Until every agent that connected has stopped its workers (or `STOP_WAIT_S` passed)."""
    deadline = time.monotonic() + STOP_WAIT_S
    while time.monotonic() < deadline:
        with server.lock:
            connected = set(server.agents)
        if connected <= reports.ended and all(p.poll() is not None for p in procs):
            return
        _next(server, reports, 0.05)
