"""The `unilab` command: settings refused before any worker starts (exit status 2), `list`."""

from __future__ import annotations

import json

import pytest
import torch

from unilab_integration.cli import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["train", "cartpole-balanse", "--iterations", "1"],
            "unknown task 'cartpole-balanse'; tasks: ",
        ),
        (
            [
                "train",
                "cartpole-balance",
                "--cpu-workers",
                "3",
                "--num-envs",
                "64",
                "--env-scope",
                "global",
                "--iterations",
                "1",
            ],
            "env.num_envs=64 with env.scope=global does not divide by the world size 3",
        ),
        (["train", "cartpole-balance", "--cpu-workers", "1"], "no training budget"),
        (
            ["train", "cartpole-balance", "--num-envs", "64", "--iterations", "1"],
            "--num-envs needs --env-scope",
        ),
        (
            ["train", "cartpole-balance", "--iterations", "1", "--set", "algo.lr=1"],
            "unknown config key 'algo.lr'",
        ),
        (
            ["train", "cartpole-balance", "--iterations", "1", "--set", "launch.timeout=abc"],
            "error: 'launch.timeout' takes a number, not 'abc'\n",
        ),
        (
            ["train", "cartpole-balance", "--iterations", "1", "--set", "env.kwargs.pole_len=2"],
            "env.kwargs of task 'cartpole-balance': task 'cartpole-balance' has no option(s) "
            "['pole_len']; options: ",
        ),
        (
            [
                *("train", "cartpole-balance", "--iterations", "1"),
                *("--set", "env.kwargs.on_overflow=explode"),
            ],
            "env.kwargs of task 'cartpole-balance': 'on_overflow' must be in",
        ),
        (
            ["train", "cartpole-balance", "--algo", "distill", "--iterations", "1"],
            "needs a teacher",
        ),
        (
            ["train", "cartpole-balance", "--iterations", "1", "--resume", "/nonexistent/run"],
            "no checkpoint at /nonexistent/run",
        ),
        (
            [
                *("train", "cartpole-balance", "--cpu-workers", "1", "--iterations", "1"),
                *("--hosts", "localhost,no-such-host.invalid"),
            ],
            "--hosts: host 'no-such-host.invalid' does not resolve",
        ),
    ],
)
def test_invalid_settings_exit_2_before_any_worker(argv, message, capsys, tmp_path):
    code = main([*argv, "--log-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert list(tmp_path.iterdir()) == []  # no run folder: nothing was launched


@pytest.mark.parametrize("present", [0, 1])
def test_gpus_beyond_the_visible_ones_exit_2(present, monkeypatch, capsys, tmp_path):
    # the host's own GPUs must not matter: this machine shows `present` of them
    monkeypatch.setattr(torch.cuda, "is_available", lambda: present > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: present)
    argv = ["train", "cartpole-balance", "--gpus", "0,1", "--iterations", "1"]
    code = main([*argv, "--log-dir", str(tmp_path)])
    assert code == 2
    assert f"--gpus 0,1 asks for GPU 1 but only {present} GPU(s) are" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_print_config_applies_flags_then_overrides(capsys):
    code = main(
        [
            "train",
            "cartpole-swingup",
            "--algo",
            "ppo",
            "--num-envs",
            "16",
            "--env-scope",
            "per-rank",
            "--seed",
            "5",
            "--iterations",
            "7",
            "--set",
            "algo.num_epochs=2",
            "--print-config",
        ]
    )
    assert code == 0
    cfg = json.loads(capsys.readouterr().out)
    assert cfg["env"] == {
        "task": "cartpole-swingup",
        "num_envs": 16,
        "scope": "per-rank",
        "kwargs": {},
    }
    assert cfg["runner"]["seed"] == 5 and cfg["runner"]["iterations"] == 7
    assert cfg["algo"]["num_epochs"] == 2


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("cartpole-balance", "cartpole-swingup", "ppo", "distill", "fastsac", "rsl_rl"):
        assert name in out


USER_TASK = ("--set", 'runner.imports=["_unilab_user_task"]')


def test_a_task_without_defaults_needs_num_envs_and_env_scope(capsys, tmp_path):
    """No silent 64 envs: a user task with no registered defaults is refused (exit 2, nothing
    written) until --num-envs and --env-scope give its env count."""
    argv = ["train", "user-cartpole", "--cpu-workers", "1", "--iterations", "1", *USER_TASK]
    assert main([*argv, "--log-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert (
        "error: task 'user-cartpole' has no default env count: give --num-envs N with "
        "--env-scope per-rank|global (env.num_envs, env.scope), or register the task's "
        "defaults (unilab_integration.register_task_defaults)\n"
    ) in err
    assert list(tmp_path.iterdir()) == []
    given = [*argv, "--num-envs", "6", "--env-scope", "global", "--print-config"]
    assert main(given) == 0
    env = json.loads(capsys.readouterr().out)["env"]
    assert (env["num_envs"], env["scope"]) == (6, "global")


def test_a_user_task_provides_its_defaults_through_runner_imports(capsys):
    assert main(["train", "user-cartpole-small", *USER_TASK, "--print-config"]) == 0
    cfg = json.loads(capsys.readouterr().out)
    assert cfg["env"]["num_envs"] == 8 and cfg["runner"]["num_steps_per_env"] == 4
    assert cfg["runner"]["imports"] == ["_unilab_user_task"]
