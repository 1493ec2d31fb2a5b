"""`unilab` answers --help and argument errors without the heavy modules (torch, warp, mujoco,
tensordict, unilab_algos, unilab_envs), checked on the installed console entry point in a fresh
Python; the static lists that make this possible equal the real registries."""

from __future__ import annotations

import pytest

import unilab_integration
from unilab_integration import ALGORITHMS, PRESETS
from unilab_integration._cli import build_parser
from unilab_integration._envs import BUILTIN_TASK_NAMES
from unilab_launch.testing import run_console_script

HEAVY = (
    "torch",
    "warp",
    "mujoco",
    "mujoco_warp",
    "tensordict",
    "numpy",
    "unilab_algos",
    "unilab_envs",
    "unilab_dist",
    "torchrunx",
)


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["--help"], 0, ""),
        (["train", "--help"], 0, ""),
        (["train"], 2, "the following arguments are required: task"),
        (
            ["train", "cartpole-balance", "--algo", "nope"],
            2,
            "unknown algorithm 'nope'; algorithms: ppo, distill, fastsac",
        ),
        (["train", "cartpole-balance", "--preset", "x"], 2, "invalid choice: 'x'"),
        (["train", "cartpole-balance", "--iterations", "ten"], 2, "invalid int value: 'ten'"),
        (
            ["train", "nosuchtask", "--iterations", "1"],
            2,
            "unilab train: error: unknown task 'nosuchtask'; tasks: cartpole-balance, ",
        ),
        (
            ["train", "cartpole-balance", "--num-envs", "8", "--iterations", "1"],
            2,
            "--num-envs needs --env-scope",
        ),
    ],
)
def test_help_and_argument_errors_import_no_heavy_module(argv, code, message):
    run = run_console_script("unilab", argv, watch=HEAVY)
    assert run.code == code and message in run.stderr, run.stderr
    assert run.imported == []


def test_list_names_every_task_without_torch_warp_or_mujoco():
    light = ("unilab_envs", "unilab_algos", "unilab_dist")  # their registries import nothing heavy
    run = run_console_script("unilab", ["list"], watch=tuple(m for m in HEAVY if m not in light))
    assert run.code == 0 and run.imported == [], run.stderr
    from unilab_envs.tasks import BUILTIN_TASKS

    listed = run.stdout.split("algorithms:")[0].split()[1:]
    assert listed == sorted(BUILTIN_TASKS)  # (this process's registry holds tests' tasks too)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--set", "algo.learning_rate=abc"], "'algo.learning_rate' takes a number, not 'abc'"),
        (["--set", "algo.num_learning_epochs=2"], "did you mean 'algo.num_epochs'?"),
        (["--set", "algo.actor.activation=foo"], "unknown activation 'foo'"),
        (["--set", "algo.capture=maybe"], "'algo.capture' takes one of 'auto'"),
        (["--algo", "fastsac", "--set", "algo.batch_size=abc"], "takes an integer, not 'abc'"),
        (["--algo", "distill", "--set", "algo.student.hidden=[0]"], "positive ints"),
    ],
)
def test_config_refusals_import_no_heavy_module(argv, message):
    # the algorithms' configs (unilab_algos.<algo>.config) are checked without torch
    light = ("unilab_algos",)
    argv = ["train", "cartpole-balance", "--cpu-workers", "1", *argv]
    run = run_console_script("unilab", argv, watch=tuple(m for m in HEAVY if m not in light))
    assert run.code == 2 and message in run.stderr, run.stderr
    assert run.imported == []


def test_unknown_task_with_runner_imports_asks_the_real_registry():
    # a module of runner.imports may register the task: then the env stack decides
    argv = ["train", "nosuchtask", "--iterations", "1", "--set", 'runner.imports=["json"]']
    run = run_console_script("unilab", argv, watch=("unilab_envs",))
    assert run.code == 2 and "unknown task 'nosuchtask'; tasks: cartpole-balance" in run.stderr
    assert run.imported == ["unilab_envs"]


def test_builtin_task_names_equal_the_envs_registry():
    import unilab_envs
    from unilab_envs.tasks import BUILTIN_TASKS

    assert sorted(BUILTIN_TASK_NAMES) == sorted(BUILTIN_TASKS)
    assert set(BUILTIN_TASK_NAMES) <= set(unilab_envs.list_tasks())


def test_argparse_choices_are_the_registries():
    train = build_parser()._subparsers._group_actions[0].choices["train"]
    choices = {a.dest: a.choices for a in train._actions if a.choices is not None}
    assert tuple(choices["preset"]) == PRESETS == ("default", "rsl_rl", "fast")
    # --algo takes registered algorithms too (register_algorithm), so it is checked after
    # runner.imports, not by argparse; its help names the built-in ones
    (algo,) = [a for a in train._actions if a.dest == "algo"]
    assert algo.choices is None and list(ALGORITHMS) == ["ppo", "distill", "fastsac"]
    assert "ppo, distill, fastsac, or one that a module of runner.imports registers" in algo.help


def test_the_lazy_facade_lists_every_public_name():
    assert set(unilab_integration._LAZY) == set(unilab_integration.__all__) - {"__version__"}
    for name in unilab_integration.__all__:
        assert getattr(unilab_integration, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        unilab_integration.nope  # noqa: B018


# What only the commands that read a policy need: MJLab's checkpoints and tracking evaluator,
# ONNX export, video and the play loop. Named by what they define, not by module, so that the
# check holds whatever file holds them.
POLICY_ONLY = ("load_policy_checkpoint", "evaluate_tracking", "export_onnx", "play_episodes")

_LOADED = (
    "import sys, {module}; mods = [m for n, m in list(sys.modules.items()) "
    "if n.startswith('unilab_integration.')]; "
    "print(sorted({{name for m in mods for name in {names!r} if name in vars(m)}}))"
)


@pytest.mark.parametrize(
    "module",
    [
        "unilab_integration.cli",  # `unilab list` and the launching process of `unilab train`
        "unilab_integration._runners",  # what a training worker imports
    ],
)
def test_train_and_list_load_no_mjlab_export_or_play_code(module):
    import subprocess
    import sys

    code = _LOADED.format(module=module, names=POLICY_ONLY)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_list_imports_no_mjlab_module():
    run = run_console_script("unilab", ["list"], watch=("unilab_integration._mjlab",))
    assert run.code == 0 and run.imported == [], run.stderr
