"""Benchmark of the PPO update phase: UniLab PPO eager / CUDA-graph captured vs RSL-RL 5.4.2.

MJLab Go1 setting: 4096 envs x 24 steps, 5 epochs x 4 mini-batches, 512-256-128 ELU actor and
critic with observation normalizers, obs 48 (policy) / 60 (critic), 12 actions, adaptive KL.

    python3 tools/bench/bench_ppo_update.py [--quick] [--reps R] [--no-dist]

Needs the unilab `src/` folders on PYTHONPATH (and rsl_rl for its row). Rows, all on the same
random rollout data, each the median over `reps` updates after one warm-up update:

- `rsl_rl 5.4.2 PPO`: RSL-RL's own `PPO.update()`;
- `unilab rsl_rl preset`: bitwise-RSL-RL semantics (Python-float LR, one KL read per mini-batch);
- `unilab eager`: default preset, LR on device, fused Adam, one host read per update;
- `unilab cuda_graph`: default preset with `capture="cuda_graph"` (falls back to eager with the
  printed reason when capture is impossible, e.g. on CPU).

"Where time goes" times the phases of the eager default update separately over the same 20
mini-batches (gather, forward+loss+backward, LR rule+clip+Adam), each with the device
synchronized around the loop; `issue` is the host time to enqueue the loop (close to the total
means launch-bound). With 2+ GPUs (and not `--no-dist`), two NCCL ranks run the default eager
update with `unilab_dist.GradAllReduce` and with `grad_sync=None` to give the share of the
update spent in gradient synchronization. `--quick` runs a tiny case on CPU in seconds.

`--rows` picks rows (`rsl_rl,preset,eager,cuda_graph`; default all), `--matmul-precision`
sets `torch.set_float32_matmul_precision` first ("high": TF32, what MJLab's training script
configures), `--kernels` adds the GPU kernels of one update of the captured learner (torch
profiler; the eager learner's when capture is unavailable) summed by name, largest first, with
their share of the update's kernel time. Writes `$OUT/ppo_update.json` (`--name` suffix) if
`$OUT` is set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import traceback

import torch
from tensordict import TensorDict

DIMS, ACTIONS = {"policy": 48, "critic": 60}, 12
ROWS = ("rsl_rl", "preset", "eager", "cuda_graph")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _rollout(n: int, t: int, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    out = {f"obs/{k}": torch.randn(t, n, d, generator=g) for k, d in DIMS.items()}
    out["actions"] = torch.randn(t, n, ACTIONS, generator=g)
    out["mean"] = torch.randn(t, n, ACTIONS, generator=g) * 0.1
    out["log_prob"] = torch.randn(t, n, generator=g) - 10
    out["values"] = torch.randn(t, n, generator=g)
    out["rewards"] = torch.randn(t, n, generator=g)
    out["dones"] = torch.rand(t, n, generator=g) < 0.02
    out["last"] = {k: torch.randn(n, d, generator=g) for k, d in DIMS.items()}
    return out


def _make_unilab(preset: str, hidden, device, capture="none", grad_sync=None):
    from unilab_algos import PPO, NetworkConfig, PPOConfig

    net = NetworkConfig(hidden=hidden)
    if preset == "rsl_rl":
        cfg = PPOConfig.rsl_rl(actor=net, critic=net)
    else:
        cfg = PPOConfig(actor=net, critic=net, capture=capture)
    return PPO({k: (d,) for k, d in DIMS.items()}, ACTIONS, cfg, device=device, grad_sync=grad_sync)


def _fill_unilab(ppo, data: dict, n: int, t: int) -> None:
    dev = ppo.device
    st = ppo.storage.data
    for k in DIMS:
        st["obs", k] = data[f"obs/{k}"].to(dev)
    for k in ("actions", "mean", "log_prob", "values", "rewards", "dones"):
        st[k] = data[k].to(dev)
    st["std"] = torch.ones(t, n, ACTIONS, device=dev)
    ppo.storage.step = t
    with torch.no_grad():
        last = TensorDict({("obs", k): v.to(dev) for k, v in data["last"].items()}, [n])
        ppo.compute_returns(last)


def bench_unilab(preset, n, t, hidden, reps, device, capture="none", grad_sync=None):
    ppo = _make_unilab(preset, hidden, device, capture, grad_sync)
    ppo.init_storage(n, t)
    data = [_rollout(n, t, seed=i) for i in range(2)]
    times = []
    for i in range(reps + 1):
        _fill_unilab(ppo, data[i % 2], n, t)
        _sync(device)
        t0 = time.perf_counter()
        ppo.update()
        _sync(device)
        if i:  # the first repetition is the warm-up (and the capture)
            times.append(time.perf_counter() - t0)
    return times, str(ppo.capture_status["update"])


def bench_rsl_rl(n, t, hidden, reps, device):
    try:
        from rsl_rl.algorithms import PPO as RslPPO
        from rsl_rl.models import MLPModel
        from rsl_rl.storage import RolloutStorage
    except ImportError as err:
        return None, f"rsl_rl not importable: {err}"
    obs = TensorDict({k: torch.zeros(n, d, device=device) for k, d in DIMS.items()}, [n])
    groups = {"actor": ["policy"], "critic": ["critic"]}
    kw = dict(hidden_dims=list(hidden), activation="elu", obs_normalization=True)
    dist = {"class_name": "GaussianDistribution", "init_std": 1.0}
    actor = MLPModel(obs, groups, "actor", ACTIONS, distribution_cfg=dist, **kw).to(device)
    critic = MLPModel(obs, groups, "critic", 1, **kw).to(device)
    st = RolloutStorage("rl", n, t, obs, [ACTIONS], device=str(device))
    ppo = RslPPO(actor, critic, st, device=str(device))
    data = [_rollout(n, t, seed=i) for i in range(2)]
    times = []
    for i in range(reps + 1):
        d = data[i % 2]
        for k in DIMS:
            st.observations[k].copy_(d[f"obs/{k}"])
        st.actions.copy_(d["actions"])
        st.values.copy_(d["values"].unsqueeze(-1))
        st.rewards.copy_(d["rewards"].unsqueeze(-1))
        st.dones.copy_(d["dones"].unsqueeze(-1))
        st.actions_log_prob.copy_(d["log_prob"].unsqueeze(-1))
        st.distribution_params = (
            d["mean"].to(device),
            torch.ones(t, n, ACTIONS, device=device),
        )
        st.step = t
        with torch.no_grad():
            ppo.compute_returns(TensorDict({k: v.to(device) for k, v in d["last"].items()}, [n]))
        _sync(device)
        t0 = time.perf_counter()
        ppo.update()
        _sync(device)
        if i:
            times.append(time.perf_counter() - t0)
    return times, "ok"


def kernel_table(n, t, hidden, device, top: int = 20) -> dict:
    """GPU kernels of one (already warmed-up) update, summed by name, largest first."""
    from torch.profiler import ProfilerActivity, profile

    capture = "cuda_graph" if device.type == "cuda" else "none"
    ppo = _make_unilab("default", hidden, device, capture)
    ppo.init_storage(n, t)
    data = _rollout(n, t, seed=0)
    for _ in range(2):  # warm-up (and capture)
        _fill_unilab(ppo, data, n, t)
        ppo.update()
    _fill_unilab(ppo, data, n, t)
    _sync(device)
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    t0 = time.perf_counter()
    with profile(activities=activities) as prof:
        ppo.update()
        _sync(device)
    wall = time.perf_counter() - t0
    kernels: dict[str, list[float]] = {}
    for ev in prof.events():
        if device.type == "cuda" and ev.device_type.name != "CUDA":
            continue
        us = ev.device_time if device.type == "cuda" else ev.cpu_time
        entry = kernels.setdefault(ev.name, [0.0, 0])
        entry[0] += us
        entry[1] += 1
    total = sum(v[0] for v in kernels.values())
    rows = sorted(kernels.items(), key=lambda kv: -kv[1][0])
    return {
        "learner": str(ppo.capture_status["update"]),
        "wall_s": wall,
        "kernel_total_ms": total / 1e3,
        "kernels": [
            {"name": k, "ms": v[0] / 1e3, "count": v[1], "share": v[0] / total if total else 0}
            for k, v in rows[:top]
        ],
        "other_kernels": len(rows) - min(top, len(rows)),
    }


def phases(n, t, hidden, reps, device) -> dict[str, dict[str, float]]:
    """Median seconds per update of each phase of the eager default update (see docstring)."""
    from unilab_algos.ppo import (
        apply_update,
        forward_backward,
        sync_grads,
        trainable_params,
    )

    ppo = _make_unilab("default", hidden, device)
    ppo.init_storage(n, t)
    out: dict[str, list[float]] = {}
    issue: dict[str, list[float]] = {}
    data = _rollout(n, t, seed=0)
    params = trainable_params(ppo.state)
    driver = ppo.update_driver  # its eager mini-batches (an uncaptured learner)
    for i in range(reps + 1):
        _fill_unilab(ppo, data, n, t)
        _sync(device)
        t0 = time.perf_counter()
        batches = list(driver.batches(ppo.storage.data, ppo.generator))
        for mb in batches:
            driver.set_advantages(mb)
        t1 = time.perf_counter()
        _sync(device)
        t2 = time.perf_counter()
        results = []
        for mb in batches:
            results.append(forward_backward(ppo.state, mb.data, mb.obs, None, None, mb.advantages))
        t3 = time.perf_counter()
        _sync(device)
        t4 = time.perf_counter()
        for kl, losses in results:
            kl, _ = sync_grads(ppo.state, params, kl)
            apply_update(ppo.state, kl, losses)
        t5 = time.perf_counter()
        _sync(device)
        t6 = time.perf_counter()
        ppo.state.acc.tolist()
        t7 = time.perf_counter()
        ppo.storage.clear()
        ppo.storage.data.del_("advantages")
        if i:
            for name, total, enq in (
                ("gather mini-batches", t2 - t0, t1 - t0),
                ("forward+loss+backward", t4 - t2, t3 - t2),
                ("LR rule+clip+Adam", t6 - t4, t5 - t4),
                ("metrics read", t7 - t6, t7 - t6),
            ):
                out.setdefault(name, []).append(total)
                issue.setdefault(name, []).append(enq)
    return {
        k: {"median_s": statistics.median(v), "issue_s": statistics.median(issue[k])}
        for k, v in out.items()
    }


def _dist_worker(rank: int, world: int, n, t, hidden, reps) -> dict:
    """One NCCL rank (its process group set up by `run_distributed`)."""
    from unilab_dist import GradAllReduce

    device = torch.device("cuda", rank)
    synced, _ = bench_unilab("default", n, t, hidden, reps, device, grad_sync=GradAllReduce())
    local, _ = bench_unilab("default", n, t, hidden, reps, device, grad_sync=None)
    return {"synced": synced, "local": local}


def bench_dist(n, t, hidden, reps) -> dict | None:
    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        return None
    from unilab_dist.testing import run_distributed

    res = run_distributed(
        _dist_worker, 2, (n, t, hidden, reps), backend="nccl", timeout=600, pg_timeout=300
    )[0]  # rank 0's
    synced, local = statistics.median(res["synced"]), statistics.median(res["local"])
    return {
        "update_with_grad_sync_s": synced,
        "update_without_sync_s": local,
        "sync_share": (synced - local) / synced,
        "times": res,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny CPU-sized case")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--no-dist", action="store_true", help="skip the 2-GPU grad-sync share")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"subset of {','.join(ROWS)}")
    ap.add_argument("--no-phases", action="store_true", help="skip the eager phase breakdown")
    ap.add_argument("--kernels", action="store_true", help="kernel table of one update")
    ap.add_argument("--matmul-precision", choices=("highest", "high", "medium"), default="highest")
    ap.add_argument("--name", default="", help="suffix of the JSON's name")
    args = ap.parse_args()
    rows_wanted = [r for r in args.rows.split(",") if r]
    unknown = sorted(set(rows_wanted) - set(ROWS))
    if unknown:
        ap.error(f"--rows: unknown {unknown}; choose from {','.join(ROWS)}")
    torch.set_float32_matmul_precision(args.matmul_precision)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if args.quick:
        n, t, hidden, reps = 128, 8, (64, 32), args.reps or 3
    else:
        n, t, hidden, reps = 4096, 24, (512, 256, 128), args.reps or 10
    rows: dict[str, dict] = {}
    runs = {
        "rsl_rl": ("rsl_rl 5.4.2 PPO", lambda: bench_rsl_rl(n, t, hidden, reps, device)),
        "preset": (
            "unilab rsl_rl preset",
            lambda: bench_unilab("rsl_rl", n, t, hidden, reps, device),
        ),
        "eager": ("unilab eager", lambda: bench_unilab("default", n, t, hidden, reps, device)),
        "cuda_graph": (
            "unilab cuda_graph",
            lambda: bench_unilab("default", n, t, hidden, reps, device, capture="cuda_graph"),
        ),
    }
    for name, fn in (runs[r] for r in ROWS if r in rows_wanted):
        try:
            times, status = fn()
        except Exception as err:  # a failing row must not hide the others
            traceback.print_exc()
            times, status = None, f"failed: {type(err).__name__}: {err}"
        rows[name] = {"status": status}
        if times:
            rows[name].update(median_s=statistics.median(times), times_s=times)
    breakdown = {} if args.no_phases else phases(n, t, hidden, reps, device)
    kernels = kernel_table(n, t, hidden, device) if args.kernels else None
    dist_row = None
    if not args.no_dist and not args.quick:
        try:
            dist_row = bench_dist(n, t, hidden, reps)
        except Exception as err:
            traceback.print_exc()
            dist_row = {"failed": f"{type(err).__name__}: {err}"}
    result = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "num_envs": n,
        "num_steps": t,
        "hidden": list(hidden),
        "epochs": 5,
        "mini_batches": 4,
        "torch": torch.__version__,
        "matmul_precision": args.matmul_precision,
        "results": rows,
        "kernels": kernels,
        "phases_eager": breakdown,
        "two_gpu": dist_row,
    }
    if os.environ.get("OUT"):
        os.makedirs(os.environ["OUT"], exist_ok=True)
        with open(os.path.join(os.environ["OUT"], f"ppo_update{args.name}.json"), "w") as f:
            json.dump(result, f, indent=2)
    ref = rows.get("rsl_rl 5.4.2 PPO", {}).get("median_s")
    print(
        f"\nPPO update, {n} envs x {t} steps, 5x4 mini-batches, {hidden}, {result['device']}, "
        f"matmul precision {args.matmul_precision}"
    )
    print(f"{'implementation':<24}{'median s':>11}{'vs rsl_rl':>11}  status")
    for name, row in rows.items():
        med = row.get("median_s")
        speed = f"{ref / med:>10.2f}x" if med and ref else f"{'-':>11}"
        print(f"{name:<24}{med if med else float('nan'):>11.4f}{speed}  {row['status']}")
    if breakdown:
        print(f"\nwhere time goes (eager default, per update){'':<4}{'total s':>10}{'issue s':>10}")
        for name, row in breakdown.items():
            print(f"  {name:<44}{row['median_s']:>10.4f}{row['issue_s']:>10.4f}")
    if kernels:
        what = "kernel time" if device.type == "cuda" else "CPU op time (nested ops counted twice)"
        print(
            f"\nkernels of one update ({kernels['learner']}): {kernels['kernel_total_ms']:.2f} ms "
            f"of {what} in {kernels['wall_s'] * 1e3:.2f} ms (profiled)"
        )
        for k in kernels["kernels"]:
            print(
                f"  {k['ms']:>8.3f} ms {100 * k['share']:>5.1f}% x{k['count']:<5} {k['name'][:90]}"
            )
    if dist_row and "sync_share" in dist_row:
        print(
            f"\n2 GPUs: update {dist_row['update_with_grad_sync_s']:.4f} s with GradAllReduce, "
            f"{dist_row['update_without_sync_s']:.4f} s without: "
            f"{100 * dist_row['sync_share']:.1f}% in gradient sync"
        )
    elif dist_row:
        print(f"\n2 GPUs: {dist_row}")


if __name__ == "__main__":
    main()
