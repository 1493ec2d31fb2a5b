"""Profiler ranges of the learners: named spans a torch profiler shows, free without one.

While a profiler records (`torch.profiler.profile`, or `torch.autograd.profiler.emit_nvtx`
under Nsight Systems), `profiler_range(name)` is `torch.profiler.record_function(name)`;
otherwise it opens nothing, since an unobserved `record_function` still costs a few
microseconds of host time. `profiled(name)` makes a whole method one such range. The learners'
ranges: `unilab/update` (every learner's `update`) and, inside PPO's, per mini-batch
`unilab/forward_backward`, `unilab/grad_sync` and `unilab/apply`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any, TypeVar

import torch
from torch.profiler import record_function

__all__ = ["profiled", "profiler_range"]

F = TypeVar("F", bound=Callable[..., Any])


def profiler_range(name: str) -> contextlib.AbstractContextManager:
    """The range `name` while a torch profiler records, else a no-op context."""
    if torch.autograd._profiler_enabled():
        return record_function(name)
    return contextlib.nullcontext()


def profiled(name: str) -> Callable[[F], F]:
    """Decorator: each call of the function is the profiler range `name`."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            with profiler_range(name):
                return fn(*args, **kwargs)

        return call  # type: ignore[return-value]

    return wrap
