"""Test helpers: a faked SLURM allocation for `hosts="slurm"` on one machine, the modules
that a console command imports, and a terminal's signal dispositions for a child process.

    env = fake_slurm_env(tmp_path, ["localhost"])
    subprocess.run(["unilab-launch", "--hosts", "slurm", "--cpu-workers", "2", ...], env=env)
    run = run_console_script("unilab-launch", ["--help"], watch=("torch",))
    assert run.code == 0 and run.imported == []
    proc = subprocess.Popen(cmd, preexec_fn=terminal_signals)  # then send it a Ctrl-C

Importing this module imports nothing heavy.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

__all__ = ["ScriptRun", "fake_slurm_env", "run_console_script", "terminal_signals"]

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
