"""Launching one worker per GPU, or N CPU workers, on one or many hosts through torchrunx.

    from unilab_launch import launch

    results = launch("my_pkg.train:main", args=("cfg.toml",), gpus="all", seed=1)

Public API: `launch`, `LaunchConfig`, `WorkerFailedError`, `LaunchInterrupted`,
`interrupt_on_signals` (the launch's signal policy, for code around a launch), `parse_gpus`,
`parse_hosts`, `read_hostfile`, `resolve_hosts`, `DEFAULT_ENV_PATTERNS`; the command
`unilab-launch` (`unilab_launch.cli`).

`launch` lives with torch; it is imported on first use, so that importing this package (and
`unilab-launch --help`) does not import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import _siblings  # noqa: F401 (first: siblings outside the declared ranges fail here)
from ._config import DEFAULT_ENV_PATTERNS as DEFAULT_ENV_PATTERNS
from ._config import LaunchConfig as LaunchConfig
from ._config import parse_gpus as parse_gpus
from ._config import parse_hosts as parse_hosts
from ._config import read_hostfile as read_hostfile
from ._failures import WorkerFailedError as WorkerFailedError
from ._signals import LaunchInterrupted as LaunchInterrupted
from ._signals import interrupt_on_signals as interrupt_on_signals
from ._slurm import resolve_hosts as resolve_hosts

if TYPE_CHECKING:
    from ._launch import launch as launch

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_ENV_PATTERNS",
    "LaunchConfig",
    "LaunchInterrupted",
    "WorkerFailedError",
    "__version__",
    "interrupt_on_signals",
    "launch",
    "parse_gpus",
    "parse_hosts",
    "read_hostfile",
    "resolve_hosts",
]

_LAZY = {"launch": "._launch"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
