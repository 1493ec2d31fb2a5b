"""Metric sinks: where rank 0 sends each iteration's global metrics (`runner.logging.loggers`).

A sink is one small class per backend, made once per training session on rank 0 from a
`RunInfo` and fed by `MetricLogger`:

    class PrintReturn:
        def __init__(self, run: RunInfo) -> None: ...
        def log(self, iteration: int, metrics: Mapping[str, float]) -> None: ...
        def checkpoint(self, iteration: int, path: str) -> None: ...
        def close(self, failed: bool) -> None: ...

    register_sink("print-return", PrintReturn)   # e.g. in a module named in runner.imports

Built in: "console" (the table, and on a terminal a tqdm bar), "jsonl" (RUN/metrics.jsonl),
"tensorboard" (RUN/tensorboard/) and "wandb" (Weights & Biases; the `wandb` extra). Their
modules are imported when a run asks for them.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, TextIO

import attrs

__all__ = [
    "MetricSink",
    "RunInfo",
    "SinkFactory",
    "check_sinks",
    "make_sink",
    "register_sink",
    "sink_names",
]


@attrs.frozen(kw_only=True)
class RunInfo:
    """What a sink knows of its run: `run_dir` (the run folder), `config` (the session's
    `TrainConfig`, saved as its config.json; None outside `unilab train`), `total` (the
    iteration budget, None when unknown), `initial` (the iteration this session starts from:
    0, or the resumed checkpoint's), `initial_env_steps` (the global env steps at that
    checkpoint), `progress` (a live bar is wanted, `runner.logging.progress`) and `stream` (rank 0's
    stdout). A sink of a resumed session (`initial` > 0) drops or marks what an earlier
    session logged after that checkpoint: those iterations are run again."""

    run_dir: Path
    config: Any = None
    total: int | None = None
    initial: int = 0
    initial_env_steps: int = 0
    progress: bool = True
    stream: TextIO = attrs.field(factory=lambda: sys.stdout)


class MetricSink(Protocol):
    """One backend of rank 0's log. `metrics` are global aggregates (floats; NaN where a value
    is missing, e.g. no finished episode yet) with `iteration`, `env_steps/global` and, when
    the budget is known, `eta_s` among them."""

    def log(self, iteration: int, metrics: Mapping[str, Any]) -> None:
        """Record one iteration's metrics."""

    def checkpoint(self, iteration: int, path: str) -> None:
        """A checkpoint of `iteration` was written to `path`."""

    def close(self, failed: bool) -> None:
        """The session ended (`failed`: by an exception); flush and release everything."""


SinkFactory = Callable[[RunInfo], MetricSink]


def _builtin(module: str, name: str) -> SinkFactory:
    def make(run: RunInfo) -> MetricSink:
        return getattr(importlib.import_module(f".{module}", __name__), name)(run)

    make.__qualname__ = f"{module}.{name}"
    return make


_SINKS: dict[str, SinkFactory] = {
    "console": _builtin("console", "ConsoleSink"),
    "jsonl": _builtin("jsonl", "JsonlSink"),
    "tensorboard": _builtin("tensorboard", "TensorBoardSink"),
    "wandb": _builtin("wandb", "WandbSink"),
}
# what a built-in sink imports, and the extra that installs it
_NEEDS: dict[str, tuple[str, str]] = {"wandb": ("wandb", "unilab-integration[wandb]")}


def register_sink(name: str, factory: SinkFactory) -> None:
    """Make `runner.logging.loggers` accept `name`: `factory(run_info)` (a class, typically) builds the
    sink on rank 0 when a session starts. Register from a module named in `runner.imports`, so
    that `unilab train` and every worker know it; a name taken by another factory is refused."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"a sink name is a non-empty string, not {name!r}")
    if not callable(factory):
        raise TypeError(f"sink '{name}': the factory must be callable, not {factory!r}")
    known = _SINKS.get(name)
    if known is not None and known is not factory:
        raise ValueError(f"sink '{name}' is already registered ({known.__qualname__})")
    _SINKS[name] = factory


def sink_names() -> list[str]:
    """The names `runner.logging.loggers` accepts, in registration order."""
    return list(_SINKS)


def check_sinks(names: Iterable[str]) -> None:
    """ValueError naming the known sinks for an unknown name; ImportError naming the extra for
    a built-in sink whose package is missing."""
    for name in names:
        if name not in _SINKS:
            raise ValueError(
                f"runner.logging.loggers: unknown logger '{name}'; loggers: {', '.join(_SINKS)} (more "
                "with unilab_integration.register_sink, from a module in runner.imports)"
            )
        module, extra = _NEEDS.get(name, (None, ""))
        if module is not None and importlib.util.find_spec(module) is None:
            raise ImportError(
                f"runner.logging.loggers has '{name}', which needs the {module} package: "
                f'pip install "{extra}"'
            )


def make_sink(name: str, run: RunInfo) -> MetricSink:
    """The sink `name` of `run` (checked by `check_sinks` first)."""
    check_sinks([name])
    return _SINKS[name](run)
