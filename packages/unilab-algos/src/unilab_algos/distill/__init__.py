"""Student-teacher distillation: config, loss and learner."""

from __future__ import annotations

import importlib
from typing import Any

from .config import DistillationConfig as DistillationConfig

__all__ = ["Distillation", "DistillationConfig", "behavior_loss"]

_LAZY = {
    "Distillation": ".learner",
    "behavior_loss": ".loss",
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
