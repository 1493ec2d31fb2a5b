"""Diagnostic: one GPU's env throughput with the worlds split over K envs on K CUDA streams.

    python3 tools/bench/diag_env_streams.py --robot go1 --num-envs 4096 --splits 1,2,4
    python3 tools/bench/diag_env_streams.py --task humanoid-velocity --num-envs 4096
    python3 tools/bench/diag_env_streams.py --quick          # CPU self-check, seconds

At a few thousand worlds most MJWarp kernels occupy a fraction of an H200's SMs, so one control
step is a chain of short, latency-bound launches. This measures whether running the same
worlds as K independent envs (N/K worlds each, one CUDA graph each) on K streams at once raises
the total env steps/s: K = 1 is the plain env. Each env replays its captured step on the
caller's current stream, so `with torch.cuda.stream(s_k): env_k.step(a_k)` runs them
concurrently. Per K: `--warmup` steps of the same random actions (so the worlds leave their
initial states and reach the contacts and resets of a rollout), then `--reps` repetitions of
`--steps` steps of every env, synchronized around each repetition; median env steps/s.

`--robot go1` uses MJLab's Go1 MJCF and solver settings (see _go1_task.py; needs
/tmp/site-mjlab or .kit/mjlab). Writes `$OUT/env_streams<name>.json` (`--name`: a suffix); prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for _pkg in ("unilab-envs",):
    _src = str(ROOT / "packages" / _pkg / "src")
    if _src not in sys.path:
        sys.path.insert(0, _src)
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(args, k: int, device: torch.device, robot) -> dict:
    import warp as wp

    import unilab_envs

    if args.num_envs % k:
        raise ValueError(f"--num-envs {args.num_envs} is not divisible by split {k}")
    m = args.num_envs // k
    kw: dict = dict(check_actions=False, on_overflow="warn")
    if robot is not None:
        kw["robot"] = robot
    envs = [
        unilab_envs.make(args.task, num_envs=m, device=str(device), seed=args.seed + i, **kw)
        for i in range(k)
    ]
    cuda = device.type == "cuda"
    streams = [torch.cuda.Stream(device) if cuda else None for _ in range(k)]
    gen = torch.Generator().manual_seed(args.seed)
    a = envs[0].action_dim
    actions = [(torch.rand(m, a, generator=gen) * 2 - 1).to(device) for _ in range(8)]
    for env in envs:
        env.reset()
    _sync(device)

    def run(steps: int, offset: int) -> None:
        for i in range(steps):
            for env, stream in zip(envs, streams, strict=True):
                if stream is None:
                    env.step(actions[(offset + i) % 8])
                else:
                    with torch.cuda.stream(stream):
                        env.step(actions[(offset + i) % 8])

    run(args.warmup, 0)
    _sync(device)
    times = []
    for r in range(args.reps):
        t0 = time.perf_counter()
        run(args.steps, r)
        _sync(device)
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    nefc = max(int(wp.to_torch(e.ctx.data.nefc).max()) for e in envs)
    overflowed = sum(e.check_overflow() for e in envs)
    return {
        "max_constraint_rows": nefc,
        "overflowed_worlds": overflowed,
        "split": k,
        "envs_per_stream": m,
        "cuda_graph": all(e.uses_cuda_graph for e in envs),
        "times_s": times,
        "env_steps_per_s": args.num_envs * args.steps / med,
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="quadruped-velocity")
    p.add_argument("--robot", choices=("default", "go1"), default="default")
    p.add_argument("--mjcf", default=None, help="go1.xml of mjlab (with --robot go1)")
    p.add_argument("--njmax", type=int, default=300, help="go1 constraint rows per world")
    p.add_argument("--nconmax", type=int, default=48, help="go1 contacts per world")
    p.add_argument("--num-envs", type=int, default=4096)
    p.add_argument("--splits", default="1,2,4")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--name", default="")
    p.add_argument("--quick", action="store_true", help="tiny CPU run (checks the script)")
    args = p.parse_args(argv)
    if args.quick:
        args.num_envs, args.steps, args.warmup, args.reps = 8, 3, 3, 2
        args.task, args.splits = "cartpole-balance", "1,2"
    device = torch.device("cuda" if torch.cuda.is_available() and not args.quick else "cpu")
    splits = [int(s) for s in args.splits.split(",") if s]
    with tempfile.TemporaryDirectory(prefix="unilab_streams_") as workdir:
        robot = None
        if args.robot == "go1":
            from _go1_task import find_go1_xml, go1_robot_config

            if args.task != "quadruped-velocity":
                p.error("--robot go1 needs --task quadruped-velocity")
            xml = args.mjcf or find_go1_xml(workdir)
            robot = go1_robot_config(xml, njmax=args.njmax, nconmax=args.nconmax)
        rows = []
        for k in splits:
            row = measure(args, k, device, robot)
            rows.append(row)
            print(
                f"split {k}: {row['envs_per_stream']} worlds x {k} streams, "
                f"{row['env_steps_per_s']:,.0f} env steps/s, at most {row['max_constraint_rows']} "
                f"constraint rows in a world, {row['overflowed_worlds']} worlds overflowed",
                flush=True,
            )
    base = rows[0]["env_steps_per_s"]
    name = args.task + ("-go1" if robot is not None else "")
    print(f"\n{name}, {args.num_envs} worlds, {device}")
    print(f"{'streams':>8}{'worlds each':>13}{'env steps/s':>15}{'vs first':>10}")
    for row in rows:
        print(
            f"{row['split']:>8}{row['envs_per_stream']:>13}{row['env_steps_per_s']:>15,.0f}"
            f"{row['env_steps_per_s'] / base:>10.2f}"
        )
    out = os.environ.get("OUT")
    if out:
        os.makedirs(out, exist_ok=True)
        dev_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
        result = {"task": name, "num_envs": args.num_envs, "device": dev_name, "rows": rows}
        with open(os.path.join(out, f"env_streams{args.name}.json"), "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
