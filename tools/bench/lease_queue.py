"""Run a lease's benchmark commands one after another, detached, and poll them.

    python3 tools/bench/lease_queue.py start --dir /tmp/ttw QUEUE
    python3 tools/bench/lease_queue.py poll --dir /tmp/ttw [--max-seconds 580] [--tail 30]
    python3 tools/bench/lease_queue.py stop --dir /tmp/ttw

A lent GPU machine goes back 30 s after a call ends, and with it every file a detached job
wrote (docs/benchmarks/README.md). This tool keeps a lease's work in one place and brings back
what has finished at every poll.

`start` reads QUEUE (one shell command per line; blank lines and lines starting with `#` are
skipped), writes `DIR/queue.json` and returns at once; a runner in its own session runs the
commands in order with `bash -c`, from the current folder, with `OUT=DIR` in their environment
(benchmarks write their JSONs there), their output appended to `DIR/lease.log`. A command that
fails does not stop the queue. `queue.json` says per job its command, start and end times (s
since the queue started) and exit code; it is rewritten atomically at each change.

`poll` waits until the queue is done or `--max-seconds` have passed, whichever is first (a
call that would idle after the last job returns at once), then writes `$OUT/results.tgz` (DIR
without its `runs` folder and `*.pt` files: the JSONs, logs and curves) and prints the jobs'
state and, last, the tail of `lease.log` without warp's module-load lines. `stop` sends SIGINT
to the runner's process group (the runner and the running job: a benchmark stops its own
children on it), SIGKILL to what is left of it after 60 s, and marks the queue stopped.

Standard library only (and `benchlib.py` beside it).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import write_json_file

STATE = "queue.json"
LOG = "lease.log"
RESULTS = "results.tgz"
NOISE = ("Module ", "Warp ")  # warp's module-load lines: hundreds per compilation


def read_queue(path: Path) -> list[str]:
    """The commands of a queue file: one per line, blank lines and `#` comments skipped."""
    lines = [line.strip() for line in path.read_text().splitlines()]
    cmds = [line for line in lines if line and not line.startswith("#")]
    if not cmds:
        raise SystemExit(f"lease_queue: {path} holds no command (one shell command per line)")
    return cmds


def _write_state(folder: Path, state: dict) -> None:
    write_json_file(folder / STATE, state)  # atomic: `poll` may read it at any moment


def read_state(folder: Path) -> dict:
    path = folder / STATE
    if not path.is_file():
        raise SystemExit(f"lease_queue: no queue in {folder} (run `start` first)")
    return json.loads(path.read_text())


def start(folder: Path, queue: Path) -> int:
    """Write the queue's state and launch its runner in a new session; returns its pid."""
    cmds = read_queue(queue)
    folder.mkdir(parents=True, exist_ok=True)
    if (folder / STATE).is_file():
        state = read_state(folder)
        if state.get("done") or state.get("stopped"):
            ended = "finished" if state.get("done") else "stopped"
            raise SystemExit(f"lease_queue: {folder} holds a {ended} queue; use another --dir")
        raise SystemExit(
            f"lease_queue: {folder} has a queue that is not done (pid {state['pid']}); "
            "`stop` it or use another --dir"
        )
    state = {
        "started": time.time(),
        "pid": None,
        "done": False,
        "stopped": False,
        "jobs": [{"cmd": c, "start_s": None, "end_s": None, "rc": None} for c in cmds],
    }
    _write_state(folder, state)
    with open(folder / LOG, "ab") as log:
        runner = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "_run", "--dir", str(folder)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    for _ in range(100):  # the runner records its pid first: `stop` needs it
        if read_state(folder)["pid"] == runner.pid or runner.poll() is not None:
            break
        time.sleep(0.1)
    return runner.pid


def _run(folder: Path) -> None:
    """The runner: each job in turn, its state written before and after. SIGINT or SIGTERM
    (`stop` sends SIGINT to the whole group, the job included) ends the queue after the
    running job has ended, which gives a benchmark the time to stop its own children."""
    stopping = []

    def _flag(signum, frame) -> None:  # a Python handler: the job gets the default again
        stopping.append(signum)

    signal.signal(signal.SIGINT, _flag)
    signal.signal(signal.SIGTERM, _flag)
    state = read_state(folder)
    state["pid"] = os.getpid()
    _write_state(folder, state)
    env = {**os.environ, "OUT": str(folder)}
    t0 = state["started"]
    for i, job in enumerate(state["jobs"]):
        if stopping:
            state["stopped"] = True
            _write_state(folder, state)
            return
        job["start_s"] = round(time.time() - t0, 1)
        _write_state(folder, state)
        with open(folder / LOG, "ab") as log:
            log.write(f"=== job {i + 1}/{len(state['jobs'])}: {job['cmd']}\n".encode())
            log.flush()
            proc = subprocess.Popen(
                ["bash", "-c", job["cmd"]],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
            )
            rc = proc.wait()  # not interrupted by the handler above (PEP 475)
            log.write(f"=== job {i + 1} exit {rc}\n".encode())
        job["end_s"], job["rc"] = round(time.time() - t0, 1), rc
        _write_state(folder, state)
    state["done"] = not stopping
    state["stopped"] = bool(stopping)
    _write_state(folder, state)


def pack(folder: Path, dest: Path) -> Path:
    """`dest/results.tgz`: the queue folder without its `runs` folder and checkpoints."""
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / RESULTS
    tmp = dest / (RESULTS + ".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder)
            if rel.parts[0] == "runs" or path.suffix == ".pt" or not path.is_file():
                continue
            if path.name.endswith(".tmp") or path.resolve() == out.resolve():
                continue
            tar.add(path, arcname=str(rel), recursive=False)
    os.replace(tmp, out)
    return out


def status_lines(state: dict) -> list[str]:
    now = time.time() - state["started"]
    lines = []
    for i, job in enumerate(state["jobs"], 1):
        if job["rc"] is not None:
            what = f"exit {job['rc']} after {job['end_s'] - job['start_s']:.0f} s"
        elif job["start_s"] is not None:
            what = (
                "stopped" if state.get("stopped") else f"running for {now - job['start_s']:.0f} s"
            )
        else:
            what = "not started"
        lines.append(f"job {i}: {what}: {job['cmd']}")
    done = sum(j["rc"] is not None for j in state["jobs"])
    verdict = "stopped" if state.get("stopped") else "done" if state["done"] else "running"
    lines.append(f"queue {verdict}: {done} of {len(state['jobs'])} jobs ended, {now:.0f} s in")
    return lines


def log_tail(folder: Path, n: int) -> list[str]:
    path = folder / LOG
    if not path.is_file():
        return []
    text = path.read_text(errors="replace").splitlines()
    return [line for line in text if not line.startswith(NOISE)][-n:]


def poll(folder: Path, max_seconds: float, out: Path | None, tail: int) -> dict:
    deadline = time.monotonic() + max_seconds
    state = read_state(folder)
    while not (state["done"] or state.get("stopped")) and time.monotonic() < deadline:
        time.sleep(min(2.0, max(0.0, deadline - time.monotonic())))
        state = read_state(folder)
    if out is not None:
        pack(folder, out)
    print("\n".join(status_lines(state)))
    print("\n".join(log_tail(folder, tail)), flush=True)
    return state


def group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs (zombies, which no longer run, excluded:
    an orphaned runner may wait for a reaper)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # it ended while we looked
        fields = text[text.rindex(")") + 2 :].split()  # after "pid (comm) "
        if int(fields[2]) == pgid and fields[0] != "Z":  # state, ppid, pgrp, ...
            return True
    return False


def stop(folder: Path, grace_s: float = 60.0) -> dict:
    """SIGINT the runner's process group (the runner and its running job), SIGKILL whatever of
    it is left after `grace_s`; returns the final state."""
    state = read_state(folder)
    pid = state.get("pid")
    if pid and not state["done"]:
        try:
            os.killpg(pid, signal.SIGINT)  # the runner leads its session and process group
            deadline = time.monotonic() + grace_s
            while group_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if group_alive(pid):
                os.killpg(pid, signal.SIGKILL)
                time.sleep(0.2)
        except ProcessLookupError:
            pass
    state = read_state(folder)
    if not state["done"] and not state.get("stopped"):  # the runner was killed: say so here
        state["stopped"] = True
        _write_state(folder, state)
    print("\n".join(status_lines(state)))
    return state


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start", help="run QUEUE's commands in order, detached")
    s.add_argument("--dir", required=True, type=Path)
    s.add_argument("queue", type=Path)
    p = sub.add_parser("poll", help="wait for the queue or the time, pack results, print state")
    p.add_argument("--dir", required=True, type=Path)
    p.add_argument("--max-seconds", type=float, default=580.0)
    p.add_argument("--tail", type=int, default=30)
    p.add_argument("--out", type=Path, default=None, help="where results.tgz goes (default $OUT)")
    t = sub.add_parser("stop", help="end the runner and its jobs")
    t.add_argument("--dir", required=True, type=Path)
    r = sub.add_parser("_run")  # the detached runner
    r.add_argument("--dir", required=True, type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "start":
        pid = start(args.dir, args.queue)
        print(f"lease_queue: runner {pid} started; log {args.dir / LOG}")
    elif args.cmd == "poll":
        out = args.out or (Path(os.environ["OUT"]) if os.environ.get("OUT") else None)
        poll(args.dir, args.max_seconds, out, args.tail)
    elif args.cmd == "stop":
        stop(args.dir)
    else:
        _run(args.dir)


if __name__ == "__main__":
    main()
