"""PPO end to end with `unilab train`'s own trainer on 1 and W GPUs: env-steps/s, scaling, phases.

    python3 tools/bench/bench_ppo_e2e.py                       # quadruped-velocity, 4096 envs/GPU
    python3 tools/bench/bench_ppo_e2e.py --robot go1 --profile # MJLab's Go1 MJCF (see below)
    python3 tools/bench/bench_ppo_e2e.py --gpus 1,2 --iterations 25 --warmup 3
    python3 tools/bench/bench_ppo_e2e.py --quick               # CPU, tiny, 1 and 2 gloo ranks

The run is what a user trains: `unilab_integration.make_config(task, "ppo", preset=--preset)`
(the task's defaults: for quadruped-velocity 4096 envs per rank, 24 steps per env, actor and
critic 512-256-128 ELU with observation normalization, 5 epochs x 4 mini-batches, adaptive KL),
then the flags below and `--set KEY=VALUE` as `apply_overrides`, then `unilab_integration.
train()`, which launches W workers through the product's launcher (rank r on GPU r, NCCL;
`--quick`: CPU workers with gloo). For each GPU count W in `--gpus` one run of `--warmup` +
`--iterations` iterations; its `metrics.jsonl` (rank 0, one line per iteration) gives:

  - env-steps/s: the median of `perf/steps_per_s` (global env steps / rank 0's iteration time)
    over the iterations after the warm-up; window: their env steps / the sum of their
    `perf/iteration_s` (logging and checkpoints, between iterations, are in neither);
  - weak-scaling efficiency(W) = env-steps/s(W) / (W * env-steps/s(1));
  - `--profile`: one more run per W with `runner.profile=true` (`--warmup` +
    `--profile-iters` iterations): every phase synchronized (docs/integration.md,
    "Profiling"): inference, env (the env step), storage, returns, update, sync (the
    collectives, W > 1) and other; the table shows each phase's median after the warm-up,
    rank 0's. Synchronizing serializes the GPU, so the profiled iteration is longer than an
    unprofiled one. The env step's parts are torch profiler ranges (`unilab/env_physics`, ...).

Flags: `--num-envs` (per GPU), `--steps` (runner.num_steps_per_env), `--preset default|rsl_rl`,
`--ppo-capture none|auto|cuda_graph` (algo.capture; default: the config's own, `auto`),
`--matmul-precision` (runner.matmul_precision; default `high`, TF32, with --robot go1 as
MJLab's training script sets it, else the config's `highest`), `--seed` (runner.seed),
`--set` (any other key, e.g. `--set algo.capture_rollout=false`). The network, epochs and
mini-batches are the task's defaults (`--set algo.actor.hidden=[256,128]` changes them).

`--robot go1`: UniLab's quadruped velocity task on MJLab 1.6.0's Go1 MJCF (`_go1_task.py`, a
user task that the workers import through `runner.imports`; `--mjcf PATH` to go1.xml, default
the one of the MJLab in /tmp/site-mjlab, else of an importable mjlab or Menagerie) with MJLab's
actuators, default pose, 70 degree tilt limit; `--mjlab-physics` (default on) keeps MJLab's
solver options and FULL_COLLISION geoms, njmax `--njmax` 300 and nconmax `--nconmax` 48.

Writes `$OUT/ppo_e2e_<name>.json` after every run: {"kind": "ppo_e2e", "args", "config" (the
last GPU count's run), "results": [{"gpus", "env_steps_per_iteration", "env_steps_per_s",
"window_env_steps_per_s", "median_iteration_s", "timed_iterations", "startup" (rank 0's
system line: devices, versions, what runs in CUDA graphs), "ranks": [{"rank": 0, "curve":
[point per iteration: iteration, time_s (sum of iteration_s so far), env_steps, mean_return,
...]}], with --profile "profile_median_s" {phase: s}}], "weak_scaling_efficiency"}, and copies
each run's metrics.jsonl and config.json to `$OUT/ppo_e2e_<name>/W<k>[_profile]/`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib

benchlib.use_sources(benchlib.BENCH_DIR)  # the workers import _go1_task from tools/bench

QUICK = dict(num_envs=16, steps=4, iterations=2, warmup=1, profile_iters=1, gpus="1,2")
QUICK_SET = ("algo.actor.hidden=[32,32]", "algo.critic.hidden=[32,32]")
# the flags that set one config key each (when given)
FLAG_KEYS = {
    "steps": "runner.num_steps_per_env",
    "matmul_precision": "runner.matmul_precision",
    "ppo_capture": "algo.capture",
}


def compose(args, world: int, profile: bool, run_root: Path):
    """The TrainConfig of one run (make_config + apply_overrides) and its overrides."""
    import unilab_integration as ui

    cfg = ui.make_config(args.task, "ppo", preset=args.preset)
    name = f"W{world}" + ("_profile" if profile else "")
    iterations = args.warmup + (args.profile_iters if profile else args.iterations)
    overrides = [
        f"launch.cpu_workers={world}"
        if args.device == "cpu"
        else f'launch.gpus="{",".join(str(r) for r in range(world))}"',
        f"runner.iterations={iterations}",
        f"runner.checkpoints.interval={iterations}",  # the one checkpoint at the end
        f"runner.seed={args.seed}",
        f"runner.logging.log_dir={json.dumps(str(run_root))}",
        f"runner.logging.run_name={name}",
        "runner.logging.progress=false",
        'runner.logging.loggers=["console","jsonl"]',
    ]
    if args.robot == "go1":
        from _go1_task import GO1_TASK

        overrides += [
            f"env.task={GO1_TASK}",
            'runner.imports=["_go1_task"]',
            f"env.kwargs.mjcf={json.dumps(str(args.mjcf))}",
            f"env.kwargs.njmax={args.njmax}",
            f"env.kwargs.nconmax={args.nconmax}",
            f"env.kwargs.mjlab_physics={str(args.mjlab_physics).lower()}",
        ]
    if args.num_envs is not None:
        overrides += [f"env.num_envs={args.num_envs}", "env.scope=per-rank"]
    overrides += [
        f"{key}={getattr(args, flag)}"
        for flag, key in FLAG_KEYS.items()
        if getattr(args, flag) is not None
    ]
    if profile:
        overrides.append("runner.profile=true")
    overrides += [*(QUICK_SET if args.quick else ()), *args.set]
    return ui.apply_overrides(cfg, overrides), overrides


def startup_line(run_dir: Path) -> str | None:
    """Rank 0's system line (devices, versions, what runs in CUDA graphs) from the run's logs."""
    for path in sorted((run_dir / "logs").rglob("*")):
        if path.is_file():
            for line in path.read_text(errors="replace").splitlines():
                if "system: " in line:
                    return line.split("system: ", 1)[1]
    return None


def run_once(args, world: int, profile: bool, run_root: Path) -> tuple[dict, list[dict]]:
    """One `train()` run; returns (its summary, its metrics lines)."""
    import unilab_integration as ui

    cfg, overrides = compose(args, world, profile, run_root)
    what = "profiled " if profile else ""
    print(f"=== {what}{world} rank(s) on {args.device}: {cfg.env.task} ===", flush=True)
    t = time.perf_counter()
    result = ui.train(cfg)
    run_dir = Path(result["run_dir"])
    rows = benchlib.read_metrics(run_dir / "metrics.jsonl")
    print(f"=== done in {time.perf_counter() - t:.1f} s ({len(rows)} iterations) ===", flush=True)
    out = benchlib.out_dir()
    if out is not None:  # the run's own record next to the summary
        dest = out / f"ppo_e2e_{args.name}" / run_dir.name
        dest.mkdir(parents=True, exist_ok=True)
        for src in ("metrics.jsonl", "config.json"):
            shutil.copy(run_dir / src, dest / src)
    summary = {
        "config": cfg.to_dict(),
        "overrides": overrides,
        "run_dir": str(run_dir),
        "startup": startup_line(run_dir),
        "env_steps_per_iteration": cfg.env.per_rank(world) * world * cfg.runner.num_steps_per_env,
    }
    return summary, rows


def run_gpu_count(args, world: int, run_root: Path) -> tuple[dict, dict]:
    """The unprofiled run (and with --profile the profiled one) of W ranks, summarized; and
    the unprofiled run's config."""
    summary, rows = run_once(args, world, False, run_root)
    points = [benchlib.curve_point(r, None) for r in rows]
    benchlib.finish_curve(points)
    entry = {
        "gpus": world,
        "env_steps_per_iteration": summary["env_steps_per_iteration"],
        **benchlib.throughput(rows, args.warmup),
        "startup": summary["startup"],
        "run_dir": summary["run_dir"],
        "overrides": summary["overrides"],
        "ranks": [{"rank": 0, "curve": points}],
    }
    if args.profile:
        prof, prof_rows = run_once(args, world, True, run_root)
        entry["profile_median_s"] = benchlib.phase_medians(prof_rows, args.warmup)
        entry["profile_run_dir"] = prof["run_dir"]
    return entry, summary["config"]


def efficiency(results: list[dict]) -> dict[str, float]:
    """Weak-scaling efficiency per GPU count against the W=1 run (empty without one)."""
    base = next((r for r in results if r["gpus"] == 1), None)
    if not base or not base["env_steps_per_s"]:
        return {}
    rate = base["env_steps_per_s"]
    return {str(r["gpus"]): r["env_steps_per_s"] / (r["gpus"] * rate) for r in results}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="CPU, tiny sizes, gloo, profiled")
    p.add_argument("--task", default="quadruped-velocity")
    p.add_argument("--robot", choices=("default", "go1"), default="default")
    p.add_argument("--mjcf", default=None, help="go1.xml of mjlab (with --robot go1)")
    p.add_argument("--mjlab-physics", default=True, action=argparse.BooleanOptionalAction)
    p.add_argument("--njmax", type=int, default=300, help="go1 constraint rows per world")
    p.add_argument("--nconmax", type=int, default=48, help="go1 contacts per world")
    p.add_argument("--num-envs", type=int, default=None, help="per GPU (default: the task's)")
    p.add_argument("--steps", type=int, default=None, help="steps per env per iteration")
    p.add_argument("--preset", choices=("default", "rsl_rl"), default="default")
    p.add_argument("--ppo-capture", choices=("none", "auto", "cuda_graph"), default=None)
    p.add_argument("--matmul-precision", choices=("highest", "high", "medium"), default=None)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--gpus", default=None, help="GPU counts, e.g. 1,2 (default: 1,2 if 2 GPUs)")
    p.add_argument("--iterations", type=int, default=25, help="timed iterations")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--profile", action="store_true", help="one more, profiled, run per W")
    p.add_argument("--profile-iters", type=int, default=5, help="timed profiled iterations")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--name", default=None, help="output name (default: task or robot)")
    p.add_argument("--run-dir", default=None, help="parent of the runs (default: a tmp dir)")
    args = p.parse_args(argv)
    import torch

    args.device = "cuda" if torch.cuda.is_available() and not args.quick else "cpu"
    if args.quick:  # tiny sizes, unless given explicitly
        for key, value in QUICK.items():
            if getattr(args, key) == p.get_default(key):
                setattr(args, key, value)
        args.profile = True
    if args.gpus is None:
        args.gpus = "1,2" if torch.cuda.device_count() >= 2 else "1"
    args.gpus = [int(x) for x in str(args.gpus).split(",")]
    if min(args.gpus) < 1:
        p.error("--gpus must be positive")
    if args.device == "cuda" and max(args.gpus) > torch.cuda.device_count():
        p.error(f"--gpus {args.gpus}: only {torch.cuda.device_count()} CUDA device(s) visible")
    if args.robot == "go1" and args.task != "quadruped-velocity":
        p.error("--robot go1 needs --task quadruped-velocity")
    if args.matmul_precision is None and args.robot == "go1":
        args.matmul_precision = "high"  # MJLab's training script turns TF32 on
    if args.warmup < 1:
        p.error("--warmup must be >= 1 (the first iteration compiles and captures)")
    if args.iterations < 1 or args.profile_iters < 1:
        p.error("--iterations and --profile-iters must be >= 1")
    args.name = args.name or (args.robot if args.robot != "default" else args.task)
    return args


def print_table(results: list[dict], args) -> None:
    eff = efficiency(results)
    first = results[0]
    print(
        f"\nPPO end to end ({args.name}): {first['env_steps_per_iteration'] // first['gpus']} "
        "env steps per iteration per rank"
    )
    print(f"system: {first['startup']}")
    print(f"{'GPUs':>4} {'env-steps/s':>12} {'window':>12} {'s/iter':>8} {'weak eff.':>9}")
    for r in results:
        e = eff.get(str(r["gpus"]))
        print(
            f"{r['gpus']:>4} {r['env_steps_per_s']:>12,.0f} {r['window_env_steps_per_s']:>12,.0f}"
            f" {r['median_iteration_s']:>8.3f} {'-' if e is None else f'{e:.1%}':>9}"
        )
    prof = [r for r in results if "profile_median_s" in r]
    if not prof:
        return
    phases = list(dict.fromkeys(k for r in prof for k in r["profile_median_s"]))
    phases.sort(key=lambda k: (k == "other") + 2 * (k == "total"))  # stable: the rest first
    print(f"\nprofiled iteration, ms (rank 0, median of {args.profile_iters}; synchronized)")
    print(f"{'phase':<13}" + "".join(f"{'W=' + str(r['gpus']):>10}" for r in prof))
    for k in phases:
        row = [r["profile_median_s"].get(k) for r in prof]
        print(
            f"{k:<13}" + "".join("-".rjust(10) if v is None else f"{v * 1e3:>10.1f}" for v in row)
        )


def main(argv=None) -> None:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="unilab_e2e_") as workdir:
        if args.robot == "go1":
            from _go1_task import find_go1_xml

            args.mjcf = args.mjcf or find_go1_xml()
            print(f"go1 MJCF: {args.mjcf}", flush=True)
        run_root = Path(args.run_dir or workdir) / "runs"
        results: list[dict] = []
        for world in args.gpus:
            entry, config = run_gpu_count(args, world, run_root)
            results.append(entry)
            doc = {
                "kind": "ppo_e2e",
                "args": vars(args),
                "config": config,
                "results": results,
                "weak_scaling_efficiency": efficiency(results),
            }
            benchlib.write_json(f"ppo_e2e_{args.name}.json", doc)
        print_table(results, args)


if __name__ == "__main__":
    main()
