"""The "console" sink: a compact table on rank 0's stdout and, on a terminal, a tqdm bar with ETA."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from . import RunInfo

__all__ = [
    "BASE_COLUMNS",
    "LEARNER_COLUMNS",
    "ConsoleSink",
    "format_header",
    "format_row",
    "table_columns",
]

Column = tuple[str, str, int, str]  # (metric key, column title, width, format)

BASE_COLUMNS: tuple[Column, ...] = (
    ("iteration", "iter", 6, "d"),
    ("env_steps/global", "steps(all)", 11, ".3g"),
    ("env_steps/per_rank", "steps(rank)", 11, ".3g"),
    ("perf/steps_per_s", "steps/s", 9, ".3g"),
    ("episode/return", "return", 9, ".4g"),
    ("episode/length", "length", 7, ".4g"),
    ("episode/count", "eps", 5, ".0f"),
    ("eval/return", "eval", 9, ".4g"),  # runner.eval.interval: the deterministic policy's return
    ("dist/collectives", "coll", 5, ".0f"),
    ("dist/bytes", "bytes", 8, ".3g"),
    ("eta_s", "eta(s)", 7, ".0f"),
)
# Each algorithm's own metrics: a column appears once its metric has been logged (PPO:
# surrogate, value loss, lr, kl; FastSAC: critic and actor loss, Q mean, temperature;
# Distillation: behavior loss), between `eval` and `coll`.
LEARNER_COLUMNS: tuple[Column, ...] = (
    ("learner/surrogate", "surr", 9, ".3g"),
    ("learner/value", "vloss", 9, ".3g"),
    ("learner/behavior", "behavior", 9, ".3g"),
    ("learner/critic_loss", "qloss", 9, ".3g"),
    ("learner/actor_loss", "aloss", 9, ".3g"),
    ("learner/q_mean", "q", 9, ".3g"),
    ("learner/alpha", "alpha", 8, ".2e"),
    ("lr", "lr", 8, ".2e"),
    ("kl", "kl", 8, ".2e"),
)
HEADER_EVERY = 20  # rows between repeated headers


def table_columns(learner_keys: Iterable[str] = ()) -> tuple[Column, ...]:
    """The table's columns with the learner columns of `learner_keys` (in their fixed order)."""
    keys = set(learner_keys)
    learner = tuple(c for c in LEARNER_COLUMNS if c[0] in keys)
    return BASE_COLUMNS[:8] + learner + BASE_COLUMNS[8:]


def _cell(value: Any, width: int, fmt: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-".rjust(width)
    if fmt == "d":
        return str(int(value)).rjust(width)
    return format(float(value), fmt).rjust(width)


def format_header(columns: tuple[Column, ...]) -> str:
    return " ".join(title.rjust(width) for _, title, width, _ in columns)


def format_row(metrics: Mapping[str, Any], columns: tuple[Column, ...]) -> str:
    """One table row of `metrics` (missing values print as '-')."""
    return " ".join(_cell(metrics.get(key), width, fmt) for key, _, width, fmt in columns)


class ConsoleSink:
    """The table on `run.stream`, a header every 20 rows and whenever a learner column
    appears (FastSAC's losses after its replay warm-up); a tqdm bar (iterations of
    `run.total`, the latest return) only when `run.progress` and the stream is a terminal:
    under a launcher (output piped to logs) the table's eta column says the same."""

    def __init__(self, run: RunInfo) -> None:
        self._stream = run.stream
        self._rows = 0
        self._learner_keys: set[str] = set()
        self._columns = table_columns()
        self._bar = None
        if run.progress and getattr(self._stream, "isatty", lambda: False)():
            from tqdm import tqdm

            self._bar = tqdm(
                total=run.total,
                initial=run.initial,
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
        seen = {key for key, *_ in LEARNER_COLUMNS if key in metrics} - self._learner_keys
        if seen:
            self._learner_keys |= seen
            self._columns = table_columns(self._learner_keys)
            self._rows = 0  # a new column: a new header
        if self._rows % HEADER_EVERY == 0:
            self.write(format_header(self._columns))
        self.write(format_row(metrics, self._columns))
        self._rows += 1
        if self._bar is not None:
            ret = metrics.get("episode/return")
            if ret is not None and not math.isnan(float(ret)):
                self._bar.set_postfix(ret=f"{float(ret):.4g}", refresh=False)
            self._bar.update(1)

    def checkpoint(self, iteration: int, path: str) -> None:
        """Nothing: the last line of `unilab train` names the final checkpoint."""

    def close(self, failed: bool) -> None:
        if self._bar is not None:
            self._bar.close()
