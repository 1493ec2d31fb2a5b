"""PPO: config, networks, loss and the runner-facing learner."""

from __future__ import annotations

import importlib
from typing import Any

from .config import LargeBatch as LargeBatch
from .config import PPOConfig as PPOConfig
from .config import RNDConfig as RNDConfig
from .config import SymmetryConfig as SymmetryConfig

__all__ = [
    "LargeBatch",
    "Mirror",
    "PPO",
    "PPOConfig",
    "RNDConfig",
    "SymmetryConfig",
    "adaptive_lr",
    "adaptive_lr_tensor",
    "apply_update",
    "forward_backward",
    "gaussian_kl",
    "ppo_loss",
    "scale_for_envs",
    "SignedPermutation",
    "sync_grads",
    "trainable_params",
]

_LAZY = {
    "apply_update": "._step",
    "forward_backward": "._step",
    "sync_grads": "._step",
    "trainable_params": "._step",
    "scale_for_envs": ".large_batch",
    "Mirror": ".symmetry",
    "SignedPermutation": ".symmetry",
    "PPO": ".learner",
    "gaussian_kl": ".loss",
    "ppo_loss": ".loss",
    "adaptive_lr": ".schedule",
    "adaptive_lr_tensor": ".schedule",
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
