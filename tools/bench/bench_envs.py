"""Environment-layer throughput vs raw MJWarp physics, side by side in one run.

    python3 tools/bench/bench_envs.py [--quick] [--tasks cartpole-balance,quadruped-velocity]
        [--num-envs 1024,4096,16384] [--steps 200] [--reps 5] [--actions zero|random]
    python3 tools/bench/bench_envs.py --max-envs [--tasks ...] [--max-envs-start 16384]
        [--max-envs-limit 8388608] [--max-envs-refine 2] [--probe-timeout 300]
    python3 tools/bench/bench_envs.py --split [--tasks ...] [--num-envs ...] [--steps 100]
        [--reps 3] [--actions zero|random]

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
each count in its own subprocess (a failed allocation cannot poison the next), then bisect
`--max-envs-refine` (2) more times between the largest count that worked and the smallest that
failed; reports the largest count that worked, its device memory (`VecEnv.memory_bytes` and the
process's used GPU memory) and its env steps/s, and the smallest failure. Off by default.

`--split` (CUDA only): where the env loses throughput to the same-state raw loop. Per task and
count, after the warm-up and the captured same-state pair above (env and raw time per control
step), the env's state (`state_dict`) is loaded into a second env made with `cuda_graph=False`,
which repeats those `--reps` x `--steps` control steps eagerly from the same state with the
same actions, each repetition followed by `--steps` x decimation eager `mujoco_warp.step` calls
on a twin of its data, all under warp's CUDA kernel timers (`wp.timing_begin`, warp kernels
only: the env's torch copies of actions and outputs are not timed). An env kernel whose name
the raw loop also launches counts as physics, any other as env layer. Per control step: GPU
kernel time and launches of env physics, env layer and raw physics, env physics / raw physics
(above 1: the physics itself costs more inside the env, e.g. colder solver warm starts after
resets; MJWarp's solver iterates until its slowest world converges, a conditional graph node
when captured and a host loop when eager, so extra iterations also show as extra physics
launches), the env-layer kernels and the physics kernels that cost the env the most, and the
residuals captured time minus kernel time, for the env (graph launch, action and output copies,
gaps between kernels) and for the raw loop (gaps between kernels only).

`--quick`: cartpole-balance, 64 envs, few steps (runs on CPU in seconds once kernels are cached);
with `--max-envs`: 64 and 128 envs on CPU; with `--split`: the same small case, on CUDA. Writes
JSON to $OUT/envs.json (ratio table), $OUT/envs_max.json (`--max-envs`) or
$OUT/envs_split.json (`--split`) when $OUT is set.
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


WARMUP_S = 0.5
"""Warm-up per measured env: at least 3 steps and this long, synchronized after each step."""


def bench_env(env, actions: Actions, steps: int, reps: int) -> float:
    """Env control steps/s from a fresh reset (the warm-up, then `reps` x `steps`).

    The warm-up steps at least 3 times (eager step, capture, first replay) and for at least
    `WARMUP_S` seconds: with 3 steps only, the first configuration a process measured
    sometimes ran at half speed (cart-pole at 1024 envs, docs/benchmarks/envs.md).
    """
    env.reset()
    start, count = time.perf_counter(), 0
    while count < 3 or time.perf_counter() - start < WARMUP_S:
        env.step(actions.next())
        _sync(env.device)
        count += 1
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


def _reload_twin(env, twin, dev) -> None:
    """Copy the env's current MJWarp data (state, ctrl of its last step) into `twin`, synced."""
    _sync(env.device)
    with wp.ScopedDevice(dev):
        copy_data(twin, env.ctx.data)
        wp.synchronize_device(dev)


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
                # The first launch of a graph pays for uploading it: keep it out of the timings.
                wp.capture_launch(self.graph)
                wp.synchronize_device(dev)

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
        _reload_twin(env, twin, dev)
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


def _make_env(name: str, n: int, device: str, **config):
    return unilab_envs.make(
        name,
        num_envs=n,
        device=device,
        seed=0,
        check_actions=False,
        overflow_check_interval=0,
        **config,
    )


def _write(args, name: str, rows: list[dict]) -> None:
    """`$OUT/<name>` with the rows so far (after every row: a run cut short keeps its rows)."""
    out = os.environ.get("OUT")
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, name), "w") as f:
            json.dump({"args": vars(args), "rows": rows}, f, indent=2)


def run_table(args, tasks, counts, steps, reps) -> list[dict]:
    rows = []
    for name in tasks:
        for n in counts:
            env = _make_env(name, n, args.device)
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
            _write(args, "envs.json", rows)
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


# ---------------------------------------------------------------------------- --split


def split_kernels(
    env_records: list[tuple[str, float]],
    raw_records: list[tuple[str, float]],
    steps: int,
    top: int = 5,
) -> dict:
    """The env's kernels split into physics and env layer, next to the raw loop's, per step.

    `env_records`, `raw_records`: (kernel name, elapsed ms) per launch, as warp's CUDA timers
    give them, each covering `steps` control steps. An env kernel that the raw loop also
    launches (by name) is physics, any other is env layer. Times in us and launches per control
    step; the `top` env-layer kernels by time and the `top` physics kernels by env minus raw
    time. Self-contained (no module globals): tools/tests runs it without torch or warp.
    """

    def by_name(records):
        out: dict[str, list] = {}
        for name, ms in records:
            entry = out.setdefault(name, [0, 0.0])
            entry[0] += 1
            entry[1] += ms
        return {k: (launches / steps, ms * 1e3 / steps) for k, (launches, ms) in out.items()}

    env, raw = by_name(env_records), by_name(raw_records)
    physics = {k: v for k, v in env.items() if k in raw}
    layer = {k: v for k, v in env.items() if k not in raw}
    env_us = sum(us for _, us in physics.values())
    layer_us = sum(us for _, us in layer.values())
    raw_us = sum(us for _, us in raw.values())
    excess = sorted(physics, key=lambda k: physics[k][1] - raw[k][1], reverse=True)
    return {
        "env_physics_us": env_us,
        "env_layer_us": layer_us,
        "raw_physics_us": raw_us,
        "physics_ratio": env_us / raw_us if raw_us else None,
        "env_kernels_ratio": (env_us + layer_us) / raw_us if raw_us else None,
        "env_physics_launches": sum(n for n, _ in physics.values()),
        "env_layer_launches": sum(n for n, _ in layer.values()),
        "raw_launches": sum(n for n, _ in raw.values()),
        "top_env_layer": [
            {"name": k, "us": layer[k][1], "launches": layer[k][0]}
            for k in sorted(layer, key=lambda k: layer[k][1], reverse=True)[:top]
        ],
        "top_physics_excess": [
            {
                "name": k,
                "env_us": physics[k][1],
                "raw_us": raw[k][1],
                "env_launches": physics[k][0],
                "raw_launches": raw[k][0],
            }
            for k in excess[:top]
        ],
        # Kernels of the raw loop that the env never launched (expected: none).
        "raw_only": sorted(k for k in raw if k not in env),
    }


def _timed_kernels(fn) -> list[tuple[str, float]]:
    """(name, elapsed ms) of every warp kernel that `fn()` launches, from warp's CUDA timers."""
    wp.timing_begin(cuda_filter=wp.TIMING_KERNEL)
    try:
        fn()
    finally:
        results = wp.timing_end()
    return [(r.name, r.elapsed) for r in results]


def bench_kernels(env, actions: Actions, steps: int, reps: int) -> tuple[list, list]:
    """Kernel records of `reps` x (`steps` eager env steps, then the same-state raw loop)."""
    if env.uses_cuda_graph:  # a graph launch hides its kernels from warp's timers
        raise ValueError("bench_kernels needs an env made with cuda_graph=False")
    dev = wp.get_device(str(env.device))
    physics_steps = steps * env.task.spec.decimation
    with wp.ScopedDevice(dev):
        twin = _twin_data(env)

    def env_loop() -> None:
        for _ in range(steps):
            env.step(actions.next())

    def raw_loop() -> None:
        with wp.ScopedDevice(dev):
            for _ in range(physics_steps):
                mjw.step(env.ctx.model, twin)

    env_records: list = []
    raw_records: list = []
    for _ in range(reps):
        _reload_twin(env, twin, dev)
        env_records += _timed_kernels(env_loop)
        raw_records += _timed_kernels(raw_loop)
    return env_records, raw_records


def run_split(args, tasks, counts, steps, reps) -> list[dict]:
    rows = []
    for name in tasks:
        for n in counts:
            env = _make_env(name, n, args.device)
            actions = Actions(env, args.actions)
            bench_env(env, actions, steps, reps)  # warm-up, graph captured
            state, turn = env.state_dict(), actions.i
            same = bench_same_state(env, actions, steps, reps)
            spec = env.task.spec
            del env
            torch.cuda.empty_cache()
            eager = _make_env(name, n, args.device, cuda_graph=False)
            eager.reset()
            eager.step(actions.next())  # loads the kernels
            # Same states and actions as the captured pair above.
            eager.load_state_dict(state)
            actions.i = turn
            env_records, raw_records = bench_kernels(eager, actions, steps, reps)
            k = split_kernels(env_records, raw_records, steps * reps)
            env_us = 1e6 * n / same["env_steps_per_s"]
            raw_us = 1e6 * n / same["raw_steps_per_s"]
            row = {
                "task": name,
                "num_envs": n,
                "device": str(eager.device),
                "decimation": spec.decimation,
                "actions": args.actions,
                "steps": steps,
                "reps": reps,
                "kernels": k,
                "captured_env_us": env_us,
                "captured_raw_us": raw_us,
                "env_residual_us": env_us - k["env_physics_us"] - k["env_layer_us"],
                "raw_residual_us": raw_us - k["raw_physics_us"],
                "same_state": same,
            }
            rows.append(row)
            ratio = _or_nan(k["physics_ratio"])
            print(
                f"{name} {n} (us per control step): physics env {k['env_physics_us']:.1f} / "
                f"raw {k['raw_physics_us']:.1f} ({ratio:.3f}), env layer "
                f"{k['env_layer_us']:.1f} in {k['env_layer_launches']:.1f} launches; captured "
                f"env {env_us:.1f}, raw {raw_us:.1f} (residual env {row['env_residual_us']:.1f}, "
                f"raw {row['raw_residual_us']:.1f})",
                flush=True,
            )
            for t in k["top_env_layer"]:
                print(f"  layer   {t['us']:8.2f} us {t['launches']:5.1f}x  {t['name']}")
            for t in k["top_physics_excess"]:
                print(
                    f"  physics {t['env_us'] - t['raw_us']:+8.2f} us ({t['env_us']:.2f} vs "
                    f"{t['raw_us']:.2f}) {t['env_launches']:5.1f}x vs {t['raw_launches']:5.1f}x  "
                    f"{t['name']}"
                )
            if k["raw_only"]:
                print(f"  raw-only kernels: {k['raw_only']}")
            del eager, actions, state
            torch.cuda.empty_cache()
    return rows


def _or_nan(x: float | None) -> float:
    return float("nan") if x is None else x


def print_split(rows: list[dict]) -> None:
    print("per control step: GPU kernel us (launches); captured = wall us of the CUDA-graph runs")
    print(
        f"{'task':<20} {'envs':>7} {'env phys':>14} {'env layer':>13} {'raw phys':>14} "
        f"{'phys e/r':>8} {'capt env':>9} {'capt raw':>9} {'env resid':>9} {'raw resid':>9}"
    )
    for r in rows:
        k = r["kernels"]
        ratio = _or_nan(k["physics_ratio"])
        print(
            f"{r['task']:<20} {r['num_envs']:>7} "
            f"{k['env_physics_us']:>7.1f} ({k['env_physics_launches']:>4.0f}) "
            f"{k['env_layer_us']:>6.1f} ({k['env_layer_launches']:>4.1f}) "
            f"{k['raw_physics_us']:>7.1f} ({k['raw_launches']:>4.0f}) {ratio:>8.3f} "
            f"{r['captured_env_us']:>9.1f} {r['captured_raw_us']:>9.1f} "
            f"{r['env_residual_us']:>9.1f} {r['raw_residual_us']:>9.1f}"
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


def _probe_count(args, task: str, n: int, steps: int) -> tuple[dict | None, dict | None]:
    """One count in a fresh subprocess -> (result, None) if it ran, else (None, failure)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--_probe", f"{task}:{n}"]
    cmd += ["--device", args.device, "--steps", str(steps)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=args.probe_timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return None, {"num_envs": n, "kind": "timeout", "tail": f"> {args.probe_timeout} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("PROBE ")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stdout + proc.stderr)[-2000:]
        return None, {"num_envs": n, "kind": _failure_kind(tail), "tail": tail}
    res = json.loads(lines[-1][len("PROBE ") :])
    if not res["finite_obs"]:  # ran, but the physics broke (e.g. an index overflow)
        return None, {"num_envs": n, "kind": "non-finite observations", "tail": ""}
    res["probe_wall_s"] = time.perf_counter() - t0
    used = res.get("gpu_used_bytes", res["memory_bytes"]["total"])
    print(
        f"{task} {n}: ok, {res['env_steps_per_s']:.0f} env steps/s, "
        f"{used / 2**30:.2f} GiB used, {res['probe_wall_s']:.0f} s",
        flush=True,
    )
    return res, None


def run_max_envs(args, tasks: list[str], start: int, limit: int, steps: int) -> list[dict]:
    """Per task: double from `start` until a count fails, then bisect `--max-envs-refine`
    times between the largest count that ran and the smallest that failed."""
    results = []
    for task in tasks:
        ok: list[dict] = []
        failure = None
        n = start
        while n <= limit:
            res, failure = _probe_count(args, task, n, steps)
            if res is None:
                break
            ok.append(res)
            n *= 2
        if failure is None:
            failure = {"num_envs": n, "kind": "not tried (--max-envs-limit)", "tail": ""}
        else:
            print(f"{task} {failure['num_envs']}: {failure['kind']}", flush=True)
            low = ok[-1]["num_envs"] if ok else 0
            for _ in range(args.max_envs_refine if ok else 0):
                mid = (low + failure["num_envs"]) // 2
                if mid <= low:
                    break
                res, fail = _probe_count(args, task, mid, steps)
                if res is None:
                    failure = fail
                    print(f"{task} {mid}: {fail['kind']}", flush=True)
                else:
                    ok.append(res)
                    low = mid
        largest = max(ok, key=lambda r: r["num_envs"]) if ok else None
        results.append({"task": task, "largest": largest, "ok": ok, "failure": failure})
    return results


def print_max(results: list[dict]) -> None:
    print(
        f"{'task':<20} {'largest envs':>12} {'env steps/s':>12} {'GPU used GiB':>12} "
        f"{'env GiB':>8} {'B/env':>7}  smallest failure"
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
    parser.add_argument(
        "--max-envs-refine", type=int, default=2, help="bisection probes after the first failure"
    )
    parser.add_argument("--max-envs-limit", type=int, default=2**23)
    parser.add_argument("--probe-timeout", type=float, default=300.0)
    parser.add_argument("--split", action="store_true", help="env kernels vs physics (CUDA)")
    parser.add_argument("--_probe", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.split and args.max_envs:
        parser.error("--split and --max-envs are separate modes: pass one")
    if args.split and (torch.device(args.device).type != "cuda" or not torch.cuda.is_available()):
        parser.error("--split needs a CUDA device: it reads warp's CUDA kernel timers")
    wp.config.log_level = wp.LOG_WARNING  # no per-module load lines
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
    if args.split:
        rows = run_split(args, tasks, counts, steps, reps)
        if out:
            with open(os.path.join(out, "envs_split.json"), "w") as f:
                json.dump({"args": vars(args), "rows": rows}, f, indent=2)
        print_split(rows)
        return
    rows = run_table(args, tasks, counts, steps, reps)  # writes envs.json after every row
    print_table(rows)


if __name__ == "__main__":
    main()
