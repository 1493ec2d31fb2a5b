"""MJLab 1.6.0 + RSL-RL 5.4.2 reference: `Mjlab-Velocity-Flat-Unitree-Go1` (or `--task`) on 1 and 2 GPUs.

    python3 tools/bench/bench_mjlab.py                     # 4096 envs/GPU, 25 its, 1 and 2 GPUs
    python3 tools/bench/bench_mjlab.py --gpus 1 --num-envs 4096,8192
    python3 tools/bench/bench_mjlab.py --iterations 500 --gpus 1 --name curve   # learning curve
    python3 tools/bench/bench_mjlab.py --quick             # parser self-test on a sample log (CPU)
    python3 tools/bench/bench_mjlab.py --parse-log FILE    # parse a saved training log
    python3 tools/bench/bench_mjlab.py --gpus 1 --iterations 100000 --timeout 720 \
        --seed 1 --save-interval 60 --name go1_s1  # checkpoints for bench_time_to_walk.py
    python3 tools/bench/bench_mjlab.py --task Mjlab-Velocity-Rough-Unitree-Go1 --gpus 1 \
        --iterations 100000 --train-seconds 610 --timeout 1300 --name go1rough_s1
        # the 10-minute reference: stopped after 610 s of training, however long it compiled

Runs MJLab's own training script in a subprocess:
    PYTHONPATH=/tmp/site-mjlab MUJOCO_GL=disable python3 -u -m
    mjlab.scripts.train Mjlab-Velocity-Flat-Unitree-Go1 --env.scene.num-envs N
    --agent.max-iterations I --agent.logger tensorboard --gpu-ids "[0]" (or "[0,1]")
MJLab pins mujoco / mujoco-warp 3.11, hence its own folder (`--site`) first on PYTHONPATH:
    python3 -m pip install --target /tmp/site-mjlab mjlab==1.6.0
This script imports neither mjlab nor torch.

Parsed from rsl_rl's log (rank 0; on 2 GPUs torchrunx forwards it with a prefix): per iteration
"Steps per second" (rsl_rl: num_steps_per_env * num_envs * world_size / (collection + learning
time), i.e. total over GPUs), "Collection time", "Learning time", "Iteration time", "Mean reward"
(mean over rsl_rl's last-100-episodes buffer), "Total steps", on the rough tasks
"Curriculum/terrain_levels/mean" (`terrain_level`: the mean terrain level over the iteration's
resets), and the wall-clock since launch when the iteration's line arrived. Reported: median
steps/s over all iterations (the benchmarks README's reference points) and over the
iterations after `--warmup`, and weak-scaling efficiency.
Writes `$OUT/mjlab_<name>.json` after every run (and the raw log `$OUT/mjlab_<name>_g<W>_n<N>.log`);
prints progress and a table last.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time

TASK = "Mjlab-Velocity-Flat-Unitree-Go1"  # the default of --task
ANSI = re.compile(r"\x1b\[[0-9;]*m")
FIELDS = {
    "steps_per_s": re.compile(r"Steps per second:\s*([0-9.]+)"),
    "collection_s": re.compile(r"Collection time:\s*([0-9.]+)s"),
    "learning_s": re.compile(r"Learning time:\s*([0-9.]+)s"),
    "iteration_s": re.compile(r"Iteration time:\s*([0-9.]+)s"),
    "mean_reward": re.compile(r"Mean reward:\s*(-?[0-9.]+(?:e[-+]?\d+)?)"),
    "mean_episode_length": re.compile(r"Mean episode length:\s*([0-9.]+)"),
    "total_steps": re.compile(r"Total steps:\s*([0-9]+)"),
    # the rough tasks' terrain curriculum (MJLab's terrain_levels_vel, logged as an extra)
    "terrain_level": re.compile(r"Curriculum/terrain_levels/mean:\s*([0-9.]+)"),
}
HEADER = re.compile(r"Learning iteration\s+(\d+)\s*/\s*(\d+)")


class LogParser:
    """Incremental parser of rsl_rl 5.4.2 console logs; one dict per iteration in `.iterations`.

    An iteration starts at its "Learning iteration i/N" header; its fields follow it. Lines may
    carry any prefix (torchrunx worker tags, timestamps) and ANSI colour codes.
    """

    def __init__(self) -> None:
        self.iterations: list[dict] = []

    def feed(self, line: str, wall_s: float | None = None) -> dict | None:
        """Parse one line; return the current iteration's record when it gained steps/s."""
        line = ANSI.sub("", line)
        m = HEADER.search(line)
        if m:
            self.iterations.append({"iteration": int(m.group(1)), "of": int(m.group(2))})
            return None
        if not self.iterations:
            return None
        cur = self.iterations[-1]
        for key, rx in FIELDS.items():
            m = rx.search(line)
            if m and key not in cur:
                cur[key] = float(m.group(1))
                if key == "steps_per_s":
                    cur["wall_s"] = wall_s
                    return cur
        return None


def training_start(iterations: list[dict]) -> float | None:
    """When training began, in the wall-clock of the lines (s since launch): the first timed
    iteration's line less its own `iteration_s`; None before any timed line. Setup and kernel
    compilation come before it, so times counted from here exclude them."""
    timed = [it for it in iterations if it.get("wall_s") is not None]
    if not timed:
        return None
    first = min(timed, key=lambda it: it["iteration"])
    return first["wall_s"] - first.get("iteration_s", 0.0)


def summarize(iterations: list[dict], warmup: int) -> dict:
    sps = [it["steps_per_s"] for it in iterations if "steps_per_s" in it]
    after = sps[warmup:]
    return {
        "num_iterations": len(sps),
        "median_steps_per_s": statistics.median(sps) if sps else None,
        "median_steps_per_s_after_warmup": statistics.median(after) if after else None,
        "mean_steps_per_s_after_warmup": statistics.fmean(after) if after else None,
    }


def ensure_installed(site: str) -> None:
    """Exit with the fix when `site` holds no mjlab package."""
    if not os.path.isdir(os.path.join(site, "mjlab")):
        sys.exit(
            f"bench_mjlab: no mjlab in {site}; install MJLab there "
            f"(`python3 -m pip install --target {site} mjlab==1.6.0`) or pass --site DIR"
        )


def train_command(args, gpus: int, num_envs: int, log_root: str) -> list[str]:
    ids = "[" + ",".join(str(i) for i in range(gpus)) + "]"
    return [
        args.python,
        "-u",
        "-m",
        "mjlab.scripts.train",
        args.task,
        "--env.scene.num-envs",
        str(num_envs),
        "--agent.max-iterations",
        str(args.iterations),
        "--agent.logger",
        "tensorboard",
        "--gpu-ids",
        ids,
        "--log-root",
        log_root,
        *(["--agent.seed", str(args.seed)] if args.seed is not None else []),
        *(["--agent.save-interval", str(args.save_interval)] if args.save_interval else []),
    ]


def run_one(args, gpus: int, num_envs: int, out_dir: str | None) -> dict:
    """Run MJLab training once, streaming its output through the parser."""
    env = dict(os.environ)
    env.update(
        PYTHONPATH=":".join(p for p in [args.site, *args.extra_path] if p),
        MUJOCO_GL="disable",
        PYTHONUNBUFFERED="1",
    )
    log_root = f"/tmp/mjlab_logs/g{gpus}_n{num_envs}_{int(time.time())}"
    cmd = train_command(args, gpus, num_envs, log_root)
    print("$ " + " ".join(cmd), flush=True)
    parser = LogParser()
    tail: list[str] = []
    log_path = (
        os.path.join(out_dir, f"mjlab_{args.name}_g{gpus}_n{num_envs}.log") if out_dir else None
    )
    log_file = open(log_path, "w") if log_path else None  # noqa: SIM115 (closed below)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
        start_new_session=True,  # its own process group: a timeout ends torchrunx's workers too
    )
    state = {"timed_out": False, "train_seconds_reached": False}

    def kill(reason: str = "timed_out") -> None:
        state[reason] = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    watchdog = threading.Timer(args.timeout, kill)
    watchdog.start()
    try:
        for line in proc.stdout:
            wall = time.perf_counter() - t0
            if log_file:
                log_file.write(line)
            tail = ([*tail, line.rstrip()])[-40:]
            rec = parser.feed(line, wall)
            if rec is not None:
                r = rec.get("mean_reward")
                print(
                    f"[mjlab g{gpus} n{num_envs}] it {rec['iteration']}/{rec['of']}: "
                    f"{rec['steps_per_s']:,.0f} steps/s at {wall:.1f} s"
                    + ("" if r is None else f", previous reward {r}"),
                    flush=True,
                )
                if args.train_seconds is not None:  # the training clock only when asked for
                    trained = wall - training_start(parser.iterations)
                    if trained >= args.train_seconds:
                        print(
                            f"[mjlab g{gpus} n{num_envs}] {trained:.1f} s of training "
                            f">= --train-seconds {args.train_seconds:g}: stopping the run",
                            flush=True,
                        )
                        kill("train_seconds_reached")
        rc = proc.wait()
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            kill()
            proc.wait()
        if log_file:
            log_file.close()
    if rc != 0 and not parser.iterations:
        print("\n".join(tail), flush=True)
        print(f"bench_mjlab: training exited with {rc} before any iteration", flush=True)
    out = {
        "gpus": gpus,
        "num_envs": num_envs,
        "returncode": rc,
        "timed_out": state["timed_out"],
        "train_seconds_reached": state["train_seconds_reached"],
        "wall_s": time.perf_counter() - t0,
        "command": cmd,
        "log_root": log_root,  # MJLab writes model_<iteration>.pt below it
        "log_tail": tail,
        "iterations": parser.iterations,
    }
    out.update(summarize(parser.iterations, args.warmup))
    return out


SAMPLE_LOG = """\
[rank0]: ################################################################################
[rank0]: \x1b[1m                       Learning iteration 0/3                        \x1b[0m
[rank0]:                        Total steps: 196608
[rank0]:                   Steps per second: 101234
[rank0]:                    Collection time: 1.200s
[rank0]:                      Learning time: 0.742s
[rank0]:                Mean value loss: 0.0123
[rank0]:                    Iteration time: 1.94s
################################################################################
                       Learning iteration 1/3
                       Total steps: 393216
                  Steps per second: 229001
                   Collection time: 0.600s
                     Learning time: 0.259s
                       Mean reward: -1.25
               Mean episode length: 31.00
Curriculum/terrain_levels/mean: 2.4512
 Curriculum/terrain_levels/max: 9.0000
                    Iteration time: 0.86s
                       Learning iteration 2/3
                  Steps per second: 231000
                       Mean reward: 2.5e-1
"""


def self_test() -> None:
    """--quick: parse SAMPLE_LOG and check every field (runs anywhere, no mjlab needed)."""
    p = LogParser()
    for i, line in enumerate(SAMPLE_LOG.splitlines()):
        p.feed(line, float(i))
    its = p.iterations
    assert [it["iteration"] for it in its] == [0, 1, 2], its
    assert [it["steps_per_s"] for it in its] == [101234.0, 229001.0, 231000.0], its
    assert its[0]["collection_s"] == 1.2 and its[0]["learning_s"] == 0.742, its[0]
    assert "mean_reward" not in its[0] and its[1]["mean_reward"] == -1.25, its
    assert its[2]["mean_reward"] == 0.25 and its[1]["mean_episode_length"] == 31.0, its
    assert its[1]["total_steps"] == 393216 and its[1]["iteration_s"] == 0.86, its
    assert its[1]["terrain_level"] == 2.4512 and "terrain_level" not in its[0], its
    # iteration 0's steps/s line is line 3 and its iteration took 1.94 s
    assert abs(training_start(its) - (3.0 - 1.94)) < 1e-9, training_start(its)
    assert training_start([]) is None and training_start([{"iteration": 0}]) is None
    s = summarize(its, warmup=1)
    assert s["median_steps_per_s"] == 229001.0, s
    assert s["median_steps_per_s_after_warmup"] == 230000.5, s
    print("bench_mjlab --quick: log parser OK (3 iterations, 8 fields)", flush=True)


def print_table(runs: list[dict], task: str = TASK) -> None:
    base = {r["num_envs"]: r for r in runs if r["gpus"] == 1}
    print(f"\nMJLab 1.6.0 + RSL-RL 5.4.2, {task} (rsl_rl 'Steps per second', all GPUs)")
    print(
        f"{'GPUs':>4} {'envs/GPU':>8} {'iters':>5} {'median':>10} {'after warm-up':>14} {'eff.':>7}"
    )
    for r in runs:
        eff = "-"
        b = base.get(r["num_envs"])
        if b and b["median_steps_per_s"] and r["median_steps_per_s"]:
            eff = f"{r['median_steps_per_s'] / (r['gpus'] * b['median_steps_per_s']):.1%}"
        med = r["median_steps_per_s"] or 0.0
        aft = r["median_steps_per_s_after_warmup"] or 0.0
        print(
            f"{r['gpus']:>4} {r['num_envs']:>8} {r['num_iterations']:>5} {med:>10,.0f} "
            f"{aft:>14,.0f} {eff:>7}"
        )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="parser self-test only")
    ap.add_argument("--parse-log", default=None, help="parse a saved log instead of training")
    ap.add_argument("--gpus", default="1,2")
    ap.add_argument("--num-envs", default="4096", help="per GPU; comma list")
    ap.add_argument("--iterations", type=int, default=25)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=540.0, help="seconds per training run")
    ap.add_argument(
        "--train-seconds",
        type=float,
        default=None,
        help="stop a run at its first iteration line this many seconds after training began "
        "(the first iteration's start: setup and compilation not counted, as in "
        "bench_time_to_walk.py's time_s); --timeout still caps the whole run",
    )
    ap.add_argument("--site", default="/tmp/site-mjlab", help="the folder MJLab is installed in")
    ap.add_argument("--extra-path", default="", help="more PYTHONPATH folders after --site")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--name", default="go1")
    ap.add_argument("--seed", type=int, default=None, help="--agent.seed (MJLab's default: 42)")
    ap.add_argument(
        "--save-interval",
        type=int,
        default=None,
        help="--agent.save-interval: a checkpoint every N iterations (MJLab's default: 50)",
    )
    ap.add_argument(
        "--task", default=TASK, help="an MJLab task name, e.g. Mjlab-Velocity-Flat-Unitree-G1"
    )
    args = ap.parse_args(argv)
    args.extra_path = [p for p in args.extra_path.split(":") if p]
    if args.quick:
        self_test()
        return
    out_dir = os.environ.get("OUT")
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    if args.parse_log:
        p = LogParser()
        with open(args.parse_log) as f:
            for line in f:
                p.feed(line)
        run = {"gpus": 0, "num_envs": 0, "log": args.parse_log, "iterations": p.iterations}
        run.update(summarize(p.iterations, args.warmup))
        print(json.dumps({k: v for k, v in run.items() if k != "iterations"}, indent=1))
        return
    ensure_installed(args.site)
    runs: list[dict] = []
    for n in [int(x) for x in args.num_envs.split(",")]:
        for g in [int(x) for x in args.gpus.split(",")]:
            runs.append(run_one(args, g, n, out_dir))
            if out_dir:
                with open(os.path.join(out_dir, f"mjlab_{args.name}.json"), "w") as f:
                    json.dump({"args": vars(args), "task": args.task, "runs": runs}, f, indent=1)
    print_table(runs, args.task)


if __name__ == "__main__":
    main()
