"""tools/bench/lease_queue.py with real processes: the queue runs detached, in order, a poll
returns when it is done and packs the results, and `stop` leaves no process behind."""

import json
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "bench" / "lease_queue.py"
sys.path.insert(0, str(TOOL.parent))
import lease_queue  # noqa: E402


def _cli(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(TOOL), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def _wait_for(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_queue_runs_in_order_and_a_poll_packs_what_it_wrote(tmp_path):
    folder, out = tmp_path / "lease", tmp_path / "out"
    queue = tmp_path / "queue.txt"
    queue.write_text(
        "# one lease's runs\n"
        'echo \'{"a": 1}\' > "$OUT/a.json"\n'
        "\n"
        "echo failing; exit 3\n"
        'mkdir -p "$OUT/runs/r/checkpoints" && echo x > "$OUT/runs/r/checkpoints/ckpt_1.pt"'
        ' && echo \'{"b": 2}\' > "$OUT/b.json" && echo "Module foo load" && echo last line\n'
    )
    started = _cli("start", "--dir", str(folder), str(queue))
    assert started.returncode == 0, started.stderr
    t = time.monotonic()
    polled = _cli("poll", "--dir", str(folder), "--max-seconds", "50", "--out", str(out))
    assert polled.returncode == 0, polled.stderr
    assert time.monotonic() - t < 30  # it returned when the queue was done, not at 50 s
    state = json.loads((folder / "queue.json").read_text())
    assert state["done"] and not state["stopped"]
    assert [j["rc"] for j in state["jobs"]] == [0, 3, 0]  # a failing job does not stop it
    assert state["jobs"][0]["cmd"].startswith("echo '{\"a\": 1}'")
    starts = [j["start_s"] for j in state["jobs"]]
    assert starts == sorted(starts)
    lines = polled.stdout.splitlines()
    assert "queue done: 3 of 3 jobs ended" in polled.stdout
    assert lines[-1] == "=== job 3 exit 0" and "last line" in lines
    assert not any(line.startswith("Module ") for line in lines)
    with tarfile.open(out / "results.tgz") as tar:
        names = set(tar.getnames())
    assert {"a.json", "b.json", "queue.json", "lease.log"} <= names
    assert not any(n.startswith("runs") or n.endswith(".pt") for n in names)
    # a finished queue's folder is not reused
    again = _cli("start", "--dir", str(folder), str(queue))
    assert again.returncode != 0 and "finished queue" in again.stderr


def test_stop_lets_the_running_job_clean_up_and_leaves_no_process(tmp_path):
    folder = tmp_path / "lease"
    job = (
        "import signal, sys, time\n"
        "def bye(*_):\n"
        "    open(sys.argv[1], 'w').write('cleaned')\n"
        "    sys.exit(7)\n"
        "signal.signal(signal.SIGINT, bye)\n"
        "open(sys.argv[2], 'w').write('up')\n"
        "time.sleep(120)\n"
    )
    (tmp_path / "job.py").write_text(job)
    queue = tmp_path / "queue.txt"
    queue.write_text(
        f'{sys.executable} {tmp_path / "job.py"} "$OUT/clean.txt" "$OUT/up.txt"\n'
        'echo never > "$OUT/never.txt"\n'
    )
    assert _cli("start", "--dir", str(folder), str(queue)).returncode == 0
    _wait_for(lambda: (folder / "up.txt").exists())
    polled = _cli("poll", "--dir", str(folder), "--max-seconds", "0.5")
    assert "job 1: running for" in polled.stdout and "queue running: 0 of 2" in polled.stdout
    pid = json.loads((folder / "queue.json").read_text())["pid"]
    assert lease_queue.group_alive(pid)
    stopped = _cli("stop", "--dir", str(folder))
    assert stopped.returncode == 0, stopped.stderr
    assert (folder / "clean.txt").read_text() == "cleaned"  # SIGINT reached the job
    assert not (folder / "never.txt").exists()  # nothing ran after it
    assert not lease_queue.group_alive(pid)
    state = json.loads((folder / "queue.json").read_text())
    assert state["stopped"] and not state["done"]
    assert [j["rc"] for j in state["jobs"]] == [7, None]
    assert "queue stopped: 1 of 2 jobs ended" in stopped.stdout
    again = _cli("start", "--dir", str(folder), str(queue))
    assert again.returncode != 0 and "holds a stopped queue" in again.stderr


def test_stop_kills_a_job_that_ignores_sigint(tmp_path):
    folder = tmp_path / "lease"
    queue = tmp_path / "queue.txt"
    queue.write_text("trap '' INT; touch \"$OUT/up\"; sleep 120 & wait; sleep 120\n")
    assert _cli("start", "--dir", str(folder), str(queue)).returncode == 0
    _wait_for(lambda: (folder / "up").exists())
    pid = json.loads((folder / "queue.json").read_text())["pid"]
    t = time.monotonic()
    state = lease_queue.stop(folder, grace_s=1.0)
    assert time.monotonic() - t < 10
    assert not lease_queue.group_alive(pid)
    assert state["stopped"]


def test_a_queue_without_commands_and_a_running_queue_are_refused(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n\n")
    with pytest.raises(SystemExit, match="holds no command"):
        lease_queue.start(tmp_path / "a", empty)
    queue = tmp_path / "queue.txt"
    queue.write_text('touch "$OUT/up"; sleep 120\n')
    folder = tmp_path / "b"
    lease_queue.start(folder, queue)
    try:
        _wait_for(lambda: (folder / "up").exists())
        with pytest.raises(SystemExit, match="not done"):
            lease_queue.start(folder, queue)
    finally:
        lease_queue.stop(folder, grace_s=5.0)
    assert not lease_queue.group_alive(json.loads((folder / "queue.json").read_text())["pid"])
