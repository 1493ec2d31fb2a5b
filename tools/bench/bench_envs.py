"""Environment-layer throughput vs raw MJWarp physics, side by side in one run.

    python3 tools/bench/bench_envs.py [--quick] [--tasks cartpole-balance,quadruped-velocity]
        [--num-envs 1024,4096,16384] [--steps 200]

For each task and world count: env control steps/s (`env.step` with a zero action, outputs
copied as a trainer would get them, CUDA graph on GPU) next to a plain `mujoco_warp.step`
loop of the same model and world count (captured in one CUDA graph on GPU), converted to
control steps/s by dividing by the decimation; their ratio; and device memory per env.
Median of `--reps` timed repetitions after a warm-up; clocks read after synchronizing.
`--quick`: cartpole-balance, 64 envs, few steps (runs on CPU in seconds once kernels are cached).
Writes JSON to $OUT/envs.json when $OUT is set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import mujoco_warp as mjw
import torch
import warp as wp

import unilab_envs


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bench_env(env, steps: int, reps: int) -> float:
    action = torch.zeros(env.num_envs, env.action_dim, device=env.device)
    env.reset()
    for _ in range(3):
        env.step(action)
    times = []
    for _ in range(reps):
        _sync(env.device)
        t = time.perf_counter()
        for _ in range(steps):
            env.step(action)
        _sync(env.device)
        times.append(time.perf_counter() - t)
    return env.num_envs * steps / statistics.median(times)


def bench_raw(env, steps: int, reps: int) -> float:
    """Control steps/s of a raw mujoco_warp.step loop on a fresh copy of env's model/data."""
    mjm, n, spec = env.mjm, env.num_envs, env.task.spec
    dev = wp.get_device(str(env.device))
    with wp.ScopedDevice(dev):
        m = mjw.put_model(mjm)
        d = mjw.make_data(mjm, nworld=n, nconmax=spec.capacity.nconmax, njmax=spec.capacity.njmax)
        physics = steps * spec.decimation

        def loop():
            for _ in range(physics):
                mjw.step(m, d)

        loop()  # compile / warm up
        graph = None
        if dev.is_cuda:
            with wp.ScopedCapture(device=dev) as cap:
                loop()
            graph = cap.graph
        times = []
        for _ in range(reps):
            wp.synchronize_device(dev)
            t = time.perf_counter()
            if graph is not None:
                wp.capture_launch(graph)
            else:
                loop()
            wp.synchronize_device(dev)
            times.append(time.perf_counter() - t)
    return n * steps / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tasks", default="cartpole-balance,quadruped-velocity,humanoid-velocity")
    parser.add_argument("--num-envs", default="1024,4096,16384")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    tasks = args.tasks.split(",")
    counts = [int(x) for x in args.num_envs.split(",")]
    steps, reps = args.steps, args.reps
    if args.quick:
        tasks, counts, steps, reps = ["cartpole-balance"], [64], 10, 3
    rows = []
    for name in tasks:
        for n in counts:
            env = unilab_envs.make(
                name,
                num_envs=n,
                device=args.device,
                seed=0,
                check_actions=False,
                overflow_check_interval=0,
            )
            env_sps = bench_env(env, steps, reps)
            raw_sps = bench_raw(env, steps, reps)
            mem = env.memory_bytes()
            rows.append(
                {
                    "task": name,
                    "num_envs": n,
                    "device": str(env.device),
                    "decimation": env.task.spec.decimation,
                    "env_steps_per_s": env_sps,
                    "raw_steps_per_s": raw_sps,
                    "ratio": env_sps / raw_sps,
                    "bytes_per_env": mem["per_env"],
                    "cuda_graph": env.uses_cuda_graph,
                }
            )
            del env
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "envs.json"), "w") as f:
            json.dump({"args": vars(args), "rows": rows}, f, indent=2)
    print(
        f"{'task':<20} {'envs':>7} {'env steps/s':>13} {'raw steps/s':>13} {'ratio':>6} {'B/env':>8}"
    )
    for r in rows:
        print(
            f"{r['task']:<20} {r['num_envs']:>7} {r['env_steps_per_s']:>13.0f} "
            f"{r['raw_steps_per_s']:>13.0f} {r['ratio']:>6.2f} {r['bytes_per_env']:>8}"
        )


if __name__ == "__main__":
    main()
