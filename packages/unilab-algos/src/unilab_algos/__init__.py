"""On-policy (PPO, Student-Teacher Distillation) and off-policy (FastSAC) learners whose
distributed behaviour is injected (`grad_sync`, reducers); `None` means one process. What a
runner drives is written once as protocols: `Learner`, `OnPolicyLearner`, `OffPolicyLearner`."""

from __future__ import annotations

import importlib
from typing import Any

from . import _siblings  # noqa: F401 (first: siblings outside the declared ranges fail here)

__version__ = "0.1.0"

__all__ = [
    "PPO",
    "CaptureMode",
    "CaptureStatus",
    "Distillation",
    "DistillationConfig",
    "EmpiricalNormalizer",
    "FastSAC",
    "FastSACConfig",
    "GaussianConfig",
    "LargeBatch",
    "Learner",
    "Mirror",
    "NetworkConfig",
    "OffPolicyLearner",
    "OnPolicyLearner",
    "PPOConfig",
    "RNDConfig",
    "SignedPermutation",
    "SymmetryConfig",
    "__version__",
    "convert_rsl_rl_state_dict",
    "mlp",
]

_LAZY = {
    "CaptureMode": ".common",
    "CaptureStatus": ".common",
    "EmpiricalNormalizer": ".common",
    "GaussianConfig": ".common",
    "Learner": ".common",
    "NetworkConfig": ".common",
    "OffPolicyLearner": ".common",
    "OnPolicyLearner": ".common",
    "convert_rsl_rl_state_dict": ".common",
    "mlp": ".common",
    "Distillation": ".distill",
    "DistillationConfig": ".distill",
    "FastSAC": ".fastsac",
    "FastSACConfig": ".fastsac",
    "PPO": ".ppo",
    "PPOConfig": ".ppo",
    "RNDConfig": ".ppo",
    "LargeBatch": ".ppo",
    "Mirror": ".ppo",
    "SignedPermutation": ".ppo",
    "SymmetryConfig": ".ppo",
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
