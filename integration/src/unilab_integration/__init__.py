"""UniLab's runners, configs and the `unilab` command line.

from unilab_integration import make_config, apply_overrides, train

cfg = make_config("cartpole-balance", "ppo")
cfg = apply_overrides(cfg, ["launch.cpu_workers=2", "runner.until_solved=true"])
result = train(cfg)           # launches the workers, returns rank 0's summary

The names are imported on first use (most of them need torch), so that importing the package,
and `unilab --help`, stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import _siblings  # noqa: F401 (first: siblings outside the declared ranges fail here)

if TYPE_CHECKING:
    from ._algorithms import ALGORITHMS as ALGORITHMS
    from ._algorithms import AlgorithmSpec as AlgorithmSpec
    from ._algorithms import register_algorithm as register_algorithm
    from ._checkpoint import CheckpointError as CheckpointError
    from ._checkpoint import load_checkpoint as load_checkpoint
    from ._checkpoint import resolve_checkpoint as resolve_checkpoint
    from ._checkpoint import save_checkpoint as save_checkpoint
    from ._config import PRESETS as PRESETS
    from ._config import CheckpointSettings as CheckpointSettings
    from ._config import EnvConfig as EnvConfig
    from ._config import EvalSettings as EvalSettings
    from ._config import LaunchSettings as LaunchSettings
    from ._config import LogSettings as LogSettings
    from ._config import RunnerConfig as RunnerConfig
    from ._config import TrainConfig as TrainConfig
    from ._config import WandbSettings as WandbSettings
    from ._config import load_config as load_config
    from ._config import save_config as save_config
    from ._export import export_onnx as export_onnx
    from ._export import read_onnx_metadata as read_onnx_metadata
    from ._logger import MetricLogger as MetricLogger
    from ._mjlab import evaluate_tracking as evaluate_tracking
    from ._mjlab import load_policy_checkpoint as load_policy_checkpoint
    from ._overrides import apply_overrides as apply_overrides
    from ._play import play as play
    from ._play import play_episodes as play_episodes
    from ._restore import learner_from_checkpoint as learner_from_checkpoint
    from ._restore import policy_from_checkpoint as policy_from_checkpoint
    from ._runners import NonFiniteError as NonFiniteError
    from ._runners import OffPolicyRunner as OffPolicyRunner
    from ._runners import OnPolicyRunner as OnPolicyRunner
    from ._runners import make_runner as make_runner
    from ._sinks import MetricSink as MetricSink
    from ._sinks import RunInfo as RunInfo
    from ._sinks import register_sink as register_sink
    from ._sinks import sink_names as sink_names
    from ._task_defaults import make_config as make_config
    from ._task_defaults import register_task_defaults as register_task_defaults
    from ._train import quiet_warp as quiet_warp
    from ._train import train as train
    from ._train import train_worker as train_worker
    from ._train import validate as validate

__version__ = "0.1.0"

__all__ = [
    "ALGORITHMS",
    "PRESETS",
    "AlgorithmSpec",
    "CheckpointError",
    "CheckpointSettings",
    "EnvConfig",
    "EvalSettings",
    "LaunchSettings",
    "LogSettings",
    "MetricLogger",
    "MetricSink",
    "NonFiniteError",
    "OffPolicyRunner",
    "OnPolicyRunner",
    "RunInfo",
    "RunnerConfig",
    "TrainConfig",
    "WandbSettings",
    "__version__",
    "apply_overrides",
    "evaluate_tracking",
    "export_onnx",
    "read_onnx_metadata",
    "learner_from_checkpoint",
    "load_checkpoint",
    "load_config",
    "load_policy_checkpoint",
    "make_config",
    "make_runner",
    "play",
    "play_episodes",
    "policy_from_checkpoint",
    "quiet_warp",
    "register_algorithm",
    "register_sink",
    "register_task_defaults",
    "resolve_checkpoint",
    "save_checkpoint",
    "save_config",
    "sink_names",
    "train",
    "train_worker",
    "validate",
]

_LAZY = {
    "ALGORITHMS": "._algorithms",
    "AlgorithmSpec": "._algorithms",
    "register_algorithm": "._algorithms",
    "CheckpointError": "._checkpoint",
    "load_checkpoint": "._checkpoint",
    "resolve_checkpoint": "._checkpoint",
    "save_checkpoint": "._checkpoint",
    "PRESETS": "._config",
    "EnvConfig": "._config",
    "LaunchSettings": "._config",
    "CheckpointSettings": "._config",
    "EvalSettings": "._config",
    "LogSettings": "._config",
    "RunnerConfig": "._config",
    "TrainConfig": "._config",
    "load_config": "._config",
    "make_config": "._task_defaults",
    "save_config": "._config",
    "WandbSettings": "._config",
    "MetricLogger": "._logger",
    "load_policy_checkpoint": "._mjlab",
    "evaluate_tracking": "._mjlab",
    "play_episodes": "._play",
    "policy_from_checkpoint": "._restore",
    "quiet_warp": "._train",
    "MetricSink": "._sinks",
    "RunInfo": "._sinks",
    "register_sink": "._sinks",
    "sink_names": "._sinks",
    "apply_overrides": "._overrides",
    "export_onnx": "._export",
    "learner_from_checkpoint": "._restore",
    "play": "._play",
    "read_onnx_metadata": "._export",
    "NonFiniteError": "._runners",
    "OffPolicyRunner": "._runners",
    "OnPolicyRunner": "._runners",
    "make_runner": "._runners",
    "register_task_defaults": "._task_defaults",
    "train": "._train",
    "train_worker": "._train",
    "validate": "._train",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
