"""Environment-layer throughput vs raw MJWarp physics, side by side in one run.

    python3 tools/bench/bench_envs.py [--quick] [--tasks cartpole-balance,quadruped-velocity]
        [--num-envs 1024,4096,16384] [--steps 200] [--reps 5] [--actions zero|random]
    python3 tools/bench/bench_envs.py --max-envs [--tasks ...] [--max-envs-start 16384]
        [--max-envs-limit 8388608] [--probe-timeout 300]

For each task and world count, in one process:
  env       env control steps/s (`env.step`, outputs copied as a trainer would get them, one
            CUDA graph on GPU), from a fresh `reset()`;
  fresh raw a plain `mujoco_warp.step` loop on a *fresh* `make_data` with zero ctrl (captured
            in one CUDA graph on GPU), divided by the decimation. A humanoid there falls once
            and lies still, which flatters this baseline (docs/benchmarks/envs.md);
  same-state paired repetitions: after the warm-up (same zero/random actions), every
            repetition copies the env's MJWarp data (state, ctrl of the last env step, pushes,
            warm start; every array of `env.ctx.data`) into a twin made by `make_data` with the
            same sizes, then times (a) `--steps` env control steps from that state and (b)
            `--steps` x decimation `mujoco_warp.step` calls on the twin with the env's own model
            (same randomized parameters), captured in one CUDA graph, from the same state and
            with that same ctrl held.
Ratios: env / fresh raw and env(same-state) / same-state raw. Median of `--reps` repetitions
after a warm-up; clocks read after synchronizing the device.

`--max-envs`: instead of the ratio table, for each task double the env count from
`--max-envs-start` until a count fails (CUDA out of memory / warp allocation error / timeout),
each count in its own subprocess (a failed allocation cannot poison the next); reports the
largest count that worked, its device memory (`VecEnv.memory_bytes` and the process's used GPU
memory) and its env steps/s. Off by default.

`--quick`: cartpole-balance, 64 envs, few steps (runs on CPU in seconds once kernels are cached);
with `--max-envs`: 64 and 128 envs on CPU. Writes JSON to $OUT/envs.json (ratio table) or
$OUT/envs_max.json (`--max-envs`) when $OUT is set.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_src = str(ROOT / "packages" / "unilab-envs" / "src")
if _src not in sys.path:
    sys.path.insert(0, _src)

import mujoco_warp as mjw  # noqa: E402
import torch  # noqa: E402
import warp as wp  # noqa: E402

import unilab_envs  # noqa: E402

# MJWarp's per-world printf when the solver stops at its iteration limit; the env turns it off,
# so the raw baselines do too (same kernels, same work).
_SOLVER_LIMITS = int(mjw.OverflowType.ITERATIONS) | int(mjw.OverflowType.LS_ITERATIONS)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Actions:
    """The actions fed to the env: zeros, or a cycle of 8 fixed uniform [-1, 1] tensors."""

    def __init__(self, env, kind: str, seed: int = 0) -> None:
        n, a = env.num_envs, env.action_dim
        if kind == "zero":
            self.bank = [torch.zeros(n, a, device=env.device)]
        elif kind == "random":
            g = torch.Generator(device="cpu").manual_seed(seed)
            self.bank = [(torch.rand(n, a, generator=g) * 2 - 1).to(env.device) for _ in range(8)]
        else:
            raise ValueError(f"--actions must be 'zero' or 'random', got {kind!r}")
        self.i = 0

    def next(self) -> torch.Tensor:
        self.i = (self.i + 1) % len(self.bank)
        return self.bank[self.i]


def _time_env(env, actions: Actions, steps: int) -> float:
    _sync(env.device)
    t = time.perf_counter()
    for _ in range(steps):
        env.step(actions.next())
    _sync(env.device)
    return time.perf_counter() - t


def bench_env(env, actions: Actions, steps: int, reps: int) -> float:
    """Env control steps/s from a fresh reset (3 warm-up steps, then `reps` x `steps`)."""
    env.reset()
    for _ in range(3):
        env.step(actions.next())
    times = [_time_env(env, actions, steps) for _ in range(reps)]
    return env.num_envs * steps / statistics.median(times)


def _twin_data(env):
    spec = env.task.spec
    return mjw.make_data(
        env.mjm, nworld=env.num_envs, nconmax=spec.capacity.nconmax, njmax=spec.capacity.njmax
    )


def copy_data(dst, src) -> int:
    """Copy every warp array of MJWarp data `src` into `dst` (same sizes); return arrays copied.

    Recurses into nested dataclasses (`contact`, `efc`); int fields (sizes) must agree.
    """
    count = 0
    for f in dataclasses.fields(src):
        a, b = getattr(src, f.name), getattr(dst, f.name)
        if isinstance(a, wp.array):
            if a.shape != b.shape or a.dtype != b.dtype:
                raise ValueError(f"data.{f.name}: twin {b.shape} {b.dtype} != {a.shape} {a.dtype}")
            if a.size:
                wp.copy(b, a)
                count += 1
        elif dataclasses.is_dataclass(a):
            count += copy_data(b, a)
        elif isinstance(a, int) and a != b:
            raise ValueError(f"data.{f.name}: twin has {b}, env data {a}")
    return count


class RawLoop:
    """`physics_steps` x `mujoco_warp.step(model, data)`, captured in one CUDA graph on GPU."""

    def __init__(self, model, data, physics_steps: int, dev) -> None:
        self.model, self.data, self.n, self.dev = model, data, physics_steps, dev
        self.graph = None
        with wp.ScopedDevice(dev):
            self._loop()  # compile / warm up
            if dev.is_cuda:
                wp.synchronize_device(dev)
                with wp.ScopedCapture(device=dev) as cap:
                    self._loop()
                self.graph = cap.graph

    def _loop(self) -> None:
        for _ in range(self.n):
            mjw.step(self.model, self.data)

    def time(self) -> float:
        with wp.ScopedDevice(self.dev):
            wp.synchronize_device(self.dev)
            t = time.perf_counter()
            if self.graph is not None:
                wp.capture_launch(self.graph)
            else:
                self._loop()
            wp.synchronize_device(self.dev)
            return time.perf_counter() - t


def bench_raw_fresh(env, steps: int, reps: int) -> float:
    """Control steps/s of a raw loop on a fresh model/data (zero ctrl, default initial state)."""
    mjm, n, spec = env.mjm, env.num_envs, env.task.spec
    dev = wp.get_device(str(env.device))
    with wp.ScopedDevice(dev):
        m = mjw.put_model(mjm)
        m.opt.warn_overflow = int(m.opt.warn_overflow) & ~_SOLVER_LIMITS
        d = _twin_data(env)
    raw = RawLoop(m, d, steps * spec.decimation, dev)
    times = [raw.time() for _ in range(reps)]
    return n * steps / statistics.median(times)


def bench_same_state(env, actions: Actions, steps: int, reps: int) -> dict:
    """Paired env / raw timings from the same copied state; see the module docstring."""
    n, spec = env.num_envs, env.task.spec
    dev = wp.get_device(str(env.device))
    _sync(env.device)
    with wp.ScopedDevice(dev):
        twin = _twin_data(env)
        copied = copy_data(twin, env.ctx.data)
    raw = RawLoop(env.ctx.model, twin, steps * spec.decimation, dev)
    env_t, raw_t = [], []
    for _ in range(reps):
        _sync(env.device)
        with wp.ScopedDevice(dev):
            copy_data(twin, env.ctx.data)  # the env's state and the ctrl of its last step
            wp.synchronize_device(dev)
        env_t.append(_time_env(env, actions, steps))
        raw_t.append(raw.time())
    env_sps = n * steps / statistics.median(env_t)
    raw_sps = n * steps / statistics.median(raw_t)
    return {
        "env_steps_per_s": env_sps,
        "raw_steps_per_s": raw_sps,
        "ratio": env_sps / raw_sps,
        "ratio_per_rep": [r / e for e, r in zip(env_t, raw_t, strict=True)],
        "arrays_copied": copied,
    }


def run_table(args, tasks, counts, steps, reps) -> list[dict]:
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
            actions = Actions(env, args.actions)
            env_sps = bench_env(env, actions, steps, reps)
            fresh = bench_raw_fresh(env, steps, reps)
            same = bench_same_state(env, actions, steps, reps)
            mem = env.memory_bytes()
            row = {
                "task": name,
                "num_envs": n,
                "device": str(env.device),
                "decimation": env.task.spec.decimation,
                "actions": args.actions,
                "env_steps_per_s": env_sps,
                "raw_steps_per_s": fresh,
                "ratio": env_sps / fresh,
                "same_state": same,
                "bytes_per_env": mem["per_env"],
                "memory_bytes": mem,
                "cuda_graph": env.uses_cuda_graph,
            }
            rows.append(row)
            print(
                f"{name} {n}: env {env_sps:.0f}/s, fresh raw {fresh:.0f}/s "
                f"({row['ratio']:.2f}); same-state env {same['env_steps_per_s']:.0f}/s, "
                f"raw {same['raw_steps_per_s']:.0f}/s ({same['ratio']:.2f})",
                flush=True,
            )
            del env, actions
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
    return rows


def print_table(rows: list[dict]) -> None:
    print(
        f"{'task':<20} {'envs':>7} {'env steps/s':>12} {'fresh raw/s':>12} {'env/fresh':>9} "
        f"{'same env/s':>12} {'same raw/s':>12} {'env/same':>8} {'B/env':>7}"
    )
    for r in rows:
        s = r["same_state"]
        print(
            f"{r['task']:<20} {r['num_envs']:>7} {r['env_steps_per_s']:>12.0f} "
            f"{r['raw_steps_per_s']:>12.0f} {r['ratio']:>9.2f} {s['env_steps_per_s']:>12.0f} "
            f"{s['raw_steps_per_s']:>12.0f} {s['ratio']:>8.2f} {r['bytes_per_env']:>7}"
        )


# ---------------------------------------------------------------------------- --max-envs


def probe(task: str, n: int, device: str, steps: int) -> dict:
    """Make `n` envs of `task`, step them (graph captured), return memory and steps/s."""
    env = unilab_envs.make(
        task, num_envs=n, device=device, seed=0, check_actions=False, overflow_check_interval=0
    )
    actions = Actions(env, "zero")
    sps = bench_env(env, actions, steps, 1)
    obs = env.get_observations()["obs"]
    finite = all(bool(torch.isfinite(obs[g]).all()) for g in env.observation_shapes)
    out = {
        "task": task,
        "num_envs": n,
        "env_steps_per_s": sps,
        "finite_obs": finite,
        "memory_bytes": env.memory_bytes(),
    }
    if env.device.type == "cuda":
        free, total = torch.cuda.mem_get_info(env.device)
        out["gpu_used_bytes"] = total - free
        out["gpu_total_bytes"] = total
        out["torch_max_allocated_bytes"] = torch.cuda.max_memory_allocated(env.device)
    return out


def _failure_kind(text: str) -> str:
    low = text.lower()
    if "out of memory" in low or "failed to allocate" in low or "cudaerrormemoryallocation" in low:
        return "out of memory"
    return "error"


def run_max_envs(args, tasks: list[str], start: int, limit: int, steps: int) -> list[dict]:
    results = []
    for task in tasks:
        ok: list[dict] = []
        failure = None
        n = start
        while n <= limit:
            cmd = [sys.executable, os.path.abspath(__file__), "--_probe", f"{task}:{n}"]
            cmd += ["--device", args.device, "--steps", str(steps)]
            t0 = time.perf_counter()
            try:
                proc = subprocess.run(
                    cmd, capture_output=True, text=True, timeout=args.probe_timeout, check=False
                )
            except subprocess.TimeoutExpired:
                failure = {"num_envs": n, "kind": "timeout", "tail": f"> {args.probe_timeout} s"}
                break
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("PROBE ")]
            if proc.returncode != 0 or not lines:
                tail = (proc.stdout + proc.stderr)[-2000:]
                failure = {"num_envs": n, "kind": _failure_kind(tail), "tail": tail}
                break
            res = json.loads(lines[-1][len("PROBE ") :])
            if not res["finite_obs"]:  # ran, but the physics broke (e.g. an index overflow)
                failure = {"num_envs": n, "kind": "non-finite observations", "tail": ""}
                break
            res["probe_wall_s"] = time.perf_counter() - t0
            ok.append(res)
            used = res.get("gpu_used_bytes", res["memory_bytes"]["total"])
            print(
                f"{task} {n}: ok, {res['env_steps_per_s']:.0f} env steps/s, "
                f"{used / 2**30:.2f} GiB used, {res['probe_wall_s']:.0f} s",
                flush=True,
            )
            n *= 2
        if failure is None:
            failure = {"num_envs": n, "kind": "not tried (--max-envs-limit)", "tail": ""}
        else:
            print(f"{task} {failure['num_envs']}: {failure['kind']}", flush=True)
        results.append(
            {"task": task, "largest": ok[-1] if ok else None, "ok": ok, "failure": failure}
        )
    return results


def print_max(results: list[dict]) -> None:
    print(
        f"{'task':<20} {'largest envs':>12} {'env steps/s':>12} {'GPU used GiB':>12} "
        f"{'env GiB':>8} {'B/env':>7}  first failure"
    )
    for r in results:
        big, fail = r["largest"], r["failure"]
        why = f"{fail['num_envs']} ({fail['kind']})"
        if big is None:
            print(f"{r['task']:<20} {'-':>12} {'-':>12} {'-':>12} {'-':>8} {'-':>7}  {why}")
            continue
        mem = big["memory_bytes"]
        used = big.get("gpu_used_bytes")
        used_s = f"{used / 2**30:.2f}" if used is not None else "-"
        print(
            f"{r['task']:<20} {big['num_envs']:>12} {big['env_steps_per_s']:>12.0f} "
            f"{used_s:>12} {mem['total'] / 2**30:>8.2f} {mem['per_env']:>7}  {why}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tasks", default="cartpole-balance,quadruped-velocity,humanoid-velocity")
    parser.add_argument("--num-envs", default="1024,4096,16384")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--actions", choices=("zero", "random"), default="zero")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--max-envs", action="store_true", help="find the largest env count")
    parser.add_argument("--max-envs-start", type=int, default=16384)
    parser.add_argument("--max-envs-limit", type=int, default=2**23)
    parser.add_argument("--probe-timeout", type=float, default=300.0)
    parser.add_argument("--_probe", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    wp.config.quiet = True  # no per-module load lines
    if args._probe is not None:  # child of --max-envs: one task:count
        task, n = args._probe.rsplit(":", 1)
        torch.set_num_threads(1)
        print("PROBE " + json.dumps(probe(task, int(n), args.device, args.steps)), flush=True)
        return
    tasks = args.tasks.split(",")
    counts = [int(x) for x in args.num_envs.split(",")]
    steps, reps = args.steps, args.reps
    out = os.environ.get("OUT")
    if out:
        os.makedirs(out, exist_ok=True)
    if args.max_envs:
        start, limit, steps = args.max_envs_start, args.max_envs_limit, min(steps, 20)
        if args.quick:
            tasks, start, limit, steps = ["cartpole-balance"], 64, 128, 5
        results = run_max_envs(args, tasks, start, limit, steps)
        if out:
            with open(os.path.join(out, "envs_max.json"), "w") as f:
                json.dump({"args": vars(args), "results": results}, f, indent=2)
        print_max(results)
        return
    if args.quick:
        tasks, counts, steps, reps = ["cartpole-balance"], [64], 10, 3
    rows = run_table(args, tasks, counts, steps, reps)
    if out:
        with open(os.path.join(out, "envs.json"), "w") as f:
            json.dump({"args": vars(args), "rows": rows}, f, indent=2)
    print_table(rows)


if __name__ == "__main__":
    main()
