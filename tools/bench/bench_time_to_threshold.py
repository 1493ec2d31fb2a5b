"""Wall-clock time and env steps to a return threshold, trained through UniLab's own API.

    python3 tools/bench/bench_time_to_threshold.py [--task humanoid-velocity] [--algo fastsac]
        [--preset default] [--gpus 0 | --cpu-workers N] [--num-envs N] [--threshold R]
        [--patience 2] [--max-seconds 540] [--max-iterations 100000] [--keep-going]
        [--set key.path=value ...] [--name NAME] [--run-dir DIR] [--quick]
        [--save-interval N] [--eval-episodes E [--eval-envs N] [--eval-seed S]
        [--eval-checkpoints]]

The run is composed exactly as `unilab train` does it: `unilab_integration.make_config(task,
algo, preset=...)`, then `apply_overrides` with the flags above and `--set`, saved with
`save_config`; a child process (its own session) calls `unilab_integration.train(load_config(
...))`, which launches the workers. The parent follows the run's `metrics.jsonl` (rank 0, one
line per iteration, global metrics: `iteration`, `env_steps/global`, `episode/return`,
`episode/count`, `perf/iteration_s`, ...) and stamps every line with the wall-clock since the
launch when it appears (polled every 0.1 s).

Threshold: `--threshold`, default the task's `success_threshold` (`unilab_envs.make_task(task)
.spec.success_threshold`). Reached = the global mean return of the episodes that ended in an
iteration is >= the threshold for `--patience` consecutive iterations; the time and env steps
reported are those of the first of them. With `--set runner.eval.interval=K` the runner's own
evaluations of the deterministic policy (`eval/return`, every K iterations) are judged
instead, over `--patience` consecutive evaluations, as the runner's `until_solved` does.
With the task's own threshold the run stops itself (`runner.until_solved`,
`runner.solved_patience=--patience`); with another threshold, or at `--max-seconds` since the
launch, the parent stops the run (SIGINT to its process group, then SIGKILL after 30 s).
`--keep-going` trains on to the cap (a longer curve).

Reported times: `wall_s` since launch (process start, env build, kernel compilation and graph
capture included); `time_s` since the first iteration started (wall_s of the first line less
its `perf/iteration_s`; what plot_curves.py plots); `train_s` the sum of `perf/iteration_s`
(iterations only, no logging or checkpoints).

Output: prints a short table last; with $OUT set writes `$OUT/ttt_<name>.json` ({"args",
"config", "threshold", "result", "curves": {label: {"points": [{iteration, wall_s, time_s,
train_s, env_steps, mean_return, mean_length, episodes, steps_per_s, curriculum_level,
terrain_level, terms: {term: episode sum}, learner: {metric: value}}]}}}) and copies the run's `metrics.jsonl` and
`config.json` to `$OUT/ttt_<name>/`.

Evaluation (`--eval-episodes E`): after the run, the last checkpoint's deterministic policy
(the action mean, as `unilab play` runs it) plays E episodes in `--eval-envs` worlds
(default min(E, 4096)) at the curriculum level it was trained at; `result.eval` holds its
mean return, whether that reaches the threshold, and each reward term's mean episode sum.
Training returns are the exploring policy's; the evaluation tells how much of a gap to the
threshold is exploration noise. A run stopped at the wall-clock cap writes no checkpoint of
its own: give `--save-interval N` so that one at most N iterations old exists.
`--eval-checkpoints` evaluates every checkpoint instead (`result.eval_curve`, each point with
the wall_s / time_s / train_s of its training iteration, also plotted as a second curve) and
applies the threshold rule to it (`result.eval_reached`): the deterministic policy's time and
env steps to the threshold, at the checkpoints' granularity. The evaluations run after the
training (each checkpoint is loaded into a fresh env), so they cost the run nothing.

Defaults: humanoid-velocity + fastsac on GPU 0 (or one CPU worker without CUDA). The PPO
quadruped run: `--task quadruped-velocity --algo ppo`. `--quick`: cartpole-balance + ppo on 2
CPU workers, capped at 150 s (a check of the script, not a measurement).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import MetricsTail, curve_point, finish_curve, use_sources, write_json

use_sources()  # the child's train() and its workers import the monorepo's sources


def _child_train(config_path: str) -> None:
    """Run in the child process: train the saved config through the product's API."""
    import unilab_integration as ui

    try:
        result = ui.train(ui.load_config(config_path))
    except KeyboardInterrupt as e:  # the parent's stop (cap or threshold): a line, no traceback
        print(f"TTT_STOPPED {e}", flush=True)
        raise SystemExit(130) from None
    print("TTT_RESULT " + json.dumps(result, default=str), flush=True)


def compose(args):
    """The TrainConfig of this benchmark (make_config + apply_overrides) and its run dir."""
    import unilab_integration as ui

    cfg = ui.make_config(args.task, args.algo, preset=args.preset)
    overrides = []
    if args.cpu_workers is not None:
        overrides.append(f"launch.cpu_workers={args.cpu_workers}")
    elif args.gpus is not None:
        overrides.append(f"launch.gpus={json.dumps(str(args.gpus))}")
    if args.num_envs is not None:
        overrides.append(f"env.num_envs={args.num_envs}")
    run_dir = Path(args.run_dir or tempfile.mkdtemp(prefix="unilab-ttt-")) / args.name
    if run_dir.exists():
        shutil.rmtree(run_dir)  # metrics.jsonl is appended to: start clean
    overrides += [
        f"runner.iterations={args.max_iterations}",
        f"runner.logging.log_dir={json.dumps(str(run_dir.parent))}",
        f"runner.logging.run_name={json.dumps(run_dir.name)}",
        "runner.logging.progress=false",
        'runner.logging.loggers=["console","jsonl"]',  # the parent follows metrics.jsonl
        # one checkpoint at the end of a run that ends itself; --save-interval for runs that the
        # wall-clock cap stops (a stopped run writes none), e.g. to evaluate them afterwards
        f"runner.checkpoints.interval={args.save_interval or args.max_iterations}",
        "runner.checkpoints.keep=0",  # --eval-checkpoints evaluates every one of them
    ]
    own = task_threshold(args.task)
    threshold = own if args.threshold is None else args.threshold
    if threshold is None:
        raise SystemExit(f"task {args.task!r} has no success_threshold: give --threshold")
    if not args.keep_going and args.threshold is None:
        overrides += ["runner.until_solved=true", f"runner.solved_patience={args.patience}"]
    overrides += list(args.set)
    cfg = ui.apply_overrides(cfg, overrides)
    ui.validate(cfg)
    return cfg, run_dir, float(threshold), overrides


def task_threshold(task: str) -> float | None:
    import unilab_envs

    value = unilab_envs.make_task(task).spec.success_threshold
    return None if value is None else float(value)


def reach_fields(point: dict | None) -> dict | None:
    """Where a threshold was reached: iteration, env steps and the three times (or None)."""
    if point is None:
        return None
    return {k: point[k] for k in ("iteration", "env_steps", "wall_s", "time_s", "train_s")}


def judged(points: list[dict], by_eval: bool) -> list[dict]:
    """The points the threshold rule runs over: every iteration's training return, or (with
    `runner.eval.interval`) the iterations that evaluated, their `eval_return` as the return."""
    if not by_eval:
        return points
    return [{**p, "mean_return": p["eval_return"]} for p in points if p["eval_return"] is not None]


def first_reach(points: list[dict], threshold: float, patience: int) -> dict | None:
    """The first point of the first run of `patience` points with mean_return >= threshold."""
    streak = 0
    for i, p in enumerate(points):
        r = p["mean_return"]
        streak = streak + 1 if r is not None and r >= threshold else 0
        if streak >= patience:
            return points[i - patience + 1]
    return None


def _stop(proc: subprocess.Popen, grace_s: float = 30.0) -> str:
    """SIGINT the run's process group (the launcher stops its workers), SIGKILL if it lingers."""
    if proc.poll() is not None:
        return "exited"
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=grace_s)
        return "stopped (SIGINT)"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return "killed (SIGKILL)"


def follow(proc: subprocess.Popen, metrics: Path, t_launch: float, args, threshold: float):
    """Stamp metrics.jsonl lines as they appear; stop at the threshold (custom) or the cap."""
    points: list[dict] = []
    tail, stop_reason = MetricsTail(metrics), None
    while True:
        done = proc.poll() is not None
        lines = tail.read()
        now = time.perf_counter() - t_launch
        for line in lines:
            p = curve_point(line, now)
            points.append(p)
            print(
                f"  it {p['iteration']:>5}  {now:7.1f} s  steps {p['env_steps'] or 0:.3g}"
                f"  return {p['mean_return']}",
                flush=True,
            )
        if done:
            return points, stop_reason or f"run ended (exit {proc.returncode})"
        elapsed = time.perf_counter() - t_launch
        if elapsed > args.max_seconds:
            return points, f"wall-clock cap {args.max_seconds:.0f} s: " + _stop(proc)
        if (
            args.threshold is not None
            and not args.keep_going
            and first_reach(judged(points, args.by_eval), threshold, args.patience)
        ):
            stop_reason = "threshold reached: " + _stop(proc)
            # keep reading the lines written before the stop
            continue
        time.sleep(0.1)


def evaluate(checkpoint: Path, args, threshold: float) -> dict:
    """One checkpoint's deterministic policy (`unilab play`) on `--eval-episodes` episodes.

    Training returns are those of the exploring policy; this is what the learned policy itself
    earns, at the curriculum level it was trained at, with each reward term's mean episode sum.
    """
    from unilab_integration import load_checkpoint, play_episodes, quiet_warp

    quiet_warp()
    device = f"cuda:{args.gpus.split(',')[0]}" if args.gpus else "cpu"
    ckpt = load_checkpoint(checkpoint)
    t0 = time.perf_counter()
    played = play_episodes(
        checkpoint,
        episodes=args.eval_episodes,
        num_envs=args.eval_envs or min(args.eval_episodes, 4096),
        seed=args.eval_seed,
        device=device,
    )
    returns = played.returns
    mean = sum(returns) / len(returns) if returns else None
    return {
        "iteration": int(ckpt["iteration"]),
        "env_steps": float(ckpt["counters"]["env_steps_global"]),
        "episodes": len(returns),
        "mean_return": mean,
        "reaches_threshold": mean is not None and mean >= threshold,
        "curriculum_level": played.curriculum_level,
        "terms": {k: sum(v) / len(v) for k, v in played.terms.items() if v},
        "seconds": time.perf_counter() - t0,
    }


def evaluate_run(run_dir: Path, points: list[dict], args, threshold: float) -> dict:
    """`result.eval` (the last checkpoint) and, with --eval-checkpoints, every checkpoint's.

    The curve's points take wall_s / time_s / train_s from the training point of the same
    iteration (when the checkpoint was written), so the deterministic policy's time to the
    threshold reads like the training return's (same patience rule, over evaluations).
    """
    saved = sorted((run_dir / "checkpoints").glob("ckpt_*.pt"))
    if not saved:
        return {"eval": {"error": "the run wrote no checkpoint (give --save-interval)"}}
    out: dict = {}
    if args.eval_checkpoints:
        by_iteration = {p["iteration"]: p for p in points}
        curve = []
        for path in saved:
            e = evaluate(path, args, threshold)
            at = by_iteration.get(e["iteration"], {})
            curve.append({**e, **{k: at.get(k) for k in ("wall_s", "time_s", "train_s")}})
            print(
                f"  checkpoint {e['iteration']:>5}: deterministic return "
                f"{e['mean_return']:.4g} (level {e['curriculum_level']})",
                flush=True,
            )
        reach = first_reach(curve, threshold, args.patience)
        out["eval_curve"] = curve
        out["eval_reached"] = reach_fields(reach)
        out["eval"] = curve[-1]
    else:
        out["eval"] = evaluate(saved[-1], args, threshold)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="humanoid-velocity")
    ap.add_argument("--algo", default="fastsac")
    ap.add_argument("--preset", default="default")
    ap.add_argument("--gpus", default=None, help="e.g. 0 or 0,1 (default 0 when CUDA is there)")
    ap.add_argument("--cpu-workers", type=int, default=None)
    ap.add_argument("--num-envs", type=int, default=None, help="per rank (task default if unset)")
    ap.add_argument("--threshold", type=float, default=None)
    ap.add_argument("--patience", type=int, default=2)
    ap.add_argument("--max-seconds", type=float, default=540.0, help="cap since the launch")
    ap.add_argument("--max-iterations", type=int, default=100000)
    ap.add_argument("--keep-going", action="store_true", help="train to the cap")
    ap.add_argument("--save-interval", type=int, default=None, help="checkpoint every N iterations")
    ap.add_argument(
        "--eval-episodes",
        type=int,
        default=0,
        help="afterwards, play the last checkpoint's deterministic policy for N episodes",
    )
    ap.add_argument("--eval-envs", type=int, default=None, help="worlds of the evaluation")
    ap.add_argument(
        "--eval-checkpoints",
        action="store_true",
        help="evaluate every checkpoint (with --save-interval): the deterministic policy's curve",
    )
    ap.add_argument("--eval-seed", type=int, default=12345)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--name", default=None)
    ap.add_argument("--run-dir", default=None, help="parent folder of the run (default a tmp dir)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--_train", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._train is not None:
        _child_train(args._train)
        return
    if args.patience < 1:
        raise SystemExit("--patience must be >= 1")
    if args.save_interval is not None and args.save_interval < 1:
        raise SystemExit("--save-interval must be >= 1")
    if args.eval_episodes < 0:
        raise SystemExit("--eval-episodes must be >= 0")
    if args.eval_checkpoints and not (args.eval_episodes and args.save_interval):
        raise SystemExit("--eval-checkpoints needs --eval-episodes E and --save-interval N")
    if args.quick:
        args.task, args.algo, args.cpu_workers, args.gpus = "cartpole-balance", "ppo", 2, None
        args.max_seconds = min(args.max_seconds, 150.0)
    if args.cpu_workers is None and args.gpus is None:
        import torch

        if torch.cuda.is_available():
            args.gpus = "0"
        else:
            args.cpu_workers = 1
    where = f"{args.cpu_workers}cpu" if args.cpu_workers else f"{len(args.gpus.split(','))}gpu"
    args.name = args.name or f"{args.task}_{args.algo}_{where}"

    import unilab_integration as ui

    cfg, run_dir, threshold, overrides = compose(args)
    args.by_eval = cfg.runner.eval.interval > 0  # the runner's evaluations decide, as in training
    if args.by_eval and args.eval_checkpoints:
        raise SystemExit("give either runner.eval.interval or --eval-checkpoints, not both")
    run_dir.mkdir(parents=True, exist_ok=True)
    cfg_path = run_dir.parent / f"{run_dir.name}.config.json"
    ui.save_config(cfg, cfg_path)
    print(
        f"{args.task} + {args.algo} ({args.preset}), threshold {threshold:.4g}, cap "
        f"{args.max_seconds:.0f} s, run dir {run_dir}",
        flush=True,
    )
    env = dict(os.environ)  # PYTHONPATH holds the sources (use_sources)
    env.setdefault("PYTHONUNBUFFERED", "1")
    log_path = run_dir.parent / f"{run_dir.name}.train.log"
    t_launch = time.perf_counter()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--_train", str(cfg_path)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: the parent can stop it all
        )
        try:
            points, stop_reason = follow(proc, run_dir / "metrics.jsonl", t_launch, args, threshold)
        except BaseException:
            _stop(proc, grace_s=10.0)
            raise
    total_s = time.perf_counter() - t_launch
    finish_curve(points)
    reach = first_reach(judged(points, args.by_eval), threshold, args.patience)
    tail = log_path.read_text()[-3000:]
    failed = (
        proc.returncode not in (0, None)
        and "cap" not in stop_reason
        and "threshold" not in (stop_reason)
    )
    result = {
        "reached": reach is not None,
        "judged_by": "runner evaluations (eval/return)" if args.by_eval else "training return",
        "threshold": threshold,
        "patience": args.patience,
        "wall_s": None if reach is None else reach["wall_s"],
        "time_s": None if reach is None else reach["time_s"],
        "train_s": None if reach is None else reach["train_s"],
        "env_steps": None if reach is None else reach["env_steps"],
        "iteration": None if reach is None else reach["iteration"],
        "iterations_run": len(points),
        "best_return": max(
            (p["mean_return"] for p in points if p["mean_return"] is not None), default=None
        ),
        "total_wall_s": total_s,
        "stop": stop_reason,
        "exit_code": proc.returncode,
        "failed": failed,
        "log_tail": tail if failed else None,
    }
    if args.eval_episodes and not failed:
        result.update(evaluate_run(run_dir, points, args, threshold))
    label = f"{args.algo} {args.task}, {where}"
    curves = {label: {"points": points}}
    if args.by_eval:  # the runner's evaluations: a curve of their own, and what was judged
        curves[f"{label}, deterministic policy (runner evaluations)"] = {
            "points": judged(points, True)
        }
        result["eval_reached"] = reach_fields(reach)
    if result.get("eval_curve"):
        curves[f"{label}, deterministic policy"] = {"points": result["eval_curve"]}
    doc = {
        "kind": "time_to_threshold",
        "args": vars(args),
        "overrides": overrides,
        "config": cfg.to_dict(),
        "threshold": threshold,
        "result": result,
        "curves": curves,
    }
    written = write_json(f"ttt_{args.name}.json", doc)
    if written is not None:
        dest = written.parent / f"ttt_{args.name}"
        dest.mkdir(parents=True, exist_ok=True)
        for src in (run_dir / "metrics.jsonl", run_dir / "config.json", log_path):
            if src.exists():
                shutil.copy(src, dest / src.name)
    if failed:
        print(f"training failed (exit {proc.returncode}); log tail:\n{tail}", flush=True)
    print(
        f"{'task':<20} {'algo':<8} {'where':<6} {'threshold':>9} {'reached':>8} {'wall s':>8} "
        f"{'train s':>8} {'env steps':>11} {'best ret':>9} {'iters':>6}"
    )

    def f(v, fmt):
        return "-" if v is None else format(v, fmt)

    r = result
    print(
        f"{args.task:<20} {args.algo:<8} {where:<6} {threshold:>9.4g} {r['reached']!s:>8} "
        f"{f(r['wall_s'], '.1f'):>8} {f(r['train_s'], '.1f'):>8} {f(r['env_steps'], '.4g'):>11} "
        f"{f(r['best_return'], '.4g'):>9} {r['iterations_run']:>6}"
    )
    if not r["reached"]:
        print(f"not reached in {total_s:.0f} s ({stop_reason})")
    if "eval_reached" in r:
        er = r["eval_reached"]
        print(
            "deterministic policy: "
            + (
                f"threshold reached at the evaluation of iteration {er['iteration']} "
                f"({er['env_steps']:.4g} env steps, {f(er['time_s'], '.1f')} s of training, "
                f"{f(er['wall_s'], '.1f')} s since launch)"
                if er
                else "threshold not reached in any evaluation"
            )
        )
    ev = r.get("eval")
    if ev and "error" in ev:
        print(f"evaluation: {ev['error']}")
    elif ev:
        terms = ", ".join(f"{k} {v:+.3g}" for k, v in ev["terms"].items())
        print(
            f"deterministic policy of iteration {ev['iteration']}: mean return "
            f"{f(ev['mean_return'], '.4g')} over {ev['episodes']} episodes (curriculum level "
            f"{ev['curriculum_level']}); {terms}"
        )
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
