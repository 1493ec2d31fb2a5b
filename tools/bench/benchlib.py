"""What the benchmarks that drive `unilab_integration.train()` share: the monorepo's sources on
the path (this process's and the workers'), reading a run's `metrics.jsonl`, the curve point
of one metrics line, medians and throughput over the timed iterations, the phase medians of a
profiled run (`runner.profile`), and the JSON writer to `$OUT`.

Used by bench_ppo_e2e.py and bench_time_to_threshold.py (tools/tests test it directly).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BENCH_DIR = Path(__file__).resolve().parent
SRCS = [str(p) for p in sorted((ROOT / "packages").glob("*/src"))] + [
    str(ROOT / "integration" / "src")
]

__all__ = [
    "BENCH_DIR",
    "ROOT",
    "SRCS",
    "MetricsTail",
    "curve_point",
    "finish_curve",
    "median",
    "out_dir",
    "phase_medians",
    "read_metrics",
    "throughput",
    "use_sources",
    "write_json",
]


def use_sources(*extra: str | Path) -> str:
    """Put the monorepo's package sources (and `extra` folders) first on this process's
    `sys.path` and on `$PYTHONPATH`, which the launcher hands to every worker (so a module that
    `runner.imports` names, e.g. tools/bench/_go1_task.py, imports there). Returns it."""
    paths = [*SRCS, *(str(p) for p in extra)]
    for path in reversed(paths):
        if path not in sys.path:
            sys.path.insert(0, path)
    current = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, *(p for p in current if p not in paths)])
    return os.environ["PYTHONPATH"]


class MetricsTail:
    """Reads a run's `metrics.jsonl` (one JSON object per iteration, rank 0's global metrics)
    as it grows: `read()` returns the complete lines written since the last call."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._offset = 0
        self._partial = ""

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        with open(self.path) as f:
            f.seek(self._offset)
            chunk = f.read()
            self._offset = f.tell()
        *lines, self._partial = (self._partial + chunk).split("\n")
        return [json.loads(line) for line in lines if line.strip()]


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """Every line of a finished run's `metrics.jsonl` (FileNotFoundError naming it if absent)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no metrics.jsonl (is 'jsonl' in runner.logging.loggers?)")
    tail = MetricsTail(path)
    rows = tail.read()
    if tail._partial.strip():  # a last line without its newline
        rows.append(json.loads(tail._partial))
    return rows


def _num(line: dict[str, Any], key: str) -> float | None:
    v = line.get(key)
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def curve_point(line: dict[str, Any], wall_s: float | None) -> dict[str, Any]:
    """One metrics line as a curve point (`wall_s`: when it appeared, or None)."""
    return {
        "iteration": int(line["iteration"]),
        "wall_s": wall_s,
        "iteration_s": _num(line, "perf/iteration_s"),
        "env_steps": _num(line, "env_steps/global"),
        "mean_return": _num(line, "episode/return"),
        "mean_length": _num(line, "episode/length"),
        "episodes": _num(line, "episode/count"),
        "steps_per_s": _num(line, "perf/steps_per_s"),
        "curriculum_level": _num(line, "curriculum/level"),  # None without a curriculum
        # the rough tasks' terrain curriculum: the mean terrain level over all worlds
        "terrain_level": _num(line, "curriculum/terrain_levels/mean"),
        # the runner's own evaluation of the deterministic policy (runner.eval.interval)
        "eval_return": _num(line, "eval/return"),
        # per-term episode sums: where a plateau's return goes
        "terms": {
            k.removeprefix("episode_term/"): _num(line, k)
            for k in line
            if k.startswith("episode_term/")
        },
        # the learner's own metrics (action std, KL, learning rate, losses, temperature)
        "learner": {
            k.removeprefix("learner/"): _num(line, k)
            for k in line
            if k.startswith("learner/") or k in ("kl", "lr")
        },
    }


def finish_curve(points: list[dict[str, Any]]) -> None:
    """Add `train_s` (the running sum of iteration_s) and `time_s`: since the first iteration
    started (wall_s less its iteration_s), or train_s where the points have no wall_s."""
    if not points:
        return
    first = points[0]
    t0 = None if first["wall_s"] is None else first["wall_s"] - (first["iteration_s"] or 0.0)
    train = 0.0
    for p in points:
        train += p["iteration_s"] or 0.0
        p["train_s"] = train
        p["time_s"] = train if t0 is None or p["wall_s"] is None else p["wall_s"] - t0


def median(values: Iterable[float | None]) -> float | None:
    """Median of the values that are numbers (None if there are none)."""
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return statistics.median(xs) if xs else None


def throughput(rows: list[dict[str, Any]], warmup: int) -> dict[str, Any]:
    """Over the iterations after the first `warmup`: `env_steps_per_s` (median of
    perf/steps_per_s), `window_env_steps_per_s` (their env steps / the sum of their
    perf/iteration_s), `median_iteration_s`, `timed_iterations`."""
    if len(rows) <= warmup:
        raise ValueError(f"{len(rows)} iterations logged, none after the {warmup} of warm-up")
    timed = rows[warmup:]
    before = rows[warmup - 1]["env_steps/global"] if warmup else 0.0
    steps = timed[-1]["env_steps/global"] - before
    seconds = sum(r["perf/iteration_s"] for r in timed)
    return {
        "timed_iterations": len(timed),
        "env_steps_per_s": median(r["perf/steps_per_s"] for r in timed),
        "window_env_steps_per_s": steps / seconds,
        "median_iteration_s": median(r["perf/iteration_s"] for r in timed),
    }


def phase_medians(rows: list[dict[str, Any]], warmup: int) -> dict[str, float]:
    """{phase: median seconds} of `runner.profile`'s profile/<phase>_s after the warm-up, in
    the order logged with "other" last, then "total" (the median perf/iteration_s); ValueError
    if the run logged no profile keys."""
    timed = rows[warmup:]
    names = list(dict.fromkeys(k for r in timed for k in r if k.startswith("profile/")))
    names.sort(key=lambda k: k == "profile/other_s")  # stable: the phases in order, other last
    if not names:
        raise ValueError("no profile/<phase>_s metrics: was runner.profile=true?")
    out = {
        k.removeprefix("profile/").removesuffix("_s"): median(r.get(k) for r in timed)
        for k in names
    }
    out["total"] = median(r["perf/iteration_s"] for r in timed)
    return out


def out_dir() -> Path | None:
    """`$OUT`, the folder that results go to (None when it is not set)."""
    out = os.environ.get("OUT")
    return Path(out) if out else None


def write_json_file(path: Path, doc: dict[str, Any]) -> Path:
    """Write `doc` to `path` (indented; non-JSON values as text) through a `.tmp` sibling and
    a rename: a reader, or a machine that goes away mid-write, never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    os.replace(tmp, path)
    return path


def write_json(filename: str, doc: dict[str, Any]) -> Path | None:
    """Write `doc` to `$OUT/filename` (as `write_json_file`); None without $OUT."""
    out = out_dir()
    if out is None:
        return None
    return write_json_file(out / filename, doc)
