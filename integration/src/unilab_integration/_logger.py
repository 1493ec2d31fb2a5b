"""Rank 0's training log: one global metrics dict per iteration, fanned out to the sinks of
`runner.logging.loggers` (`_sinks`: console table and bar, metrics.jsonl, TensorBoard, W&B, or a
registered one).

Every value handed to `MetricLogger.log` is already a global aggregate (the runners reduce
across ranks first); the logger adds `iteration` and the ETA and passes it on.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from ._config import DEFAULT_LOGGERS
from ._sinks import MetricSink, RunInfo, check_sinks, make_sink
from ._sinks.console import ConsoleSink

__all__ = ["MetricLogger"]


class MetricLogger:
    """The sinks named by `sinks` (default: console, jsonl, tensorboard) for the run in
    `run_dir`; construct it on rank 0 only.

    `total` is the iteration budget when known (the console bar, and the ETA `eta_s` when `eta`:
    False where `total` is only a cap, e.g. `--until-solved`'s, so the end is not known),
    `initial` the iteration this session starts from (`initial_env_steps` the global
    env steps there), `config` the session's
    `TrainConfig` (the W&B run's config), `progress` whether the console may draw a bar (on a
    terminal only), `stream` rank 0's stdout. A sink that fails to start closes the ones
    started before it.
    """

    def __init__(
        self,
        run_dir: str | os.PathLike,
        *,
        total: int | None,
        initial: int = 0,
        initial_env_steps: int = 0,
        sinks: Sequence[str] = DEFAULT_LOGGERS,
        config: Any = None,
        progress: bool = True,
        stream: TextIO | None = None,
        eta: bool = True,
    ) -> None:
        check_sinks(sinks)
        self.run = RunInfo(
            run_dir=Path(run_dir),
            config=config,
            total=total,
            initial=initial,
            initial_env_steps=initial_env_steps,
            progress=progress,
            stream=stream or sys.stdout,
        )
        self.run.run_dir.mkdir(parents=True, exist_ok=True)
        self.sinks: dict[str, MetricSink] = {}
        try:
            for name in sinks:
                self.sinks[name] = make_sink(name, self.run)
        except BaseException:
            self.close(failed=True)
            raise
        self.eta = eta
        self._first: tuple[int, float] | None = None  # (iteration, time) of the first log

    def write(self, text: str) -> None:
        """Print a line on rank 0's stdout (through the console's bar when there is one)."""
        console = next((s for s in self.sinks.values() if isinstance(s, ConsoleSink)), None)
        if console is not None:
            console.write(text)
        else:
            print(text, file=self.run.stream, flush=True)

    def log(self, iteration: int, metrics: Mapping[str, Any]) -> None:
        """Hand one iteration's global metrics (floats), with `iteration` and `eta_s`, to
        every sink."""
        metrics = {"iteration": iteration, **metrics}
        now = time.perf_counter()
        if self._first is None:
            # the rate starts after the first iteration, which also compiles and captures
            self._first = (iteration, now)
        elif self.eta and self.run.total is not None and iteration > self._first[0]:
            per_iteration = (now - self._first[1]) / (iteration - self._first[0])
            metrics["eta_s"] = per_iteration * max(self.run.total - iteration, 0)
        for sink in self.sinks.values():
            sink.log(iteration, metrics)

    def checkpoint(self, iteration: int, path: str) -> None:
        """Tell every sink that the checkpoint of `iteration` is at `path`."""
        for sink in self.sinks.values():
            sink.checkpoint(iteration, path)

    def close(self, failed: bool = False) -> None:
        """Close every sink (each one, even when another's close raises; the first error is
        raised after)."""
        error: BaseException | None = None
        for sink in self.sinks.values():
            try:
                sink.close(failed)
            except BaseException as e:
                error = error or e
        self.sinks = {}
        if error is not None:
            raise error
