"""A resume continues its run: the checkpoint's config is the run's config, and what the
resuming command sets on purpose applies on top, listed in its first line and `resume.log`.
One CPU worker, 4 cart-poles, through `unilab train`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from unilab_integration import load_checkpoint
from unilab_integration.cli import main

SETS = [
    "algo.entropy_coef=0.5",
    "algo.learning_rate=5e-4",
    "runner.checkpoints.interval=1",
    "runner.checkpoints.keep=2",
]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A run of 2 iterations trained with the issue's settings."""
    log_dir = tmp_path_factory.mktemp("runs")
    argv = ["train", "cartpole-balance", "--cpu-workers", "1", "--num-envs", "4"]
    argv += ["--env-scope", "per-rank", "--iterations", "2", "--no-progress"]
    argv += ["--log-dir", str(log_dir), "--run-name", "r", "--set", "runner.num_steps_per_env=4"]
    argv += ["--set", 'runner.logging.loggers=["jsonl"]']
    for item in SETS:
        argv += ["--set", item]
    assert main(argv) == 0
    return log_dir / "r"


def _iterations(run: Path) -> list[int]:
    return sorted(int(p.stem[5:]) for p in (run / "checkpoints").glob("ckpt_*.pt"))


def test_a_resume_keeps_the_runs_settings_and_lists_what_it_sets(run, capsys):
    capsys.readouterr()
    assert main(["train", "cartpole-balance", "--resume", str(run), "--iterations", "5"]) == 0
    out = capsys.readouterr().out.splitlines()
    ckpt2 = run / "checkpoints" / "ckpt_000002.pt"
    expected = (
        f"resuming {ckpt2} at iteration 2 with its run's config; this command sets "
        "runner.iterations 2 -> 5"
    )
    assert out[0] == expected
    assert expected in (run / "resume.log").read_text().splitlines()
    session = json.loads((run / "config.resume-2.json").read_text())
    latest = load_checkpoint(run)
    for config in (session, latest["config"]):
        assert config["algo"]["entropy_coef"] == 0.5
        assert config["algo"]["learning_rate"] == 5e-4
        saving = config["runner"]["checkpoints"]
        assert (saving["interval"], saving["keep"]) == (1, 2)
        assert config["env"]["num_envs"] == 4 and config["runner"]["num_steps_per_env"] == 4
        assert config["launch"]["cpu_workers"] == 1
    # a checkpoint every iteration, the run's newest 2 kept
    assert latest["iteration"] == 5
    assert _iterations(run) == [4, 5]


def test_a_resume_refuses_another_algorithm_or_preset(run, capsys):
    for flag, value, what in (("--algo", "fastsac", "algorithm"), ("--preset", "rsl_rl", "preset")):
        code = main(["train", "cartpole-balance", "--resume", str(run), flag, value])
        err = capsys.readouterr().err
        assert code == 2
        assert f"was trained with {what} " in err and f"this run uses '{value}'" in err


def test_a_corrupt_config_json_is_named_and_left_as_it_is(run, capsys):
    (run / "config.json").write_text("{not json")
    # what a killed write leaves: stale under the run's lock, removed when a session starts
    stale = [
        run / "checkpoints" / ".ckpt_000006.pt.tmp4242",
        run / "checkpoints" / ".latest.tmp4242",
    ]
    for path in stale:
        path.write_bytes(b"partial")
    capsys.readouterr()
    assert main(["train", "cartpole-balance", "--resume", str(run), "--iterations", "6"]) == 0
    captured = capsys.readouterr()
    lines = [x for x in captured.err.splitlines() if "config.json" in x]
    assert lines == [
        f"unilab train: {run / 'config.json'} is unreadable (Expecting property name enclosed "
        "in double quotes: line 1 column 2 (char 1)): the run's config comes from its "
        "checkpoint; the file is left as it is"
    ]
    assert (run / "config.json").read_text() == "{not json"
    assert not any(path.exists() for path in stale)
    assert "entropy_coef" in (run / "config.resume-5.json").read_text()
    assert load_checkpoint(run)["config"]["algo"]["entropy_coef"] == 0.5
