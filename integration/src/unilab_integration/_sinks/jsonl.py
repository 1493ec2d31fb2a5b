"""The "jsonl" sink: RUN/metrics.jsonl, one JSON object per iteration (appended on resume).

A resumed session first marks the rows an earlier session logged after the resumed checkpoint
(`"superseded": true`: those iterations are run again), so that the rows without the mark are
the run's one history: `[r for r in rows if not r.get("superseded")]`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import RunInfo

__all__ = ["JsonlSink"]


class JsonlSink:
    """Every metric of every iteration, flushed per line; non-finite values become null."""

    def __init__(self, run: RunInfo) -> None:
        run.run_dir.mkdir(parents=True, exist_ok=True)
        path = run.run_dir / "metrics.jsonl"
        if run.initial > 0:
            supersede_rows(path, after=run.initial)
        self._file = open(path, "a")  # noqa: SIM115 (closed in close)

    def log(self, iteration: int, metrics: Mapping[str, Any]) -> None:
        self._file.write(json.dumps({k: _jsonable(v) for k, v in metrics.items()}) + "\n")
        self._file.flush()

    def checkpoint(self, iteration: int, path: str) -> None:
        """Nothing: the checkpoints folder and its `latest` pointer say it."""

    def close(self, failed: bool) -> None:
        self._file.close()


def supersede_rows(path: Path, after: int) -> int:
    """Mark the rows of `path` past iteration `after` (not marked yet) `"superseded": true`,
    rewriting the file atomically; returns how many were marked."""
    if not path.is_file():
        return 0
    lines, marked = [], 0
    for line in path.read_text().splitlines():
        row = json.loads(line) if line.strip() else None
        if isinstance(row, dict) and row.get("iteration", 0) > after and not row.get("superseded"):
            row["superseded"] = True
            line = json.dumps(row)
            marked += 1
        lines.append(line)
    if marked:
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        tmp.write_text("".join(f"{line}\n" for line in lines))
        os.replace(tmp, path)
    return marked


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
