"""Test helpers: a faked SLURM allocation for `hosts="slurm"` on one machine, the modules
that a console command imports, a terminal's signal dispositions for a child process, and the
sockets that a process tree listens on.

    env = fake_slurm_env(tmp_path, ["localhost"])
    subprocess.run(["unilab-launch", "--hosts", "slurm", "--cpu-workers", "2", ...], env=env)
    run = run_console_script("unilab-launch", ["--help"], watch=("torch",))
    assert run.code == 0 and run.imported == []
    proc = subprocess.Popen(cmd, preexec_fn=terminal_signals)  # then send it a Ctrl-C
    listening_sockets(process_tree(proc.pid))  # {("127.0.0.1", 41234): pid, ...}

Importing this module imports nothing heavy.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from ._net import interface_addresses as interface_addresses

__all__ = [
    "ScriptRun",
    "fake_slurm_env",
    "interface_addresses",
    "listening_sockets",
    "process_tree",
    "run_console_script",
    "terminal_signals",
]

_SCONTROL = """#!/bin/sh
# fake scontrol (unilab_launch.testing): records its arguments, answers `show hostnames`
# from SLURM_JOB_NODELIST (comma-separated names only, no node ranges)
echo "$*" >> "{log}"
[ "$1 $2" = "show hostnames" ] || {{ echo "fake scontrol: unsupported: $*" >&2; exit 1; }}
echo "$SLURM_JOB_NODELIST" | tr ',' '\\n'
"""


def terminal_signals() -> None:
    """`preexec_fn` for a child that a test stops as a terminal would (Ctrl-C, SIGTERM): their
    default dispositions, as a command typed in a shell gets them. A test runner started in the
    background of a non-interactive shell inherits SIGINT and SIGQUIT ignored, and Python
    installs its Ctrl-C handler only where SIGINT is not ignored: without this, such a run
    would test a process that cannot be interrupted."""
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def fake_slurm_env(
    folder: str | os.PathLike[str],
    nodes: Sequence[str],
    env: Mapping[str, str] | None = None,
    *,
    job_id: str = "4242",
) -> dict[str, str]:
    """A copy of `env` (default os.environ) that looks like the inside of a SLURM job.

    Sets SLURM_JOB_ID, SLURM_JOBID, SLURM_JOB_NODELIST (`nodes`, comma-separated),
    SLURM_JOB_NUM_NODES and SLURM_NNODES, and puts an executable `scontrol` first on PATH
    (written into `folder/bin`) that prints `nodes` one per line for `scontrol show
    hostnames` and appends every call's arguments to `folder/scontrol.log`.
    """
    folder = Path(folder)
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "scontrol"
    script.write_text(_SCONTROL.format(log=folder / "scontrol.log"))
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    out = dict(os.environ if env is None else env)
    out.update(
        SLURM_JOB_ID=job_id,
        SLURM_JOBID=job_id,
        SLURM_JOB_NODELIST=",".join(nodes),
        SLURM_JOB_NUM_NODES=str(len(nodes)),
        SLURM_NNODES=str(len(nodes)),
        PATH=os.pathsep.join(p for p in (str(bin_dir), out.get("PATH", "")) if p),
    )
    return out


# Runs the console_scripts entry point `argv[1]` as its installed script does, then reports
# which of the watched modules ended up in sys.modules (on the real stderr, after its output).
_PROBE = """
import json, sys
from importlib.metadata import entry_points
(point,) = entry_points(group="console_scripts", name=sys.argv[1])
watch = json.loads(sys.argv[2])
sys.argv = [point.name, *sys.argv[3:]]
try:
    code = point.load()()
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
print("\\n@@probe@@" + json.dumps({"code": code, "imported": [m for m in watch if m in sys.modules]}), file=sys.__stderr__)
"""


@attrs.frozen(kw_only=True)
class ScriptRun:
    """What `run_console_script` saw: exit code, output, and the watched modules imported."""

    code: Any
    stdout: str
    stderr: str
    imported: list[str]


def run_console_script(
    name: str,
    argv: Sequence[str],
    *,
    watch: Sequence[str],
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> ScriptRun:
    """Run console command `name` (its installed entry point) with `argv` in a fresh Python
    and report which of the modules `watch` it imported (to check lazy imports)."""
    cmd = [sys.executable, "-c", _PROBE, name, json.dumps(list(watch)), *argv]
    out = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env=None if env is None else dict(env)
    )
    stderr, marker, probe = out.stderr.rpartition("\n@@probe@@")
    if not marker:
        raise RuntimeError(
            f"{name} {list(argv)} did not finish (status {out.returncode}): {out.stderr}"
        )
    report = json.loads(probe)
    return ScriptRun(
        code=report["code"], stdout=out.stdout, stderr=stderr, imported=report["imported"]
    )


def process_tree(root: int) -> set[int]:
    """`root` and every process below it (Linux, from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def _listen_table(path: str) -> dict[int, tuple[str, int]]:
    """{inode: (address, port)} of the LISTEN rows of /proc/net/tcp or tcp6."""
    rows: dict[int, tuple[str, int]] = {}
    try:
        with open(path) as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return rows
    for line in lines:
        fields = line.split()
        if len(fields) < 10 or fields[3] != "0A":  # 0A: TCP_LISTEN
            continue
        hex_address, hex_port = fields[1].split(":")
        raw = bytes.fromhex(hex_address)
        # the kernel prints each 32-bit word in host (little-endian) order
        words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
        if len(words) == 16 and words[:12] == b"\0" * 10 + b"\xff" * 2:
            words = words[12:]  # an IPv4-mapped IPv6 address
        family = socket.AF_INET if len(words) == 4 else socket.AF_INET6
        rows[int(fields[9])] = (socket.inet_ntop(family, words), int(hex_port, 16))
    return rows


def listening_sockets(pids: set[int]) -> dict[tuple[str, int], int]:
    """{(address, port): pid} of the TCP sockets (IPv4 and IPv6) in LISTEN state that the
    processes `pids` hold open (Linux: /proc/<pid>/fd and /proc/net/tcp, tcp6)."""
    table = {**_listen_table("/proc/net/tcp"), **_listen_table("/proc/net/tcp6")}
    found = {}
    for pid in pids:
        for inode in _socket_inodes(pid):
            if inode in table:
                found[table[inode]] = pid
    return found
