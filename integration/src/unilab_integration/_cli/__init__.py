"""The `unilab` commands, one module each; `unilab_integration.cli.main` dispatches to them.

Each module imports the heavy modules (torch, warp, mujoco, unilab_envs, ...) inside its
command function, so that `--help` and argument errors answer without them."""

from .evaluate import eval_command
from .export import export_command
from .parser import build_parser
from .play import play_command
from .train import list_command, train_command
from .upgrade import upgrade_command

__all__ = [
    "build_parser",
    "eval_command",
    "export_command",
    "list_command",
    "play_command",
    "train_command",
    "upgrade_command",
]
