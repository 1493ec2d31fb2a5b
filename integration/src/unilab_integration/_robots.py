"""`unilab robots get ROBOT...` and the robot-file check `unilab train` runs before launching.

    unilab robots get go1 g1                     # pip download --no-deps mjlab==1.6.0
    unilab robots get go1 --from ~/wheels/       # a wheel, or a folder holding it

Both use `unilab_envs.robot_files`, which imports no torch, warp or MuJoCo: a missing file is
reported in well under a second, before any worker starts. The parser, and the check of a task
without MJLab's robot, import nothing of unilab_envs (`unilab --help` stays light).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from ._envs import BUILTIN_TASK_ROBOTS

__all__ = ["add_robots_parser", "check_robot_files", "robots_command"]


def add_robots_parser(sub: Any) -> None:
    """The `robots` command and its `get` subcommand (`sub`: the parser's subparsers)."""
    r = sub.add_parser("robots", help="get the robot files the MJLab tasks need")
    rsub = r.add_subparsers(dest="robots_command", required=True)
    get = rsub.add_parser(
        "get",
        help="keep MJLab's robot files (MJCF and meshes) in the robot cache",
        description="Download MJLab's wheel without its dependencies (nothing is installed or "
        "changed) and keep only the robots' files in the robot cache, where the tasks find "
        "them: UNILAB_ROBOTS_DIR, else unilab/robots in the user cache (~/.cache on Linux).",
    )
    get.add_argument("robots", nargs="+", metavar="ROBOT", help="go1, g1")
    get.add_argument(
        "--from",
        dest="source",
        metavar="WHEEL_OR_DIR",
        help="MJLab's wheel, or a folder holding it (default: pip download --no-deps mjlab)",
    )


def robots_command(args: argparse.Namespace) -> int:
    """Run `unilab robots get`: print each robot's MJCF path; returns the exit status (2 with
    one line on an unknown robot, a missing wheel or a failed download)."""
    import zipfile

    from unilab_envs.robot_files import fetch_robot_files

    try:
        paths = fetch_robot_files(args.robots, args.source)
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        print(f"unilab robots get: error: {e}", file=sys.stderr)
        return 2
    for robot, path in paths.items():
        print(f"{robot}: {path}")
    return 0


def check_robot_files(task: str, hosts: Sequence[str] | str | None = None) -> None:
    """Raise `RobotFileNotFoundError` (a FileNotFoundError: exit status 2, one line) when a
    built-in task's robot MJCF is not found here. Skipped for a multi-node launch (`hosts`):
    the other hosts may have the file."""
    robot = BUILTIN_TASK_ROBOTS.get(task)
    if robot is None or hosts:
        return
    from unilab_envs.robot_files import RobotFileNotFoundError, find_mjcf

    try:
        find_mjcf(robot)
    except RobotFileNotFoundError as e:
        raise RobotFileNotFoundError(f"task '{task}': {e}") from None
