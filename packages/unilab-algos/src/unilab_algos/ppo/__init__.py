"""PPO: config, networks, loss and the runner-facing learner."""

from __future__ import annotations

import importlib
from typing import Any

from .config import PPOConfig as PPOConfig
from .config import RNDConfig as RNDConfig

__all__ = [
    "LargeBatch",
    "PPO",
    "PPOConfig",
    "RNDConfig",
    "adaptive_lr",
    "adaptive_lr_tensor",
    "apply_update",
    "forward_backward",
    "gaussian_kl",
    "ppo_loss",
    "scale_for_envs",
    "sync_grads",
    "trainable_params",
]

_LAZY = {
    "apply_update": "._step",
    "forward_backward": "._step",
    "sync_grads": "._step",
    "trainable_params": "._step",
    "LargeBatch": ".large_batch",
    "scale_for_envs": ".large_batch",
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
