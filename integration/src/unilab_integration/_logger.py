"""Rank 0's training log: a tqdm progress bar with ETA, a compact table, TensorBoard, JSON lines.

Every value handed to `MetricLogger.log` is already a global aggregate (the runners reduce
across ranks first); the logger only presents it.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

__all__ = ["COLUMNS", "MetricLogger", "format_row"]

# (metric key, column title, width, format) of the printed table.
COLUMNS: tuple[tuple[str, str, int, str], ...] = (
    ("iteration", "iter", 6, "d"),
    ("env_steps/global", "steps(all)", 11, ".3g"),
    ("env_steps/per_rank", "steps(rank)", 11, ".3g"),
    ("perf/steps_per_s", "steps/s", 9, ".3g"),
    ("episode/return", "return", 9, ".4g"),
    ("episode/length", "length", 7, ".4g"),
    ("episode/count", "eps", 5, ".0f"),
    ("eval/return", "eval", 9, ".4g"),  # runner.eval_interval: the deterministic policy's return
    ("learner/surrogate", "surr", 9, ".3g"),
    ("learner/value", "vloss", 9, ".3g"),
    ("lr", "lr", 8, ".2e"),
    ("kl", "kl", 8, ".2e"),
    ("dist/collectives", "coll", 5, ".0f"),
    ("dist/bytes", "bytes", 8, ".3g"),
    ("eta_s", "eta(s)", 7, ".0f"),
)


def _cell(value: Any, width: int, fmt: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-".rjust(width)
    if fmt == "d":
        return str(int(value)).rjust(width)
    return format(float(value), fmt).rjust(width)


def format_header() -> str:
    return " ".join(title.rjust(width) for _, title, width, _ in COLUMNS)


def format_row(metrics: Mapping[str, Any]) -> str:
    """One table row of `metrics` (missing values print as '-')."""
    return " ".join(_cell(metrics.get(key), width, fmt) for key, _, width, fmt in COLUMNS)


class MetricLogger:
    """Progress bar + table on `stream`, TensorBoard events and metrics.jsonl in `run_dir`.

    `total` is the iteration budget when known (for the ETA, shown by the bar and in the
    table's `eta(s)` column). The tqdm bar is drawn only when `stream` is a terminal.
    Construct it on rank 0 only.
    """

    def __init__(
        self,
        run_dir: str | os.PathLike,
        *,
        total: int | None,
        initial: int = 0,
        progress: bool = True,
        tensorboard: bool = True,
        header_every: int = 20,
        stream: TextIO | None = None,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._stream = stream or sys.stdout
        self._rows = 0
        self._header_every = header_every
        self._jsonl = open(self.run_dir / "metrics.jsonl", "a")  # noqa: SIM115 (closed in close)
        self._writer = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(log_dir=str(self.run_dir / "tensorboard"))
        self._bar = None
        self._total = total
        self._initial = initial
        self._start = time.perf_counter()
        # a live bar needs a terminal; under a launcher (output piped to logs) the table's
        # eta column carries the same information
        if progress and getattr(self._stream, "isatty", lambda: False)():
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                initial=initial,
                unit="it",
                desc="train",
                file=self._stream,
                dynamic_ncols=True,
                leave=True,
            )

    def write(self, text: str) -> None:
        """Print a line without breaking the progress bar."""
        if self._bar is not None:
            self._bar.write(text, file=self._stream)
        else:
            print(text, file=self._stream, flush=True)

    def log(self, iteration: int, metrics: Mapping[str, Any]) -> None:
        """Record one iteration's global metrics (floats) everywhere."""
        metrics = {"iteration": iteration, **metrics}
        done = iteration - self._initial
        if self._total is not None and done > 0:
            per_iteration = (time.perf_counter() - self._start) / done
            metrics["eta_s"] = per_iteration * max(self._total - iteration, 0)
        if self._rows % self._header_every == 0:
            self.write(format_header())
        self.write(format_row(metrics))
        self._rows += 1
        self._jsonl.write(json.dumps({k: _jsonable(v) for k, v in metrics.items()}) + "\n")
        self._jsonl.flush()
        if self._writer is not None:
            step = int(metrics.get("env_steps/global", iteration))
            for key, value in metrics.items():
                if key != "iteration" and isinstance(value, int | float):
                    self._writer.add_scalar(key, float(value), global_step=step)
            self._writer.flush()
        if self._bar is not None:
            ret = metrics.get("episode/return")
            if ret is not None and not math.isnan(float(ret)):
                self._bar.set_postfix(ret=f"{float(ret):.4g}", refresh=False)
            self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        if self._writer is not None:
            self._writer.close()
        self._jsonl.close()


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
