"""`unilab robots get` keeps MJLab's robot files in the robot cache from a wheel (built here: no
network), and `unilab train` refuses a task whose robot file is missing before anything heavy
is imported: exit status 2, one line, no traceback, no command that changes a package."""

from __future__ import annotations

import os
import sys
import time
import zipfile
from pathlib import Path

import pytest

from unilab_launch.testing import run_console_script

# what makes a refusal slow (the env stack); the light unilab_envs.robot_files is allowed
HEAVY = ("torch", "warp", "mujoco", "mujoco_warp", "tensordict", "numpy", "unilab_algos")
GO1 = "mjlab/asset_zoo/robots/unitree_go1/xmls/go1.xml"


@pytest.fixture
def no_robot_files(tmp_path) -> dict[str, str]:
    """The environment of a user without MJLab's files: an empty robot cache, and an `mjlab`
    package without them ahead of any installed one."""
    (tmp_path / "site" / "mjlab").mkdir(parents=True)
    (tmp_path / "site" / "mjlab" / "__init__.py").write_text("")
    path = os.pathsep.join([str(tmp_path / "site"), *sys.path[1:]])
    return {**os.environ, "PYTHONPATH": path, "UNILAB_ROBOTS_DIR": str(tmp_path / "cache")}


def test_train_without_the_robot_file_is_refused_at_once(no_robot_files):
    start = time.monotonic()
    run = run_console_script(
        "unilab", ["train", "go1-velocity-flat", "--cpu-workers", "1"], watch=HEAVY,
        env=no_robot_files,
    )  # fmt: skip
    elapsed = time.monotonic() - start
    print(f"refused in {elapsed:.2f} s (with Python's start)")
    lines = run.stderr.strip().splitlines()
    assert run.code == 2 and len(lines) == 1, run.stderr
    assert lines[0].startswith("unilab train: error: task 'go1-velocity-flat': no MJCF for")
    assert "`unilab robots get go1`" in lines[0]
    assert "pip install" not in lines[0]
    assert run.imported == []


def test_robots_get_from_a_wheel_then_train_finds_the_file(tmp_path, no_robot_files):
    wheel = tmp_path / "wheels" / "mjlab-1.6.0-py3-none-any.whl"
    wheel.parent.mkdir()
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("mjlab/__init__.py", "")
        zf.writestr(GO1, '<mujoco model="go1"/>')
        zf.writestr(os.path.dirname(GO1) + "/assets/trunk.stl", "mesh")
    run = run_console_script(
        "unilab", ["robots", "get", "go1", "--from", str(wheel.parent)], watch=HEAVY,
        env=no_robot_files,
    )  # fmt: skip
    cached = Path(no_robot_files["UNILAB_ROBOTS_DIR"]) / GO1
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == f"go1: {cached}"
    assert cached.read_text() == '<mujoco model="go1"/>'
    assert (cached.parent / "assets" / "trunk.stl").read_text() == "mesh"
    assert run.imported == []
    # the check before launching now passes: train goes on to compose its config
    run = run_console_script(
        "unilab", ["train", "go1-velocity-flat", "--cpu-workers", "1", "--algo", "nope"],
        watch=(), env=no_robot_files,
    )  # fmt: skip
    assert run.code == 2 and "unknown algorithm 'nope'" in run.stderr, run.stderr


def test_robots_get_errors_are_one_line(tmp_path, no_robot_files):
    for argv, message in (
        (["robots", "get", "h1", "--from", str(tmp_path)], "unknown robot 'h1'; known: g1, go1"),
        (["robots", "get", "go1", "--from", str(tmp_path)], "no mjlab-1.6.0-*.whl in this folder"),
    ):
        run = run_console_script("unilab", argv, watch=HEAVY, env=no_robot_files)
        lines = run.stderr.strip().splitlines()
        assert run.code == 2 and len(lines) == 1, run.stderr
        assert lines[0].startswith("unilab robots get: error: ") and message in lines[0]


def test_builtin_task_robots_name_the_file_each_task_finds():
    import unilab_envs
    from unilab_envs.robot_files import find_mjcf
    from unilab_envs.tasks import BUILTIN_TASKS
    from unilab_envs.tasks.robots import asset_path
    from unilab_envs.testing import mjlab_robot
    from unilab_integration._envs import BUILTIN_TASK_ROBOTS

    mjlab_robot("go1"), mjlab_robot("g1")  # skip without MJLab's files
    assert set(BUILTIN_TASK_ROBOTS) <= set(BUILTIN_TASKS)
    for name in BUILTIN_TASKS:
        mjcf = getattr(getattr(unilab_envs.make_task(name), "robot", None), "mjcf", None)
        if name in BUILTIN_TASK_ROBOTS:
            assert mjcf == find_mjcf(BUILTIN_TASK_ROBOTS[name]).path, name
        else:  # no robot, or one of UniLab's packaged MJCFs: nothing to fetch
            assert mjcf is None or mjcf.startswith(asset_path("")), (name, mjcf)
