"""Shared math of the UniLab learners: normalizers, network builders, Gaussian policy helpers,
the CUDA-graph capture helper, and the learner contract (`Learner` and its two kinds)."""

from __future__ import annotations

import importlib
from typing import Any

from .config import GaussianConfig as GaussianConfig
from .config import NetworkConfig as NetworkConfig

__all__ = [
    "ACTIVATIONS",
    "CaptureMode",
    "CaptureStatus",
    "CudaBackend",
    "CudaGraphs",
    "EmpiricalNormalizer",
    "GaussianActor",
    "GaussianConfig",
    "GradSync",
    "GraphBackend",
    "Learner",
    "Memory",
    "NetworkConfig",
    "NormalizerUpdate",
    "OffPolicyLearner",
    "OnPolicyLearner",
    "ReduceSum",
    "RerunBackend",
    "ValueCritic",
    "activation_module",
    "convert_rsl_rl_state_dict",
    "missing_members",
    "mlp",
]

_LAZY = {
    "CaptureMode": ".cuda_graphs",
    "CaptureStatus": ".cuda_graphs",
    "CudaBackend": ".cuda_graphs",
    "CudaGraphs": ".cuda_graphs",
    "GraphBackend": ".cuda_graphs",
    "RerunBackend": ".cuda_graphs",
    "GaussianActor": ".models",
    "Memory": ".models",
    "ValueCritic": ".models",
    "convert_rsl_rl_state_dict": ".models",
    "ACTIVATIONS": ".networks",
    "activation_module": ".networks",
    "mlp": ".networks",
    "EmpiricalNormalizer": ".normalizer",
    "NormalizerUpdate": ".normalizer",
    "Learner": ".protocol",
    "OffPolicyLearner": ".protocol",
    "OnPolicyLearner": ".protocol",
    "missing_members": ".protocol",
    "GradSync": ".sync",
    "ReduceSum": ".sync",
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
