"""Launching one worker per GPU, or N CPU workers, on one or many hosts through torchrunx.

    from unilab_launch import launch

    results = launch("my_pkg.train:main", args=("cfg.toml",), gpus="all", seed=1)

Public API: `launch`, `LaunchConfig`, `WorkerFailedError`, `LaunchInterrupted`, `parse_gpus`, `parse_hosts`,
`read_hostfile`, `DEFAULT_ENV_PATTERNS`; the command `unilab-launch` (`unilab_launch.cli`).
"""

from ._config import DEFAULT_ENV_PATTERNS as DEFAULT_ENV_PATTERNS
from ._config import LaunchConfig as LaunchConfig
from ._config import parse_gpus as parse_gpus
from ._config import parse_hosts as parse_hosts
from ._config import read_hostfile as read_hostfile
from ._launch import LaunchInterrupted as LaunchInterrupted
from ._launch import WorkerFailedError as WorkerFailedError
from ._launch import launch as launch

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_ENV_PATTERNS",
    "LaunchConfig",
    "LaunchInterrupted",
    "WorkerFailedError",
    "__version__",
    "launch",
    "parse_gpus",
    "parse_hosts",
    "read_hostfile",
]
