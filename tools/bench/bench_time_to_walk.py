"""Time to a walking policy: every checkpoint of MJLab's and UniLab's runs through one evaluator.

    python3 tools/bench/bench_time_to_walk.py evaluate RUN.json... [--num-envs 4096] [--device cuda] [--noise-seed S]
    python3 tools/bench/bench_time_to_walk.py summary TTW.json... [--reference-s 600]
    python3 tools/bench/bench_time_to_walk.py levels RUN.json... [--reference-s 600]

The training runs come from the two scripts that already drive each side, on one GPU, with a
checkpoint about every minute of wall-clock (docs/benchmarks/mjlab-tasks.md has the commands):
  - MJLab 1.6.0 + RSL-RL, its own train script: `bench_mjlab.py --gpus 1 --iterations 100000
    --timeout 720 --seed S --save-interval 60 --name go1_s<S>` writes `mjlab_<name>.json` (rsl_rl's
    per-iteration log with the wall-clock of each line, and the `log_root` below which MJLab
    wrote `model_<iteration>.pt`); the timeout SIGKILLs the run, the checkpoints stay;
  - UniLab through `unilab_integration.train`: `bench_time_to_threshold.py --task
    go1-velocity-flat --algo ppo --preset default --threshold 1e30 --keep-going --max-seconds T
    --save-interval N --run-dir DIR --name NAME --set runner.seed=S` writes `ttt_<name>.json`
    (per-iteration points) and keeps every checkpoint in DIR/NAME/checkpoints.

`evaluate` loads each checkpoint (MJLab's converted by `unilab_integration`'s MJLab checkpoint
loader) and runs `unilab_integration.evaluate_tracking` on it: the deterministic policy on
`--num-envs` fresh episodes, one per world, over the task's full command range; mean
linear-velocity tracking error (m/s), yaw-rate error (rad/s), the fraction of episodes that
reach the time limit, and the mean return. Each checkpoint's point carries the wall-clock of the
training iteration that wrote it: `time_s` from the start of the first training iteration (setup
and compilation excluded, both sides alike) and `wall_s` from the launch. Writes
`$OUT/ttw_<name>.json` per run ({"kind": "time_to_walk", "side", "task", "label", "seed",
"source", "trained_s": the `time_s` of the run's last logged iteration, "checkpoints": how many
the run has, "points": [...]}), rewritten after every
checkpoint (an evaluation stopped midway keeps the points done), and prints a line per
checkpoint.

`summary` takes the MJLab runs of a task as the reference: the mean over its seeds of the
metrics of each run's last checkpoint at or before `--reference-s` seconds of training, over the
runs that trained at least that long (`trained_s`: the time of the run's last logged training
iteration, which may lie past its last checkpoint; a file without it counts its last
checkpoint's time); only when no run trained that long, over every run's last checkpoint; the
table says which runs it stands on. A UniLab
run reaches it at its first checkpoint that meets it: on every metric no worse than the
reference by more than the evaluator's noise (linear and yaw-rate errors at most the
reference's plus the noise, time-limit fraction at least the reference's minus the noise). The
noise is the spread of a metric between two evaluation seeds of one checkpoint (`evaluate
--noise-seed S` records it on each run's last checkpoint; a task's noise is the mean over the
runs that recorded one); with none recorded the comparison is strict. The table gives that
time per run (the target: at most a quarter of `--reference-s`). `plot_curves.py` draws the
`ttw_*.json` files (`tracking.png`: one row per robot, one panel per metric, against time_s).

`levels` is the rough tasks' measure: it reads the training runs themselves (no evaluation),
their mean terrain level per iteration (MJLab's `Curriculum/terrain_levels/mean`, UniLab's
`curriculum/terrain_levels/mean`) against `time_s`. The reference is the mean over MJLab's runs
of the level at each run's last iteration at or before `--reference-s`, over the runs that
trained that long (only when none did, over every run's last iteration; the table says which
runs it stands on and when). A run reaches it at its first iteration,
from its lowest level on, whose level is at least the reference: the levels start spread over
the first rows and fall before the policy walks, so the start itself would trivially reach a
low reference. Writes `$OUT/ttl_summary.json` ({"kind": "terrain_levels", ...}, with every
run's curve), which plot_curves.py draws as `levels.png`.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_mjlab import training_start
from benchlib import write_json, write_json_file

ROOT = Path(__file__).resolve().parents[2]
for _src in reversed(
    [str(p) for p in sorted((ROOT / "packages").glob("*/src"))]
    + [str(ROOT / "integration" / "src")]
):
    if _src not in sys.path:
        sys.path.insert(0, _src)

# MJLab's task ids and UniLab's names for the same tasks
MJLAB_TASKS = {
    "Mjlab-Velocity-Flat-Unitree-Go1": "go1-velocity-flat",
    "Mjlab-Velocity-Flat-Unitree-G1": "g1-velocity-flat",
    "Mjlab-Velocity-Rough-Unitree-Go1": "go1-velocity-rough",
    "Mjlab-Velocity-Rough-Unitree-G1": "g1-velocity-rough",
}
METRICS = ("lin_vel_error", "yaw_rate_error", "time_limit_fraction")
_MODEL = re.compile(r"model_(\d+)\.pt$")
_CKPT = re.compile(r"ckpt_(\d+)\.pt$")


def _mjlab_clock(doc: dict) -> tuple[dict[int, dict], float]:
    """A bench_mjlab.py run's timed iteration lines by iteration, and when the first iteration
    started (its line's wall_s less its iteration_s)."""
    run = doc["runs"][0]
    by_it = {it["iteration"]: it for it in run["iterations"] if it.get("wall_s") is not None}
    if not by_it:
        raise SystemExit(f"{doc['task']}: the MJLab run logged no iteration")
    return by_it, training_start(list(by_it.values()))


def trained_s(doc: dict) -> float:
    """How long a bench_mjlab.py or bench_time_to_threshold.py run trained: the `time_s` of its
    last logged iteration (its last checkpoint may lie before it)."""
    if doc.get("kind") == "time_to_threshold":
        return _training_curve(doc)["points"][-1]["time_s"]
    by_it, t0 = _mjlab_clock(doc)
    return max(it["wall_s"] for it in by_it.values()) - t0


def mjlab_checkpoints(doc: dict) -> tuple[str, int | None, list[dict]]:
    """(UniLab task, seed, [{path, iteration, wall_s, time_s, env_steps}]) of a bench_mjlab.py run.

    Iteration i's line arrives when the iteration ends, and rsl_rl saves `model_<i>.pt` right
    after logging it, so the checkpoint's times are those of the line; the first iteration
    started its own `iteration_s` before its line."""
    run = doc["runs"][0]
    task = MJLAB_TASKS[doc["task"]]
    by_it, t0 = _mjlab_clock(doc)
    points = []
    for path in glob.glob(os.path.join(run["log_root"], "**", "model_*.pt"), recursive=True):
        it = int(_MODEL.search(path).group(1))
        rec = by_it.get(it)
        if rec is None:  # written after the last parsed line (the final save): no time for it
            continue
        points.append(
            {
                "path": path,
                "iteration": it,
                "wall_s": rec["wall_s"],
                "time_s": rec["wall_s"] - t0,
                "env_steps": rec.get("total_steps"),
            }
        )
    seed = doc.get("args", {}).get("seed")
    return task, seed, sorted(points, key=lambda p: p["iteration"])


def _training_curve(doc: dict) -> dict:
    """A bench_time_to_threshold.py run's training curve (not its deterministic evaluations)."""
    (curve,) = [c for label, c in doc["curves"].items() if "deterministic" not in label][:1]
    return curve


# `--set` keys that every run of a comparison sets alike: not part of a run's label (the
# random episode start is labelled from the run's config, where a task default may set it)
_COMMON_SETS = ("runner.seed", "runner.matmul_precision", "runner.random_episode_start")


def unilab_label(doc: dict) -> str:
    """A bench_time_to_threshold.py run's label: algorithm and preset, then what the run set
    apart from them (an env count given with `--num-envs`, `--set` keys other than the seed and
    the matmul precision), so that variants of one preset are drawn and summarized apart; and
    "random episode start" where its config has `runner.random_episode_start` (the MJLab
    tasks' default; runs made before the setting existed started every world at 0)."""
    args = doc["args"]
    extra = [f"{args['num_envs']} envs"] if args.get("num_envs") else []
    extra += [s for s in args.get("set") or [] if s.split("=", 1)[0] not in _COMMON_SETS]
    if doc.get("config", {}).get("runner", {}).get("random_episode_start"):
        extra.append("random episode start")
    label = f"UniLab {args['algo']} ({args.get('preset', 'default')})"
    return f"{label}, {', '.join(extra)}" if extra else label


def unilab_checkpoints(doc: dict) -> tuple[str, int | None, list[dict]]:
    """The same for a bench_time_to_threshold.py run (its checkpoints kept in the run folder)."""
    args = doc["args"]
    if not args.get("run_dir"):
        raise SystemExit(f"{args['name']}: the run had no --run-dir, its checkpoints are gone")
    curve = _training_curve(doc)
    by_it = {p["iteration"]: p for p in curve["points"]}
    folder = Path(args["run_dir"]) / args["name"] / "checkpoints"
    points = []
    for path in folder.glob("ckpt_*.pt"):
        it = int(_CKPT.search(path.name).group(1))
        rec = by_it.get(it)
        if rec is None:
            continue
        points.append(
            {
                "path": str(path),
                "iteration": it,
                "wall_s": rec["wall_s"],
                "time_s": rec["time_s"],
                "env_steps": rec["env_steps"],
            }
        )
    seed = doc["config"]["runner"]["seed"]
    return doc["config"]["env"]["task"], seed, sorted(points, key=lambda p: p["iteration"])


def evaluate_run(path: str, args) -> dict:
    from unilab_integration import evaluate_tracking, load_policy_checkpoint, quiet_warp

    quiet_warp()
    with open(path) as f:
        doc = json.load(f)
    if doc.get("kind") == "time_to_threshold":
        side, (task, seed, checkpoints) = "unilab", unilab_checkpoints(doc)
        label = unilab_label(doc)
    elif "runs" in doc and doc.get("task") in MJLAB_TASKS:
        side, (task, seed, checkpoints) = "mjlab", mjlab_checkpoints(doc)
        label = "MJLab + RSL-RL"
    else:
        raise SystemExit(f"{path}: neither a bench_mjlab.py nor a bench_time_to_threshold.py run")
    print(f"{path}: {label}, {task}, seed {seed}, {len(checkpoints)} checkpoints", flush=True)
    name = Path(path).stem.removeprefix("mjlab_").removeprefix("ttt_")
    points: list[dict] = []
    out = {
        "kind": "time_to_walk",
        "side": side,
        "task": task,
        "label": label,
        "seed": seed,
        "name": name,
        "source": os.path.basename(path),
        "trained_s": trained_s(doc),
        "evaluator": {"num_envs": args.num_envs, "seed": args.seed, "device": args.device},
        "checkpoints": len(checkpoints),
        "points": points,
    }
    dest = Path(os.environ.get("OUT") or ".") / f"ttw_{name}.json"
    write_json_file(dest, out)  # then after every checkpoint: an interrupted run keeps its points
    for c in checkpoints:
        t = time.perf_counter()
        ckpt = load_policy_checkpoint(c["path"], task=task if side == "mjlab" else None)
        r = evaluate_tracking(ckpt, num_envs=args.num_envs, seed=args.seed, device=args.device)
        point = {**c, **{k: getattr(r, k) for k in (*METRICS, "mean_return", "episodes")}}
        point["eval_s"] = time.perf_counter() - t
        points.append(point)
        print(
            f"  it {c['iteration']:>6}  {c['time_s']:7.1f} s  lin {r.lin_vel_error:.4f} m/s  "
            f"yaw {r.yaw_rate_error:.4f} rad/s  time-limit {r.time_limit_fraction:.3f}  "
            f"({point['eval_s']:.1f} s)",
            flush=True,
        )
        write_json_file(dest, out)
    if args.noise_seed is not None and checkpoints:
        out["noise"] = evaluator_noise(checkpoints[-1], points[-1], task, side, args)
        write_json_file(dest, out)
    return out


def evaluator_noise(checkpoint: dict, point: dict, task: str, side: str, args) -> dict:
    """The evaluator's noise on one checkpoint: the spread of each metric between the run's
    evaluation (`--seed`) and a second one with `--noise-seed` (fresh episodes, same policy)."""
    from unilab_integration import evaluate_tracking, load_policy_checkpoint

    ckpt = load_policy_checkpoint(checkpoint["path"], task=task if side == "mjlab" else None)
    r = evaluate_tracking(ckpt, num_envs=args.num_envs, seed=args.noise_seed, device=args.device)
    noise = {k: abs(getattr(r, k) - point[k]) for k in METRICS}
    print(
        f"  evaluator noise at it {checkpoint['iteration']} (seeds {args.seed}, "
        f"{args.noise_seed}): lin {noise['lin_vel_error']:.4f} yaw "
        f"{noise['yaw_rate_error']:.4f} time-limit {noise['time_limit_fraction']:.4f}",
        flush=True,
    )
    return {"iteration": checkpoint["iteration"], "seeds": [args.seed, args.noise_seed], **noise}


def reference(runs: list[dict], at_s: float, keys: tuple[str, ...] = METRICS) -> dict | None:
    """Mean over MJLab's runs of `keys` at each run's last point at or before `at_s` seconds of
    training (`time_s`: the mean time of the points taken). Only runs that trained at least
    `at_s` count (`trained_s`, or without it the last point's `time_s`); when none did, every
    run's last point does and `short` says so. `left_out`: the shorter runs not counted."""
    full = [r for r in runs if r["points"] and _trained(r) >= at_s]
    picks = []
    for run in full or runs:
        before = [p for p in run["points"] if p["time_s"] <= at_s]
        if before:
            picks.append(before[-1])
    if not picks:
        return None
    ref = {k: statistics.fmean(p[k] for p in picks) for k in keys}
    ref["time_s"] = statistics.fmean(p["time_s"] for p in picks)
    ref["runs"] = len(picks)
    ref["short"] = not full
    ref["left_out"] = len(runs) - len(full) if full else 0
    return ref


def _trained(run: dict) -> float:
    """A time-to-walk run's training time: `trained_s`, or in a file without it (or a level
    curve) its last point's time."""
    return run.get("trained_s") or run["points"][-1]["time_s"]


def _reference_runs(ref: dict) -> str:
    """How many runs a reference stands on, and which were left out or fell short."""
    text = _runs(ref["runs"])
    if ref.get("left_out"):
        text += f"; {_runs(ref['left_out'])} that trained less left out"
    if ref.get("short"):
        text += "; none trained that long: their last points"
    return text


def reaches(point: dict, ref: dict, noise: dict | None = None) -> bool:
    """`point` meets `ref`: on every metric no worse than the reference by more than the
    evaluator's noise (`noise`: the spread per metric; None: none, the strict comparison)."""
    tol = noise or {}
    return (
        point["lin_vel_error"] <= ref["lin_vel_error"] + tol.get("lin_vel_error", 0.0)
        and point["yaw_rate_error"] <= ref["yaw_rate_error"] + tol.get("yaw_rate_error", 0.0)
        and point["time_limit_fraction"]
        >= ref["time_limit_fraction"] - tol.get("time_limit_fraction", 0.0)
    )


def time_to_reference(run: dict, ref: dict, noise: dict | None = None) -> float | None:
    for p in run["points"]:
        if reaches(p, ref, noise):
            return p["time_s"]
    return None


def task_noise(runs: list[dict]) -> dict | None:
    """The evaluator's noise of a task: per metric, the mean spread over the runs that recorded
    one (`evaluate --noise-seed`); None when none did."""
    spreads = [r["noise"] for r in runs if r.get("noise")]
    if not spreads:
        return None
    out = {k: statistics.fmean(n[k] for n in spreads) for k in METRICS}
    out["runs"] = len(spreads)
    return out


def summary(runs: list[dict], at_s: float) -> dict:
    """Per task: the MJLab reference and each run's time to it. When an MJLab run itself does
    not meet the reference (its seeds disagree, as G1's do), `seed_references` also holds each
    MJLab seed's own point at `at_s` (`meets_mean`: whether it meets the mean) and `runs[i]`
    `time_to_seed_s` each run's time to each seed's point, so a run can be compared against
    the better seed as well."""
    out: dict = {}
    for task in sorted({r["task"] for r in runs}):
        mine = [r for r in runs if r["task"] == task]
        mjlab = [r for r in mine if r["side"] == "mjlab"]
        ref = reference(mjlab, at_s)
        noise = task_noise(mine)
        seeds = []
        if ref is not None and len(mjlab) > 1:
            for r in mjlab:
                own = reference([r], at_s)
                if own is not None:
                    own["seed"] = r["seed"]
                    own["meets_mean"] = reaches(own, ref, noise)
                    seeds.append(own)
            if all(s["meets_mean"] for s in seeds):
                seeds = []
        rows = []
        for r in mine:
            last = r["points"][-1] if r["points"] else None
            row = {
                "label": r["label"],
                "seed": r["seed"],
                "side": r["side"],
                "checkpoints": len(r["points"]),
                "last": None if last is None else {k: last[k] for k in (*METRICS, "time_s")},
                "time_to_reference_s": (None if ref is None else time_to_reference(r, ref, noise)),
            }
            if seeds:
                row["time_to_seed_s"] = {
                    str(s["seed"]): time_to_reference(r, s, noise) for s in seeds
                }
            rows.append(row)
        out[task] = {"reference": ref, "reference_at_s": at_s, "noise": noise, "runs": rows}
        if seeds:
            out[task]["seed_references"] = seeds
    return out


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def print_summary(table: dict) -> None:
    for task, entry in table.items():
        ref = entry["reference"]
        print(f"\n{task}")
        if ref is None:
            print(f"  no MJLab run with a checkpoint before {entry['reference_at_s']:.0f} s")
        else:
            print(
                f"  MJLab reference ({_reference_runs(ref)}, checkpoints near "
                f"{ref['time_s']:.0f} s): lin {ref['lin_vel_error']:.4f} m/s, yaw "
                f"{ref['yaw_rate_error']:.4f} rad/s, time-limit {ref['time_limit_fraction']:.3f}"
            )
        noise = entry.get("noise")
        if noise is None:
            print("  no evaluator noise recorded (evaluate --noise-seed): no worse on every metric")
        else:
            print(
                f"  meets: within the evaluator's noise ({_runs(noise['runs'])}): lin "
                f"{noise['lin_vel_error']:.4f} yaw {noise['yaw_rate_error']:.4f} time-limit "
                f"{noise['time_limit_fraction']:.4f}"
            )
        seeds = entry.get("seed_references", [])
        for s in seeds:
            print(
                f"  MJLab seed {s['seed']} alone (checkpoint at {s['time_s']:.0f} s): lin "
                f"{s['lin_vel_error']:.4f} yaw {s['yaw_rate_error']:.4f} time-limit "
                f"{s['time_limit_fraction']:.3f}; "
                f"{'meets' if s['meets_mean'] else 'does not meet'} the mean"
            )
        for row in entry["runs"]:
            t = row["time_to_reference_s"]
            last = row["last"] or {}
            per_seed = "".join(
                f"; seed {k}'s point {'not reached' if v is None else f'at {v:.1f} s'}"
                for k, v in row.get("time_to_seed_s", {}).items()
            )
            print(
                f"  {row['label']:<28} seed {row['seed']}: "
                f"{'not reached' if t is None else f'reached at {t:6.1f} s'}{per_seed}; last checkpoint "
                f"{last.get('time_s', math.nan):.0f} s: lin {last.get('lin_vel_error', math.nan):.4f}"
                f" yaw {last.get('yaw_rate_error', math.nan):.4f}"
                f" time-limit {last.get('time_limit_fraction', math.nan):.3f}"
            )


def level_curve(path: str, doc: dict) -> dict:
    """A training run's mean terrain level per iteration: {side, task, label, seed, source,
    points: [{iteration, time_s, wall_s, env_steps, terrain_level}]}."""
    if doc.get("kind") == "time_to_threshold":
        curve = _training_curve(doc)
        side, task, seed = "unilab", doc["config"]["env"]["task"], doc["config"]["runner"]["seed"]
        label = unilab_label(doc)
        rows = [
            {k: p.get(k) for k in ("iteration", "time_s", "wall_s", "env_steps", "terrain_level")}
            for p in curve["points"]
        ]
    elif "runs" in doc and doc.get("task") in MJLAB_TASKS:
        by_it, t0 = _mjlab_clock(doc)
        side, task, seed = "mjlab", MJLAB_TASKS[doc["task"]], doc["args"].get("seed")
        label = "MJLab + RSL-RL"
        rows = [
            {
                "iteration": i,
                "time_s": it["wall_s"] - t0,
                "wall_s": it["wall_s"],
                "env_steps": it.get("total_steps"),
                "terrain_level": it.get("terrain_level"),
            }
            for i, it in sorted(by_it.items())
        ]
    else:
        raise SystemExit(f"{path}: neither a bench_mjlab.py nor a bench_time_to_threshold.py run")
    points = [r for r in rows if r["terrain_level"] is not None and r["time_s"] is not None]
    if not points:
        raise SystemExit(f"{path}: no terrain level in the run ({task} has no terrain curriculum?)")
    return {
        "side": side,
        "task": task,
        "label": label,
        "seed": seed,
        "source": os.path.basename(path),
        "points": points,
    }


def time_to_level(run: dict, level: float) -> float | None:
    """The first time at which the run's mean level is at least `level`, counted from the run's
    lowest point on: the levels start spread over the first rows and fall while the policy
    cannot yet walk far, so the start would trivially "reach" a low reference."""
    pts = run["points"]
    low = min(range(len(pts)), key=lambda i: pts[i]["terrain_level"])
    for p in pts[low:]:
        if p["terrain_level"] >= level:
            return p["time_s"]
    return None


def level_summary(runs: list[dict], at_s: float) -> dict:
    """Per task: MJLab's mean level at `at_s` (over its seeds) and each run's time to it."""
    out: dict = {"kind": "terrain_levels", "reference_at_s": at_s, "tasks": {}}
    for task in sorted({r["task"] for r in runs}):
        mine = [r for r in runs if r["task"] == task]
        ref = reference([r for r in mine if r["side"] == "mjlab"], at_s, ("terrain_level",))
        rows = []
        for r in mine:
            last = r["points"][-1]
            rows.append(
                {
                    **{k: r[k] for k in ("label", "seed", "side", "source")},
                    "last": {k: last[k] for k in ("time_s", "env_steps", "terrain_level")},
                    "time_to_reference_s": None
                    if ref is None
                    else time_to_level(r, ref["terrain_level"]),
                    "points": r["points"],
                }
            )
        out["tasks"][task] = {"reference": ref, "runs": rows}
    return out


def print_level_summary(table: dict) -> None:
    for task, entry in table["tasks"].items():
        ref = entry["reference"]
        print(f"\n{task}: mean terrain level")
        if ref is None:
            print("  no MJLab run")
        else:
            print(
                f"  MJLab reference ({_reference_runs(ref)}, at {ref['time_s']:.0f} s of "
                f"training): {ref['terrain_level']:.4f}"
            )
        for row in entry["runs"]:
            t, last = row["time_to_reference_s"], row["last"]
            print(
                f"  {row['label']:<28} seed {row['seed']}: "
                f"{'not reached' if t is None else f'reached at {t:6.1f} s'}; at its end "
                f"({last['time_s']:.0f} s, {last['env_steps'] or math.nan:.3g} env steps) "
                f"{last['terrain_level']:.4f}"
            )


def _read(path: str) -> dict:
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise SystemExit(f"{path}: no such file (give the JSON a benchmark run wrote)") from None
    except json.JSONDecodeError as e:
        raise SystemExit(f"{path}: not JSON ({e}); was the run's file cut short?") from None


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command")
    ev = sub.add_parser("evaluate", help="evaluate every checkpoint of training runs")
    ev.add_argument("runs", nargs="+", help="mjlab_<name>.json / ttt_<name>.json files")
    ev.add_argument("--num-envs", type=int, default=4096)
    ev.add_argument("--seed", type=int, default=12345)
    ev.add_argument("--device", default="cuda")
    ev.add_argument(
        "--noise-seed",
        type=int,
        default=None,
        help="also evaluate each run's last checkpoint with this seed: the evaluator's noise",
    )
    su = sub.add_parser("summary", help="MJLab's reference and each run's time to it")
    su.add_argument("files", nargs="+", help="ttw_<name>.json files")
    su.add_argument("--reference-s", type=float, default=600.0)
    lv = sub.add_parser("levels", help="mean terrain level against wall-clock, and the reference")
    lv.add_argument("runs", nargs="+", help="mjlab_<name>.json / ttt_<name>.json files")
    lv.add_argument("--reference-s", type=float, default=600.0)
    args = ap.parse_args(argv)
    if args.command == "levels":
        runs = [level_curve(p, _read(p)) for p in args.runs]
        table = level_summary(runs, args.reference_s)
        print_level_summary(table)
        write_json("ttl_summary.json", table)
    elif args.command == "evaluate":
        runs = [evaluate_run(p, args) for p in args.runs]
        print_summary(summary(runs, 600.0))
    elif args.command == "summary":
        table = summary([_read(p) for p in args.files], args.reference_s)
        print_summary(table)
        write_json("ttw_summary.json", table)
    else:
        ap.print_help()


if __name__ == "__main__":
    main()
