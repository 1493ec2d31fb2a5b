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
from unilab_integration import apply_overrides, load_checkpoint, make_config
from unilab_integration._rundir import LOCK, RunFolderError, RunLock, check_lock
from unilab_integration._runners import OnPolicyRunner
from unilab_integration.cli import main

TINY = ["env.num_envs=4", "runner.num_steps_per_env=4", 'runner.loggers=["console","jsonl"]']


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
    import unilab_integration._runners._base as base

    saves = []
    real = base.save_checkpoint
    monkeypatch.setattr(base, "save_checkpoint", lambda d, i, p: saves.append(i) or real(d, i, p))
    cfg = ["runner.save_interval=1", "runner.keep_checkpoints=3", "runner.keep_every=4"]
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
    every = ["runner.iterations=7", "runner.save_interval=1", "runner.keep_checkpoints=0"]
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
    _runner(run_dir, "runner.iterations=2", "runner.save_interval=1").run()
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
        [*TINY, "runner.iterations=1", f"runner.log_dir={json.dumps(str(tmp_path))}"],
    )
    first = plan_run_folder(cfg, None).path
    assert first == tmp_path / "cartpole-balance_ppo_20250101-000000"
    first.mkdir()
    (first / "config.json").write_text("{}")
    assert plan_run_folder(cfg, None).path == Path(f"{first}-2")
