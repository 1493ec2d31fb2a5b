"""bench_mjlab.py against a stand-in for MJLab's train script: `--train-seconds` ends the run
(its whole process group) once that much training has been logged, and says so in the JSON."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Prints rsl_rl 5.4.2's iteration lines every 0.1 s, forever, beside a child that would outlive
# a kill of the parent alone.
FAKE_TRAIN = """\
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
open(os.environ["FAKE_CHILD_PID"], "w").write(str(child.pid))
time.sleep(0.5)  # setup: not training time
for i in range(100000):
    time.sleep(0.1)
    print(f"  Learning iteration {i}/100000", flush=True)
    print(f"  Total steps: {(i + 1) * 1000}", flush=True)
    print("  Steps per second: 10000", flush=True)
    print("  Iteration time: 0.10s", flush=True)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie awaiting its reaper counts as gone
        return f.read().split(") ")[1][0] != "Z"


def test_train_seconds_stops_the_run_and_its_children(tmp_path):
    site = tmp_path / "site"
    (site / "mjlab" / "scripts").mkdir(parents=True)
    (site / "mjlab" / "__init__.py").write_text("")
    (site / "mjlab" / "scripts" / "__init__.py").write_text("")
    (site / "mjlab" / "scripts" / "train.py").write_text(FAKE_TRAIN)
    child_pid = tmp_path / "child.pid"
    env = dict(os.environ, OUT=str(tmp_path / "out"), FAKE_CHILD_PID=str(child_pid))
    cmd = [sys.executable, str(ROOT / "tools" / "bench" / "bench_mjlab.py"), "--gpus", "1"]
    cmd += ["--site", str(site)]
    cmd += ["--iterations", "100000", "--timeout", "60", "--train-seconds", "1.5", "--name", "t"]
    t0 = time.monotonic()
    subprocess.run(cmd, env=env, check=True, timeout=120, capture_output=True)
    assert time.monotonic() - t0 < 30
    (run,) = json.loads((tmp_path / "out" / "mjlab_t.json").read_text())["runs"]
    assert run["train_seconds_reached"] and not run["timed_out"]
    its = [it for it in run["iterations"] if "steps_per_s" in it]
    first, last = its[0], its[-1]
    trained = last["wall_s"] - (first["wall_s"] - first["iteration_s"])
    assert 1.5 <= trained < 5.0, trained
    assert 5 <= len(its) < 50, len(its)
    pid = int(child_pid.read_text())
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), "the stand-in's child outlived the run"
