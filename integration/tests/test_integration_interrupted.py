"""An interrupted session and its resume: Ctrl-C names the checkpoint a resume starts from and
the iterations lost; the resumed session marks what the interrupted one logged after that
checkpoint (metrics.jsonl) or purges it (TensorBoard), so each iteration has one history."""

from __future__ import annotations

import json

import pytest

from unilab_dist import DistContext
from unilab_integration import apply_overrides, make_config, save_checkpoint
from unilab_integration._runners import OnPolicyRunner
from unilab_integration.cli import main

TINY = ["env.num_envs=4", "runner.num_steps_per_env=4", "runner.checkpoints.interval=2"]
LOGGERS = 'runner.logging.loggers=["jsonl","tensorboard"]'


def _runner(run_dir, *more):
    cfg = apply_overrides(make_config("cartpole-balance", "ppo"), [*TINY, LOGGERS, *more])
    return OnPolicyRunner(cfg, DistContext(), run_dir)


def _rows(run_dir):
    return [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_a_resume_supersedes_what_the_interrupted_session_logged(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    _runner(tmp_path, "runner.iterations=3").run()
    # as after Ctrl-C at iteration 3: its checkpoint never written, `latest` at 2
    (tmp_path / "checkpoints" / "ckpt_000003.pt").unlink()
    (tmp_path / "checkpoints" / "latest").write_text("ckpt_000002.pt\n")
    resumed = _runner(tmp_path, "runner.iterations=4")
    resumed.load(tmp_path)
    resumed.run()
    rows = _rows(tmp_path)
    assert [(r["iteration"], r.get("superseded", False)) for r in rows] == [
        (1, False),
        (2, False),
        (3, True),
        (3, False),
        (4, False),
    ]
    history = [r for r in rows if not r.get("superseded")]
    assert [r["env_steps/global"] for r in history] == [16, 32, 48, 64]
    # TensorBoard: the events past the checkpoint's 32 steps were purged, then logged again
    acc = EventAccumulator(str(tmp_path / "tensorboard"))
    acc.Reload()
    steps = [e.step for e in acc.Scalars("learner/value")]
    assert steps == [16, 32, 48, 64]


def test_ctrl_c_names_the_resume_point_and_the_iterations_lost(tmp_path, monkeypatch, capsys):
    import unilab_launch
    from unilab_launch import LaunchInterrupted

    run = tmp_path / "r"

    def interrupted_launch(*args, **kwargs):
        """What a session stopped at iteration 12, with its last checkpoint at 10, leaves."""
        save_checkpoint(run / "checkpoints", 10, {"task": "cartpole-balance"})
        rows = "".join(json.dumps({"iteration": i}) + "\n" for i in range(1, 13))
        (run / "metrics.jsonl").write_text(rows + '{"iteration": 1')  # a line cut short
        raise LaunchInterrupted("SIGINT")

    monkeypatch.setattr(unilab_launch, "launch", interrupted_launch)
    argv = ["train", "cartpole-balance", "--cpu-workers", "1", "--iterations", "20"]
    code = main([*argv, "--log-dir", str(tmp_path), "--run-name", "r"])
    err = capsys.readouterr().err
    assert code == 130
    assert err == (
        f"unilab train: interrupted by SIGINT; a resume (--resume "
        f"{run}) starts from ckpt_000010.pt (iteration 10); iterations 11-12 are lost\n"
    )
