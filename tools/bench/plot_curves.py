"""Plots from the benchmark JSONs: return vs wall-clock, throughput scaling, PPO phase profile.

    python3 tools/bench/plot_curves.py RESULTS... [--out docs/benchmarks] [--prefix ppo_]
        [--x time_s | env_steps]

RESULTS are JSON files or folders (every *.json inside, recursively) written by
  - tools/bench/bench_ppo_e2e.py (`ppo_e2e_<name>.json`: per GPU count the per-iteration curve of
    rank 0, throughput and profile; its older `--curve` files `ppo_e2e_<name>_curve.json`:
    curves only),
  - tools/bench/bench_mjlab.py (`mjlab_<name>.json`: rsl_rl's per-iteration steps/s and mean
    reward, with the wall-clock since launch),
  - tools/bench/bench_time_to_threshold.py (`ttt_<name>.json`: per-iteration return against
    wall-clock of a run trained through `unilab_integration.train`; one panel per algorithm and
    task, the threshold drawn dashed and the time it was reached marked; with
    `--eval-checkpoints` also the deterministic policy's curve and the time it reached it),
  - tools/bench/bench_fastsac.py (`fastsac*.json`: learner updates/s on 1 device and per
    process count, eager and captured; its weak-scaling rows go in `efficiency.png`),
  - tools/bench/bench_time_to_walk.py (`ttw_<name>.json`: every checkpoint's tracking metrics
    against wall-clock, MJLab's and UniLab's runs alike; `ttl_summary.json`: the rough tasks'
    mean terrain level against wall-clock and MJLab's reference level),
  - tools/bench/curriculum_ranks.py (`curriculum_ranks_<run>.json`: per checkpoint each rank's
    mean terrain level, of a run under `runner.curriculum_sync` local, global or rank0),
  - any other file of the form {"curves": {label: {"points": [{"time_s", "mean_return"}, ...]}}}
    (e.g. an off-policy trainer's curve).
Other JSONs are skipped with a note. `--x env_steps` plots the returns of the
time-to-threshold runs against env steps instead of wall-clock (the fair axis for runs that
shared a host and slowed each other; the other sources carry no env steps per point and are
skipped), and the time-to-walk checkpoints and the terrain levels against the env steps that
trained them (how much each side learns per sample, apart from its speed; a point without env
steps is left out). Writes, into `--out` (default $OUT, else docs/benchmarks):
  `<prefix>curves.png`   mean episode return vs wall-clock from the first training iteration
                         (setup and compilation excluded), one panel per source (the returns
                         of UniLab and MJLab are different reward functions: not comparable in
                         value, only in shape and time);
  `<prefix>scaling.png`  env-steps/s by GPU count, UniLab runs next to MJLab, with weak-scaling
                         efficiency;
  `<prefix>profile.png`  UniLab's profiled iteration split into phases (when profiled);
  `<prefix>tracking.png`  the time-to-walk runs: one row per task, one panel per metric
                         (linear-velocity error, yaw-rate error, time-limit fraction) against
                         seconds of training (or env steps), every run a line (MJLab's and
                         UniLab's);
  `<prefix>levels.png`    the rough tasks' mean terrain level against seconds of training (or
                         env steps), one
                         panel per task, every run a line, MJLab's reference level dotted;
  `<prefix>curriculum_ranks.png` each rank's mean terrain level against the iteration (or env
                         steps), one panel per run (local and global side by side);
  `<prefix>efficiency.png` weak-scaling efficiency by GPU count (PPO end to end:
                         rate(W) / (W x rate(1)); FastSAC learner with a fixed batch per rank:
                         updates/s(W) / updates/s(1)), the 97% target dashed.
Needs matplotlib (Agg backend; no display).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_time_to_walk as ttw

REFERENCE_S = 600.0  # bench_time_to_walk.py's --reference-s: MJLab's 10-minute policy

# bench_ppo_e2e.py's phases (runner.profile; env_physics and env_evaluate: its results when the
# env step was two phases), then those of its results before it drove train()
PHASES = (
    *("inference", "env_physics", "env_evaluate", "env", "storage", "returns", "update"),
    *("physics", "obs_reward", "norm_sync", "learning", "sync", "other"),
)


def load(paths: list[str]) -> list[tuple[str, dict]]:
    files: list[Path] = []
    for p in map(Path, paths):
        files += sorted(p.rglob("*.json")) if p.is_dir() else [p]
    out = []
    for f in files:
        with open(f) as fh:
            out.append((f.name, json.load(fh)))
    return out


def _rerun(label: str, seen: set[str], fname: str) -> str:
    """`label`, or for a rerun of a run already drawn under it (the same seed trained
    again) `label (file)`, so that neither line takes the other's place or name."""
    if label in seen:
        label = f"{label} ({fname.removesuffix('.json')})"
    seen.add(label)
    return label


def collect(
    docs: list[tuple[str, dict]],
    marks: dict | None = None,
    learner: list | None = None,
    x: str = "time_s",
    tracking: list | None = None,
    levels: list | None = None,
    ranks: list | None = None,
    trained: dict | None = None,
):
    """-> curves {panel: {label: [(x, ret)]}}, scaling [(source, gpus, sps)], profiles.

    `x`: "time_s" (every source) or "env_steps" (time-to-threshold runs only). `marks` (filled
    when given): {panel: [(threshold, reached x or None, label)]} from
    bench_time_to_threshold.py results. `learner` (filled when given): FastSAC learner
    [(source, gpus, updates/s)] from bench_fastsac.py, 1 device and weak-scaling rows.
    `tracking` (filled when given): the bench_time_to_walk.py runs, [(task, label, points)].
    `levels` (filled when given): bench_time_to_walk.py's terrain-level summaries, as written.
    `ranks` (filled when given): curriculum_ranks.py's per-run documents, as written.
    `trained` (filled when given): {tracking label: the run's `trained_s`} of those runs.
    """
    ranks = [] if ranks is None else ranks
    tracking = [] if tracking is None else tracking
    levels = [] if levels is None else levels
    learner = [] if learner is None else learner
    curves: dict[str, dict[str, list[tuple[float, float]]]] = {}
    scaling: list[tuple[str, int, float]] = []
    profiles: list[tuple[str, int, dict]] = []
    marks = {} if marks is None else marks
    seen: dict[str, set[str]] = defaultdict(set)  # the labels drawn so far, per group
    for fname, doc in docs:
        if doc.get("kind") == "terrain_levels":  # bench_time_to_walk levels
            levels.append(doc)
        elif doc.get("kind") == "curriculum_ranks":  # curriculum_ranks.py: per-rank levels
            ranks.append(doc)
        elif doc.get("kind") == "time_to_walk":  # bench_time_to_walk: checkpoints' tracking
            label = _rerun(f"{doc['label']}, seed {doc['seed']}", seen[doc["task"]], fname)
            tracking.append((doc["task"], label, doc["points"]))
            if trained is not None and doc.get("trained_s") is not None:
                trained[label] = doc["trained_s"]
        elif doc.get("kind") == "time_to_threshold":  # bench_time_to_threshold
            a = doc["args"]
            panel = f"UniLab {a['algo']} on {a['task']}"
            res = doc["result"]
            name = _rerun(a.get("name"), seen[panel], fname) if a.get("name") else None
            for key, c in doc["curves"].items():
                # the run's training return, and (--eval-checkpoints) its deterministic policy's
                det = "deterministic policy" in key
                label = name or key
                if det and a.get("name"):
                    label += ", deterministic policy"
                if det:
                    reached_x = (res.get("eval_reached") or {}).get(x)
                elif res.get("judged_by", "training return") == "training return":
                    reached_x = res.get(x) if res.get("reached") else None
                else:  # the run was judged by its evaluations: marked on their curve
                    reached_x = None
                pts = [
                    (p[x], p["mean_return"])
                    for p in c["points"]
                    if p.get("mean_return") is not None and p.get(x) is not None
                ]
                curves.setdefault(panel, {})[label] = pts
                marks.setdefault(panel, []).append((doc["threshold"], reached_x, label))
        elif x != "time_s":
            continue  # only the time-to-threshold runs record env steps per point
        elif (
            isinstance(doc.get("results"), list)
            and doc["results"]
            and isinstance(doc["results"][0], dict)
            and "ranks" in doc["results"][0]
        ):  # ppo_e2e
            name = _rerun(doc["args"].get("name", fname), seen["ppo_e2e"], fname)
            for r in doc["results"]:
                label = f"{name}, {r['gpus']} GPU"
                pts = [
                    (p["time_s"], p["mean_return"])
                    for p in r["ranks"][0]["curve"]
                    if p.get("mean_return") is not None
                ]
                curves.setdefault("UniLab PPO", {})[label] = pts
                if r.get("env_steps_per_s"):
                    scaling.append((f"UniLab {name}", r["gpus"], r["env_steps_per_s"]))
                if r.get("profile_median_s"):
                    profiles.append((name, r["gpus"], r["profile_median_s"]))
        elif "curves" in doc:  # curve-only files
            name = doc.get("args", {}).get("name", fname.removesuffix(".json"))
            panel = "UniLab PPO" if fname.startswith("ppo_e2e") else name
            for key, c in doc["curves"].items():
                label = f"{name}, {key} GPU" if key.isdigit() else f"{name}, {key}"
                pts = [
                    (p["time_s"], p["mean_return"])
                    for p in c["points"]
                    if p.get("mean_return") is not None
                ]
                curves.setdefault(panel, {})[label] = pts
        elif isinstance(doc.get("rows"), list) and "meta" in doc:  # bench_fastsac
            precision = "bf16" if doc["meta"].get("args", {}).get("bf16") else "fp32"
            for r in doc["rows"]:
                setting = r.get("setting", "")
                if setting == "1 device":
                    gpus = 1
                elif setting.endswith("devices, weak"):
                    gpus = int(setting.split()[0])
                else:
                    continue
                mode = "captured" if r.get("capture") else "eager"
                learner.append((f"FastSAC learner {precision} {mode}", gpus, r["updates_per_s"]))
        elif "runs" in doc and "task" in doc:  # bench_mjlab
            series = "MJLab + RSL-RL"
            if doc["task"] != "Mjlab-Velocity-Flat-Unitree-Go1":  # another task: its own series
                series += f" {doc['task'].removeprefix('Mjlab-Velocity-')}"
            series = _rerun(series, seen["mjlab"], fname)
            for r in doc["runs"]:
                label = f"{series.replace(' + RSL-RL', '')}, {r['gpus']} GPU, {r['num_envs']} envs"
                its = [it for it in r["iterations"] if it.get("wall_s") is not None]
                # wall_s counts from launch; start the clock at the first iteration's start
                t0 = its[0]["wall_s"] - its[0].get("iteration_s", 0.0) if its else 0.0
                pts = [
                    (it["wall_s"] - t0, it["mean_reward"])
                    for it in r["iterations"]
                    if it.get("mean_reward") is not None and it.get("wall_s") is not None
                ]
                curves.setdefault("MJLab + RSL-RL", {})[label] = pts
                sps = r.get("median_steps_per_s_after_warmup") or r.get("median_steps_per_s")
                if sps and r["num_envs"] == 4096:
                    scaling.append((series, r["gpus"], sps))
        else:
            print(f"plot_curves: skipping {fname} (not a benchmark result this script knows)")
    return curves, scaling, profiles


def _save(plt, fig, path: str) -> bool:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def within_reach(threshold: float, ys: list[float]) -> bool:
    """Whether a threshold line belongs on a panel whose curves span `ys`: no farther from them
    than their span (or their largest magnitude, if larger). A run trained to its cap
    (`--threshold 1e30 --keep-going`) has a threshold that no return reaches; drawn, it would
    squash the curves into one flat line."""
    if not ys:
        return False
    lo, hi = min(ys), max(ys)
    span = max(hi - lo, abs(hi), 1e-9)
    return lo - span <= threshold <= hi + span


def plot_curves(plt, curves, path: str, marks: dict | None = None, x: str = "time_s") -> bool:
    panels = {k: v for k, v in curves.items() if any(v.values())}
    if not panels:
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4), squeeze=False)
    for ax, (panel, lines) in zip(axes[0], panels.items(), strict=True):
        for label, pts in lines.items():
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label)
        panel_marks = (marks or {}).get(panel, [])
        ys = [p[1] for pts in lines.values() for p in pts]
        for threshold in sorted({m[0] for m in panel_marks}):
            if not within_reach(threshold, ys):
                continue
            reached = [(t, lab) for th, t, lab in panel_marks if th == threshold and t is not None]
            ax.axhline(threshold, color="gray", linestyle="--", linewidth=1)
            ax.annotate(
                f"threshold {threshold:.4g}" + ("" if reached else " (not reached)"),
                (0, threshold),
                textcoords="offset points",
                xytext=(4, 4),
                fontsize=8,
            )
            for i, (reached_x, label) in enumerate(reached):  # one text line each, stacked
                ax.axvline(reached_x, color="gray", linestyle=":", linewidth=1)
                at = f"{reached_x:.0f} s" if x == "time_s" else f"{reached_x / 1e6:.1f} M steps"
                ax.annotate(
                    f"{label}: reached at {at}",
                    (reached_x, threshold),
                    textcoords="offset points",
                    xytext=(4, -12 - 11 * i),
                    fontsize=8,
                )
        ax.set_title(panel)
        ax.set_xlabel(
            "wall-clock since the first iteration started (s)"
            if x == "time_s"
            else "env steps (all ranks)"
        )
        ax.set_ylabel("mean episode return")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _save(plt, fig, path)


TRACKING = (
    ("lin_vel_error", "linear-velocity error (m/s)"),
    ("yaw_rate_error", "yaw-rate error (rad/s)"),
    ("time_limit_fraction", "episodes reaching the time limit"),
)


def training_axis(x: str) -> tuple[str, float, str]:
    """(point key, divisor, axis label) of the tracking and level panels' x axis for `--x`."""
    if x == "env_steps":
        return "env_steps", 1e6, "env steps of training (millions)"
    return "time_s", 1.0, "seconds of training (from the first iteration)"


def on_axis(points: list[dict], key_x: str) -> list[dict]:
    """The points that have a value on the x axis `key_x` (an MJLab line may lack env steps)."""
    return [p for p in points if p.get(key_x) is not None]


def plot_tracking(plt, tracking, path: str, x: str = "time_s", trained: dict | None = None) -> bool:
    """One row per task, one panel per tracking metric; on the time axis MJLab's reference
    (the mean of its runs' last checkpoints before `REFERENCE_S`, as bench_time_to_walk.py's
    summary takes it: `trained` gives each run's seconds of training) as a dotted line."""
    key_x, scale, xlabel = training_axis(x)
    tasks = sorted({task for task, _, pts in tracking if pts})
    if not tasks:
        return False
    fig, axes = plt.subplots(len(tasks), 3, figsize=(21, 4 * len(tasks)), squeeze=False)
    # 20 colours: a robot's row holds more runs than the default cycle's 10
    colors = plt.get_cmap("tab20").colors
    for row, task in zip(axes, tasks, strict=True):
        runs = [(label, on_axis(pts, key_x)) for t, label, pts in tracking if t == task]
        runs = [(label, pts) for label, pts in runs if pts]
        mjlab = [
            {"points": pts, "trained_s": (trained or {}).get(label)}
            for label, pts in runs
            if label.startswith("MJLab")
        ]
        ref = ttw.reference(mjlab, REFERENCE_S) if mjlab and x == "time_s" else None
        for ax, (key, title) in zip(row, TRACKING, strict=True):
            for i, (label, pts) in enumerate(runs):
                ax.plot(
                    [p[key_x] / scale for p in pts],
                    [p[key] for p in pts],
                    "--" if label.startswith("MJLab") else "-",
                    color=colors[i % len(colors)],
                    marker="o",
                    markersize=3,
                    label=label,
                )
            if ref is not None:  # MJLab's 10-minute policy, the target of the comparison
                ax.axhline(ref[key], color="0.4", linestyle=":", linewidth=1.2)
                ax.annotate(
                    f"MJLab at {REFERENCE_S:.0f} s: {ref[key]:.3g}",
                    (0.01, ref[key]),
                    xycoords=("axes fraction", "data"),
                    fontsize=8,
                    va="bottom",
                )
            ax.set_title(f"{task}: {title}")
            ax.set_xlabel(xlabel)
            ax.grid(alpha=0.3)
        # one legend per robot, beside its row: the runs are the same in its three panels
        row[-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return _save(plt, fig, path)


def plot_levels(plt, levels, path: str, x: str = "time_s") -> bool:
    key_x, scale, xlabel = training_axis(x)
    panels = [(task, e) for doc in levels for task, e in doc["tasks"].items() if e["runs"]]
    if not panels:
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 4), squeeze=False)
    for ax, (task, entry) in zip(axes[0], panels, strict=True):
        for run in entry["runs"]:
            pts = on_axis(run["points"], key_x)
            ax.plot(
                [p[key_x] / scale for p in pts],
                [p["terrain_level"] for p in pts],
                "--" if run["side"] == "mjlab" else "-",
                label=f"{run['label']}, seed {run['seed']}",
            )
        ref = entry["reference"]
        if ref is not None:
            ax.axhline(ref["terrain_level"], color="gray", linestyle=":", linewidth=1)
            ax.annotate(
                f"MJLab at {ref['time_s']:.0f} s: {ref['terrain_level']:.3f}",
                (0, ref["terrain_level"]),
                textcoords="offset points",
                xytext=(4, 4),
                fontsize=8,
            )
        ax.set_title(f"{task}: mean terrain level")
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _save(plt, fig, path)


def plot_ranks(plt, docs, path: str, x: str = "time_s") -> bool:
    """curriculum_ranks.py's runs: each rank's mean terrain level per checkpoint, one panel per
    run, against the iteration (`--x env_steps`: the global env steps)."""
    docs = [d for d in docs if d["points"]]
    if not docs:
        return False
    key, scale, xlabel = ("env_steps", 1e6, "env steps (millions)")
    if x != "env_steps":
        key, scale, xlabel = ("iteration", 1.0, "iteration")
    fig, axes = plt.subplots(1, len(docs), figsize=(6 * len(docs), 4), squeeze=False, sharey=True)
    for ax, doc in zip(axes[0], docs, strict=True):
        xs = [p[key] / scale for p in doc["points"]]
        for r in range(max(len(p["ranks"]) for p in doc["points"])):  # a resume may change W
            ys = [p["ranks"][r]["mean"] if r < len(p["ranks"]) else math.nan for p in doc["points"]]
            style = "-" if r == 0 else "--"  # a rank that equals rank 0 shows over it
            ax.plot(xs, ys, style, marker="o", markersize=2, label=f"rank {r}")
        spread = max(p["spread"] for p in doc["points"])
        ax.set_title(
            f"{doc['run']}: {doc['sync']}, {doc['world_size']} ranks (max spread {spread:.3f})"
        )
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("mean terrain level of the rank's worlds")
    return _save(plt, fig, path)


def plot_scaling(plt, scaling, path: str) -> bool:
    if not scaling:
        return False
    sources = list(dict.fromkeys(s for s, _, _ in scaling))
    gpus = sorted({g for _, g, _ in scaling})
    value = {(s, g): v for s, g, v in scaling}
    width = 0.8 / len(sources)
    fig, ax = plt.subplots(figsize=(max(5, 2.5 * len(gpus) * len(sources) / 2), 4))
    for i, s in enumerate(sources):
        xs = [j + (i - (len(sources) - 1) / 2) * width for j in range(len(gpus))]
        ys = [value.get((s, g), math.nan) for g in gpus]
        bars = ax.bar(xs, ys, width, label=s)
        base = value.get((s, 1))
        for bar, g, y in zip(bars, gpus, ys, strict=True):
            if math.isnan(y):
                continue
            text = f"{y / 1e3:,.0f}k" if y >= 1e4 else f"{y:,.0f}"
            if base and g > 1:
                text += f"\n{y / (g * base):.0%}"
            ax.annotate(
                text, (bar.get_x() + bar.get_width() / 2, y), ha="center", va="bottom", fontsize=8
            )
    ax.set_xticks(range(len(gpus)), [f"{g} GPU" for g in gpus])
    ax.set_ylabel("env-steps/s (total)")
    ax.set_title("PPO end to end: env-steps/s, weak-scaling efficiency")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.margins(y=0.15)
    return _save(plt, fig, path)


def efficiencies(scaling, learner) -> dict[str, list[tuple[int, float]]]:
    """Weak-scaling efficiency per source and GPU count (sources measured on 1 GPU only).

    End to end (total env-steps/s): rate(W) / (W x rate(1)). Learner (updates/s with a fixed
    batch per rank, so W times the data per update): updates/s(W) / updates/s(1).
    """
    out: dict[str, list[tuple[int, float]]] = {}
    for rows, per_gpu in ((scaling, True), (learner, False)):
        value = {(s, g): v for s, g, v in rows}
        for s in dict.fromkeys(s for s, _, _ in rows):
            base = value.get((s, 1))
            if not base:
                continue
            points = sorted(
                (g, v / ((g if per_gpu else 1) * base)) for (k, g), v in value.items() if k == s
            )
            if len(points) > 1:
                out[s] = points
    return out


def plot_efficiency(plt, eff, path: str) -> bool:
    if not eff:
        return False
    gpus = sorted({g for pts in eff.values() for g, _ in pts})
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, (source, pts) in enumerate(eff.items()):
        style = ("-", "--", ":")[(i // 10) % 3]  # the color cycle repeats after 10 series
        xs, ys = [g for g, _ in pts], [100 * e for _, e in pts]
        ax.plot(xs, ys, marker="o", linestyle=style, label=source)
        g, e = pts[-1]
        ax.annotate(f"{e:.0%}", (g, 100 * e), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.axhline(97, color="gray", linestyle="--", linewidth=1, label="target 97%")
    ax.set_xticks(gpus, [str(g) for g in gpus])
    ax.set_xlabel("GPUs")
    ax.set_ylabel("weak-scaling efficiency (%)")
    ax.set_title("Weak scaling by GPU count")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return _save(plt, fig, path)


def plot_profile(plt, profiles, path: str) -> bool:
    if not profiles:
        return False
    fig, ax = plt.subplots(figsize=(10, 1.8 + 0.5 * len(profiles)))
    labels = [f"{n}, {g} GPU" for n, g, _ in profiles]
    left = [0.0] * len(profiles)
    present = {k for _, _, p in profiles for k in p}
    for phase in (k for k in PHASES if k in present):
        widths = [p.get(phase, 0.0) * 1e3 for _, _, p in profiles]
        ax.barh(labels, widths, left=left, label=phase)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_xlabel("ms per iteration (synchronized between phases)")
    ax.set_title("UniLab PPO iteration by phase (rank 0)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars
    return _save(plt, fig, path)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("--out", default=os.environ.get("OUT") or "docs/benchmarks")
    ap.add_argument("--prefix", default="")
    ap.add_argument("--x", choices=("time_s", "env_steps"), default="time_s")
    args = ap.parse_args(argv)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - environment dependent
        raise SystemExit(f"plot_curves needs matplotlib ({e}); pip install matplotlib") from e
    marks: dict = {}
    learner: list = []
    tracking: list = []
    trained: dict = {}
    levels: list = []
    ranks: list = []
    curves, scaling, profiles = collect(
        load(args.results), marks, learner, args.x, tracking, levels, ranks, trained
    )
    os.makedirs(args.out, exist_ok=True)
    made = []
    for kind, fn, data in (
        ("curves", lambda plt_, d, p: plot_curves(plt_, d, p, marks, args.x), curves),
        ("scaling", plot_scaling, scaling),
        ("profile", plot_profile, profiles),
        ("tracking", lambda plt_, d, p: plot_tracking(plt_, d, p, args.x, trained), tracking),
        ("levels", lambda plt_, d, p: plot_levels(plt_, d, p, args.x), levels),
        ("curriculum_ranks", lambda plt_, d, p: plot_ranks(plt_, d, p, args.x), ranks),
        ("efficiency", plot_efficiency, efficiencies(scaling, learner)),
    ):
        path = os.path.join(args.out, f"{args.prefix}{kind}.png")
        if fn(plt, data, path):
            made.append(path)
    print("\n".join(f"wrote {p}" for p in made) if made else "plot_curves: nothing to plot")


if __name__ == "__main__":
    main()
