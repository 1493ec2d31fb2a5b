"""Per-rank terrain levels of a run's checkpoints, and what its curriculum sync cost.

    python3 tools/bench/curriculum_ranks.py RUN_DIR... [--out DIR]

The measurement of `runner.curriculum_sync` on a rough task over W ranks: `local` lets each
rank's levels drift apart, `global` keeps them identical at one all-reduce per iteration. The
runs come from the benchmark driver, which trains through `unilab_integration.train()` and
keeps every checkpoint, e.g.

    python3 tools/bench/bench_time_to_threshold.py --task go1-velocity-rough --algo ppo \\
        --gpus 0,1 --threshold 1e30 --keep-going --max-seconds 300 --save-interval 25 \\
        --run-dir /tmp/cs/runs --set runner.curriculum_sync=local --name go1rough_local_w2

RUN_DIR is a run folder (`DIR/NAME`, holding `checkpoints/` and `metrics.jsonl`), its
`checkpoints/` folder, or a folder of run folders (`/tmp/cs/runs`). The checkpoints stay on the
machine that trained (the driver copies only `metrics.jsonl` to `$OUT`): run this there.

Levels, from every `checkpoints/ckpt_<iteration>.pt`: a checkpoint holds one curriculum state
per rank (`ckpt["curriculum"][r]`, a `TerrainLevels.state_dict()`: `rows`, `levels` of its
worlds, ...), written after the iteration's sync. Per checkpoint: `iteration`, `env_steps`
(global), `train_s` (the sum of `perf/iteration_s` through it), `sync` and `world_size` (the
checkpoint's own), per rank the mean level and `hist` (the fraction of its worlds at each
level), and between the ranks `spread` (max |mean_r - mean_s|), `hist_distance` (the largest
total-variation distance between two ranks' histograms), `differ_fraction` (the fraction of
world slots whose level is not the same on every rank) and `identical` (every rank's level
vector equal); `logged_mean` is the iteration's `curriculum/terrain_levels/mean`
(count-weighted over ranks, read before the sync: under `global` it may differ from the
checkpoint's).

Cost, from `metrics.jsonl` (rank 0's, one line per iteration): the runner books the curriculum
sync's collectives to the phase "curriculum" (`dist/curriculum/collectives`,
`dist/curriculum/bytes`, logged from the first sync that runs one: absent under `local`, where
none runs), reported per iteration next to all collectives (`dist/collectives`, `dist/bytes`),
and times the sync (`perf/curriculum_sync_s`, outside `perf/iteration_s`: `global` waits there
for its all-reduce's result); `sync_s` is its mean per iteration, `sync_fraction` that over the
mean `perf/iteration_s`.

Writes `curriculum_ranks_<run>.json` per run to `--out` (default $OUT, else the current folder):
{"kind": "curriculum_ranks", "run", "path", "task", "sync", "world_size", "points": [...],
"collectives": {...} (None without metrics.jsonl), "notes": [...]}; prints each run's points,
then a table of the runs. plot_curves.py draws these files (`curriculum_ranks.png`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from itertools import combinations
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import out_dir, read_metrics, write_json_file

CKPT_GLOB = "ckpt_*.pt"
MEAN_KEY = "curriculum/terrain_levels/mean"
PHASE_KEYS = ("dist/curriculum/collectives", "dist/curriculum/bytes")
SYNC_KEY = "perf/curriculum_sync_s"
FIX = (
    "train with checkpoints kept (bench_time_to_threshold.py --save-interval N, which sets "
    "runner.checkpoints.keep=0) and run this tool where the run folder is"
)


# --- finding and loading ---------------------------------------------------------------------
def checkpoint_files(folder: Path) -> list[Path]:
    """`ckpt_<iteration>.pt` in `folder`, by iteration (`unilab_integration`'s
    `checkpoint_iterations` rule, here without torch: finding runs needs no stack)."""
    found = [p for p in folder.glob(CKPT_GLOB) if p.stem.removeprefix("ckpt_").isdigit()]
    return sorted(found, key=lambda p: int(p.stem.removeprefix("ckpt_")))


def find_runs(path: Path) -> list[Path]:
    """The run folders meant by `path`: itself, the run of its `checkpoints/` folder, or the
    run folders directly inside it (SystemExit naming the fix when there is none)."""
    if not path.is_dir():
        raise SystemExit(f"{path}: no such folder")
    if path.name == "checkpoints" and checkpoint_files(path):
        return [path.parent]
    if checkpoint_files(path / "checkpoints"):
        return [path]
    runs = sorted(p for p in path.iterdir() if p.is_dir() and checkpoint_files(p / "checkpoints"))
    if runs:
        return runs
    raise SystemExit(
        f"{path}: no checkpoints (no {path}/checkpoints/{CKPT_GLOB}, nor a run folder inside "
        f"with one): {FIX}"
    )


def load_checkpoint_file(path: Path) -> dict[str, Any]:
    """One UniLab checkpoint, read and validated by `unilab_integration`'s loader (on the CPU);
    SystemExit with its reason when it is not one this UniLab reads."""
    from unilab_integration import CheckpointError, load_checkpoint

    try:
        return load_checkpoint(path)
    except CheckpointError as e:
        raise SystemExit(str(e)) from None


def rank_levels(ckpt: dict[str, Any], where: Path) -> tuple[int, list[list[int]]]:
    """(levels per world slot, each rank's level vector) of a checkpoint; SystemExit when it
    holds no per-world curriculum (a flat task, or a run that predates per-rank states)."""
    states = ckpt.get("curriculum")
    task = ckpt.get("task", "?")
    if not isinstance(states, list) or not states:
        raise SystemExit(f"{where}: no per-rank curriculum states (task {task!r})")
    if any(not isinstance(s, dict) or "levels" not in s or "rows" not in s for s in states):
        held = "none" if all(s is None for s in states) else "one without per-world 'levels'"
        raise SystemExit(
            f"{where}: task {task!r} has no per-world curriculum (its ranks' curriculum states: "
            f"{held}); this tool measures the terrain levels of a rough task (go1-velocity-rough)"
        )
    rows = {int(s["rows"]) for s in states}
    if len(rows) != 1:
        raise SystemExit(f"{where}: the ranks' terrains differ in levels ({sorted(rows)})")
    return rows.pop(), [[int(v) for v in s["levels"]] for s in states]


def saved_levels(path: Path) -> dict[str, Any]:
    """What this tool reads of one checkpoint (the rest, models and env state, is dropped)."""
    ckpt = load_checkpoint_file(path)
    num_levels, levels = rank_levels(ckpt, path)
    return {
        "iteration": int(ckpt["iteration"]),
        "env_steps": float(ckpt["counters"]["env_steps_global"]),
        "world_size": int(ckpt["world_size"]),
        "task": ckpt.get("task"),
        "runner": ckpt["config"]["runner"],
        "num_levels": num_levels,
        "levels": levels,
    }


# --- the ranks' levels -------------------------------------------------------------------------
def histogram(levels: list[int], rows: int) -> list[float]:
    """The fraction of worlds at each level 0..rows-1."""
    n = max(len(levels), 1)
    return [levels.count(k) / n for k in range(rows)]


def compare_ranks(by_rank: list[list[int]], rows: int) -> dict[str, Any]:
    """Per rank its mean level and histogram; between ranks the spread of the means, the
    largest total-variation distance of the histograms, the fraction of slots that differ and
    whether every level vector is the same."""
    ranks = [
        {
            "rank": r,
            "worlds": len(lv),
            "mean": sum(lv) / max(len(lv), 1),
            "hist": histogram(lv, rows),
        }
        for r, lv in enumerate(by_rank)
    ]
    pairs = list(combinations(ranks, 2))
    slots = min(len(lv) for lv in by_rank)
    differ = sum(len({lv[i] for lv in by_rank}) > 1 for i in range(slots))
    return {
        "ranks": ranks,
        "spread": max((abs(a["mean"] - b["mean"]) for a, b in pairs), default=0.0),
        "hist_distance": max(
            (0.5 * sum(abs(x - y) for x, y in zip(a["hist"], b["hist"])) for a, b in pairs),
            default=0.0,
        ),
        "differ_fraction": differ / max(slots, 1),
        "identical": all(lv == by_rank[0] for lv in by_rank),
    }


# --- metrics.jsonl: cost ----------------------------------------------------------------------
def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def collective_cost(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The curriculum sync's collectives and bytes per iteration (0 where its keys are absent:
    no sync collective ran yet), all collectives, and the sync's seconds per iteration
    (`perf/curriculum_sync_s`) against the iteration's own (`perf/iteration_s`)."""

    def per_iteration(key: str) -> float | None:
        return _mean([float(r.get(key) or 0.0) for r in rows]) if rows else None

    coll, nbytes = per_iteration(PHASE_KEYS[0]), per_iteration(PHASE_KEYS[1])
    all_coll, all_bytes = per_iteration("dist/collectives"), per_iteration("dist/bytes")
    iteration_s = _mean([float(r["perf/iteration_s"]) for r in rows if "perf/iteration_s" in r])
    timed = [float(r[SYNC_KEY]) for r in rows if SYNC_KEY in r]
    sync_s = _mean(timed)
    return {
        "iterations": len(rows),
        "keys": [k for k in PHASE_KEYS if any(k in r for r in rows)],
        "iterations_with_curriculum_collectives": sum(
            1 for r in rows if (r.get(PHASE_KEYS[0]) or 0) > 0
        ),
        "curriculum_collectives_per_iteration": coll,
        "curriculum_bytes_per_iteration": nbytes,
        "collectives_per_iteration": all_coll,
        "bytes_per_iteration": all_bytes,
        "curriculum_share_of_collectives": coll / all_coll if all_coll else None,
        "curriculum_share_of_bytes": nbytes / all_bytes if all_bytes else None,
        "iteration_s": iteration_s,
        "sync_s": sync_s,
        "sync_s_median": statistics.median(timed) if timed else None,
        "sync_fraction": sync_s / iteration_s if sync_s is not None and iteration_s else None,
        "sync_timed_iterations": len(timed),
    }


# --- one run ---------------------------------------------------------------------------------
def analyze_run(run: Path) -> dict[str, Any]:
    """The `curriculum_ranks` document of one run folder (module docstring)."""
    files = checkpoint_files(run / "checkpoints")
    if not files:
        raise SystemExit(f"{run}: no checkpoints ({run}/checkpoints/{CKPT_GLOB}): {FIX}")
    notes: list[str] = []
    saved = [saved_levels(path) for path in files]
    metrics_path = run / "metrics.jsonl"
    lines: list[dict[str, Any]] = []
    if metrics_path.exists():
        lines = read_metrics(metrics_path)
    else:
        notes.append(f"no {metrics_path}: levels only, the curriculum sync's cost is not reported")
    by_iteration = {int(r["iteration"]): r for r in lines}
    train_s, total = {}, 0.0
    for r in lines:
        total += float(r.get("perf/iteration_s") or 0.0)
        train_s[int(r["iteration"])] = total
    points = []
    for c in saved:
        i = c["iteration"]
        logged = by_iteration.get(i, {}).get(MEAN_KEY)
        points.append(
            {
                "iteration": i,
                "env_steps": c["env_steps"],
                "train_s": train_s.get(i),
                "sync": c["runner"]["curriculum_sync"],
                "world_size": c["world_size"],
                "num_levels": c["num_levels"],
                "logged_mean": None if logged is None else float(logged),
                **compare_ranks(c["levels"], c["num_levels"]),
            }
        )
    cost = None
    if lines:
        cost = collective_cost(lines)
        if not cost["sync_timed_iterations"]:
            notes.append(f"no {SYNC_KEY} in metrics.jsonl (a run older than that metric)")
        if not cost["keys"] and points[-1]["sync"] != "local" and points[-1]["world_size"] > 1:
            notes.append(f"no {PHASE_KEYS[0]} in metrics.jsonl: the sync ran no collective")
    return {
        "kind": "curriculum_ranks",
        "run": run.name,
        "path": str(run),
        "task": saved[-1]["task"],
        "sync": points[-1]["sync"],
        "world_size": points[-1]["world_size"],
        "points": points,
        "collectives": cost,
        "notes": notes,
    }


# --- printing ---------------------------------------------------------------------------------
def _f(value: float | None, fmt: str, missing: str = "-") -> str:
    return missing if value is None else format(value, fmt)


def print_points(doc: dict[str, Any]) -> None:
    w = doc["world_size"]
    print(f"{doc['run']}: {doc['task']}, curriculum_sync {doc['sync']}, {w} rank(s)")
    means = " ".join(f"{'r' + str(r):>6}" for r in range(w))
    print(f"  {'iter':>6} {'train s':>8} {means} {'spread':>7} {'tv':>6} {'differ':>6} identical")
    for p in doc["points"]:
        per_rank = " ".join(f"{r['mean']:6.3f}" for r in p["ranks"])
        print(
            f"  {p['iteration']:>6} {_f(p['train_s'], '8.1f'):>8} {per_rank} {p['spread']:7.3f} "
            f"{p['hist_distance']:6.3f} {p['differ_fraction']:6.2f} {p['identical']}"
        )
    for note in doc["notes"]:
        print(f"  note: {note}")


def print_summary(docs: list[dict[str, Any]]) -> None:
    """One row per run."""
    print(
        f"{'run':<28} {'sync':<6} {'W':>2} {'ckpts':>5} {'last it':>7} {'max spread':>10} "
        f"{'always same':>11} {'curr coll/it':>12} {'bytes/it':>9} {'share':>6} "
        f"{'sync ms':>8} {'of iter':>7}"
    )
    for d in docs:
        c = d["collectives"] or {}
        print(
            f"{d['run'][:28]:<28} {d['sync']:<6} {d['world_size']:>2} {len(d['points']):>5} "
            f"{d['points'][-1]['iteration']:>7} {max(p['spread'] for p in d['points']):10.3f} "
            f"{all(p['identical'] for p in d['points'])!s:>11} "
            f"{_f(c.get('curriculum_collectives_per_iteration'), '12.2f'):>12} "
            f"{_f(c.get('curriculum_bytes_per_iteration'), '9.0f'):>9} "
            f"{_f(c.get('curriculum_share_of_collectives'), '6.1%'):>6} "
            f"{_f(_scaled(c.get('sync_s'), 1e3), '8.3f'):>8} "
            f"{_f(c.get('sync_fraction'), '7.2%'):>7}"
        )


def _scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", metavar="RUN_DIR")
    ap.add_argument("--out", default=None, help="folder of the JSONs (default $OUT, else .)")
    args = ap.parse_args(argv)
    runs = [run for path in args.runs for run in find_runs(Path(path))]
    names = [run.name for run in runs]
    if len(set(names)) != len(names):
        raise SystemExit(f"two runs share a folder name ({names}): each JSON is named by it")
    out = Path(args.out) if args.out else out_dir() or Path.cwd()
    docs = []
    for run in runs:
        doc = analyze_run(run)
        path = write_json_file(out / f"curriculum_ranks_{run.name}.json", doc)
        print_points(doc)
        print(f"  wrote {path}", flush=True)
        docs.append(doc)
    print_summary(docs)
    return docs


if __name__ == "__main__":
    main()
