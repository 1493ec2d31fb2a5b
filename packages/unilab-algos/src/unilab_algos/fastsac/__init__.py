"""FastSAC: soft actor-critic for massively parallel simulation (Holosoma's FastSAC), with
replay shards per rank and injected gradient synchronization."""

from __future__ import annotations

import importlib
from typing import Any

from .config import FastSACConfig as FastSACConfig

__all__ = [
    "DeterministicPolicy",
    "FastSAC",
    "FastSACConfig",
    "QEnsemble",
    "SquashedGaussianActor",
    "actor_loss",
    "categorical_projection",
    "distributional_critic_loss",
    "polyak_update",
    "scalar_critic_loss",
    "soft_scalar_target",
    "temperature_loss",
]

_LAZY = {
    "FastSAC": ".learner",
    "actor_loss": ".loss",
    "categorical_projection": ".loss",
    "distributional_critic_loss": ".loss",
    "polyak_update": ".loss",
    "scalar_critic_loss": ".loss",
    "soft_scalar_target": ".loss",
    "temperature_loss": ".loss",
    "DeterministicPolicy": ".networks",
    "QEnsemble": ".networks",
    "SquashedGaussianActor": ".networks",
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
