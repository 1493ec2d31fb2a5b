"""The "jsonl" sink: RUN/metrics.jsonl, one JSON object per iteration (appended on resume)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from . import RunInfo

__all__ = ["JsonlSink"]


class JsonlSink:
    """Every metric of every iteration, flushed per line; non-finite values become null."""

    def __init__(self, run: RunInfo) -> None:
        run.run_dir.mkdir(parents=True, exist_ok=True)
        self._file = open(run.run_dir / "metrics.jsonl", "a")  # noqa: SIM115 (closed in close)

    def log(self, iteration: int, metrics: Mapping[str, Any]) -> None:
        self._file.write(json.dumps({k: _jsonable(v) for k, v in metrics.items()}) + "\n")
        self._file.flush()

    def checkpoint(self, iteration: int, path: str) -> None:
        """Nothing: the checkpoints folder and its `latest` pointer say it."""

    def close(self, failed: bool) -> None:
        self._file.close()


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
