"""Run folders, budgets and checkpoint retention, in one process on CPU (runs of a few
iterations of 4 cart-poles), and the run folder's lock with real processes."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from unilab_dist import DistContext
from unilab_integration import _rundir, _runlock, apply_overrides, load_checkpoint, make_config
from unilab_integration._rundir import LOCK, WORKERS, RunFolderError, RunLock, check_lock
from unilab_integration._runners import OnPolicyRunner
from unilab_integration.cli import main

TINY = [
    "env.num_envs=4",
    "runner.num_steps_per_env=4",
    'runner.logging.loggers=["console","jsonl"]',
]


def _runner(run_dir, *more):
    cfg = apply_overrides(make_config("cartpole-balance", "ppo"), [*TINY, *more])
    return OnPolicyRunner(cfg, DistContext(), run_dir)


def _names(run_dir):
    return sorted(p.name for p in (run_dir / "checkpoints").iterdir())


def _digest(folder):
    """{relative path: sha256} of every file under `folder`."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_keep_checkpoints_prunes_the_runs_older_checkpoints(tmp_path, monkeypatch):
    import unilab_integration._runners._checkpointer as checkpointer

    saves = []
    real = checkpointer.save_checkpoint
    monkeypatch.setattr(
        checkpointer, "save_checkpoint", lambda d, i, p: saves.append(i) or real(d, i, p)
    )
    cfg = [
        "runner.checkpoints.interval=1",
        "runner.checkpoints.keep=3",
        "runner.checkpoints.keep_every=4",
    ]
    first = _runner(tmp_path, "runner.iterations=12", *cfg)
    first.run()
    # the newest 3, and every 4th save (iterations 4, 8, 12); one save per iteration, none twice
    assert saves == list(range(1, 13))
    assert _names(tmp_path) == [
        "ckpt_000004.pt",
        "ckpt_000008.pt",
        "ckpt_000010.pt",
        "ckpt_000011.pt",
        "ckpt_000012.pt",
        "latest",
    ]
    # a resumed session prunes the run's checkpoints, whichever session wrote them
    second = _runner(tmp_path, "runner.iterations=18", *cfg)
    second.load(tmp_path)
    second.run()
    assert saves[12:] == list(range(13, 19))
    kept = [int(n[5:11]) for n in _names(tmp_path) if n != "latest"]
    assert kept == [4, 8, 12, 16, 17, 18]
    assert load_checkpoint(tmp_path)["iteration"] == 18
    # keep_checkpoints=0 keeps everything
    every = ["runner.iterations=7", "runner.checkpoints.interval=1", "runner.checkpoints.keep=0"]
    _runner(tmp_path / "all", *every).run()
    assert len(_names(tmp_path / "all")) == 8


def test_the_first_line_names_the_budget_that_set_it(tmp_path, capsys):
    # 4 envs x 4 steps = 16 global steps per iteration: --env-steps 32 ends at iteration 2
    runner = _runner(tmp_path, "runner.iterations=3", "runner.env_steps=32")
    result = runner.run()
    first = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("task "))
    assert (
        "budget 2 iterations in all (set by --env-steps 32 at 16 global steps per iteration; "
        "--iterations 3 would end at 3)"
    ) in first
    assert result["iterations"] == 2 and result["env_steps_global"] == 32
    # resumed: the budget is the run's total, and the line says where this session starts
    again = _runner(tmp_path, "runner.iterations=5")
    again.load(tmp_path)
    assert again.run()["iterations"] == 5
    assert "budget 5 iterations in all, 3 from iteration 2 (set by --iterations 5)" in (
        capsys.readouterr().out
    )


@pytest.fixture
def small_run(tmp_path):
    """A run folder of 2 iterations (checkpoints at 1 and 2, metrics.jsonl)."""
    run_dir = tmp_path / "runs" / "small"
    _runner(run_dir, "runner.iterations=2", "runner.checkpoints.interval=1").run()
    return run_dir


def _train_argv(log_dir, *more):
    return [
        "train",
        "cartpole-balance",
        "--cpu-workers",
        "1",
        "--num-envs",
        "4",
        "--env-scope",
        "per-rank",
        "--log-dir",
        str(log_dir),
        "--set",
        "runner.num_steps_per_env=4",
        *more,
    ]


@pytest.mark.parametrize(
    ("more", "message"),
    [
        (
            ["--iterations", "2", "--run-name", "small"],
            "holds a run (checkpoints up to iteration 2); a run never writes into another "
            "run's folder: continue it with --resume {run}, or train into a fresh --run-name",
        ),
        (
            ["--iterations", "2", "--resume", "{run}"],
            "is at iteration 2 (32 global env steps), which its budget (--iterations 2) has "
            "already reached: a budget counts the run's total",
        ),
        (
            ["--env-steps", "32", "--resume", "{run}"],
            "which its budget (--env-steps 32 at 16 global steps per iteration) has already "
            "reached",
        ),
        (
            ["--iterations", "9", "--resume", "{run}/checkpoints/ckpt_000001.pt"],
            "ckpt_000001.pt is not the newest checkpoint of {run} (it has iteration 2): resuming "
            "it there would overwrite the checkpoints after it",
        ),
        (
            ["--iterations", "2", "--log-dir", "{run}"],
            "--log-dir {run} is a run folder (it holds metrics.jsonl, checkpoints)",
        ),
    ],
    ids=["run-name", "resume-at-iterations", "resume-at-env-steps", "older-ckpt", "log-dir"],
)
def test_a_finished_run_is_never_written(small_run, more, message, capsys):
    before = _digest(small_run)
    more = [m.replace("{run}", str(small_run)) for m in more]
    code = main(_train_argv(small_run.parent, *more))
    err = capsys.readouterr().err
    assert code == 2, err
    assert message.replace("{run}", str(small_run)) in err
    assert _digest(small_run) == before  # not a byte changed, nothing added
    assert sorted(p.name for p in small_run.parent.iterdir()) == ["small"]


def _hold_lock(run_dir):
    """A real process holding RUN/.lock; returns it once the lock exists."""
    code = (
        "import sys, time; from unilab_integration._rundir import RunLock; "
        "RunLock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(600)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(run_dir)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_live_lock_refuses_and_a_killed_holders_lock_is_taken_over(small_run, capsys):
    holder = _hold_lock(small_run)
    try:
        info = json.loads((small_run / LOCK).read_text())
        assert info["pid"] == holder.pid and info["host"] == socket.gethostname()
        for more in (["--iterations", "3", "--run-name", "small"], ["--resume", str(small_run)]):
            code = main(_train_argv(small_run.parent, *more, "--iterations", "3"))
            err = capsys.readouterr().err
            assert code == 2
            assert (
                f"run folder {small_run} is in use by a live trainer (pid {holder.pid} on " in err
            )
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert (small_run / LOCK).exists()  # SIGKILL ran no cleanup: the lock is stale now
    check_lock(small_run)  # a stale lock does not refuse
    capsys.readouterr()
    lock = RunLock(small_run).acquire()
    err = capsys.readouterr().err
    assert err.startswith(f"{small_run / LOCK}: its trainer is gone (pid {holder.pid} on host")
    assert err.endswith("taking the lock over\n") and err.count("\n") == 1
    assert json.loads((small_run / LOCK).read_text())["pid"] == os.getpid()
    lock.release()
    assert not (small_run / LOCK).exists()


def _dead_holders_lock(run_dir):
    """RUN/.lock of a trainer that was SIGKILLed (a real process, gone)."""
    holder = _hold_lock(run_dir)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    return holder.pid


def _worker(run_dir):
    """A real process registered as one of the run's workers; returns it once registered."""
    code = (
        "import sys, time; from unilab_integration._rundir import register_worker; "
        "register_worker(sys.argv[1]); print('registered', flush=True); time.sleep(600)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(run_dir)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "registered"
    return proc


def test_a_takeover_waits_for_the_killed_trainers_workers(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(_runlock, "WORKER_WAIT_S", 0.5)
    dead = _dead_holders_lock(tmp_path)
    worker = _worker(tmp_path)
    try:
        with pytest.raises(RunFolderError, match=rf"still run \(pids \[{worker.pid}\]\)"):
            RunLock(tmp_path).acquire()
        assert f"waiting for the previous trainer's workers (pids [{worker.pid}])" in (
            capsys.readouterr().err
        )
        assert json.loads((tmp_path / LOCK).read_text())["pid"] == dead  # not taken over
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
    lock = RunLock(tmp_path).acquire()  # the worker is gone: taken over, its entry cleared
    assert not (tmp_path / WORKERS).exists()
    assert json.loads((tmp_path / LOCK).read_text())["pid"] == os.getpid()
    lock.release()


def test_a_worker_writes_no_checkpoint_once_the_trainer_holding_the_lock_is_gone(tmp_path):
    runner = _runner(tmp_path, "runner.iterations=1")
    assert _rundir.holder_alive(tmp_path)  # no lock (a runner used without train()): writes
    first = runner.save()
    _dead_holders_lock(tmp_path)
    assert not _rundir.holder_alive(tmp_path)
    before = _digest(tmp_path / "checkpoints")
    assert first.endswith("ckpt_000000.pt") and "ckpt_000000.pt" in before
    runner.iteration += 1  # as if the worker went on training after its launcher was killed
    with pytest.raises(RuntimeError, match=r"\.lock is gone: checkpoint 1 is not written"):
        runner.save()
    assert _digest(tmp_path / "checkpoints") == before  # nothing written, nothing rewritten


def test_a_lock_held_on_another_host_is_refused_with_its_host(tmp_path):
    (tmp_path / LOCK).write_text(
        json.dumps({"pid": 1, "host": "elsewhere-7", "start_ticks": 5, "started": "then"})
    )
    with pytest.raises(RunFolderError, match="locked by a trainer on another host"):
        RunLock(tmp_path).acquire()
    with pytest.raises(RunFolderError, match="pid 1 on host elsewhere-7"):
        check_lock(tmp_path)


def test_a_new_lock_is_created_once_and_released(tmp_path, capsys):
    run_dir = tmp_path / "new"
    with RunLock(run_dir):
        assert (run_dir / LOCK).is_file()
    assert capsys.readouterr().err == ""  # no takeover line for a fresh folder
    assert not run_dir.exists()  # made by the lock, empty again: removed


def test_a_read_only_runs_folder_is_one_line_naming_it_and_log_dir(tmp_path, capsys, monkeypatch):
    def read_only(self, *args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", str(self))

    monkeypatch.setattr(Path, "mkdir", read_only)
    code = main(_train_argv(tmp_path / "ro", "--iterations", "1", "--run-name", "r"))
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        f"unilab train: error: cannot write the run folder {tmp_path / 'ro' / 'r'} (Read-only "
        "file system): train into a writable --log-dir\n"
    )


def test_unnamed_run_folders_never_collide(tmp_path, monkeypatch):
    from unilab_integration._rundir import plan_run_folder

    monkeypatch.setattr("time.strftime", lambda fmt: "20250101-000000")
    cfg = apply_overrides(
        make_config("cartpole-balance", "ppo"),
        [*TINY, "runner.iterations=1", f"runner.logging.log_dir={json.dumps(str(tmp_path))}"],
    )
    first = plan_run_folder(cfg, None).path
    assert first == tmp_path / "cartpole-balance_ppo_20250101-000000"
    first.mkdir()
    (first / "config.json").write_text("{}")
    assert plan_run_folder(cfg, None).path == Path(f"{first}-2")
