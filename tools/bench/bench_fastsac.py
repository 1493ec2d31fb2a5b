"""FastSAC learner throughput: updates/s eager vs CUDA-graph captured, 1 GPU and 2 GPUs.

    python3 tools/bench/bench_fastsac.py            # CUDA machine (2 GPUs for the scaling rows)
    python3 tools/bench/bench_fastsac.py --quick    # CPU, tiny sizes, a few seconds

Needs the unilab `src/` folders on PYTHONPATH (unilab_algos, unilab_storage, unilab_dist). Each
row builds a FastSAC learner with Holosoma-like sizes (obs 100, critic obs 120, actions 20,
global batch 8192, actor 512-256-128, critic 768-384-192, 101 atoms, 8 updates per call, actor
every 4th), fills its replay shard with random transitions and times `update()` calls (replay
sampling, normalization, 8 critic + 2 actor/temperature updates): warm-up first, then the median
of repetitions, with the device synchronized before each clock read. The 2-GPU rows spawn one
NCCL process per GPU with `unilab_dist.GradAllReduce` and `unilab_dist.sum_reducer` injected;
"strong" keeps the global batch (each rank samples half), "weak" doubles it (each rank samples
the full 1-GPU batch). Full results go to `$OUT/fastsac.json` when `$OUT` is set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch
from tensordict import TensorDict


def _config(args: argparse.Namespace, capture: bool, batch: int):
    from unilab_algos.fastsac import FastSACConfig

    return FastSACConfig(
        batch_size=batch,
        num_updates=args.num_updates,
        actor_hidden=tuple(args.actor_hidden),
        critic_hidden=tuple(args.critic_hidden),
        num_atoms=args.atoms,
        learning_starts=1,
        transitions_per_env=args.rows,
        capture=capture,
        bf16=args.bf16,
    )


def _fill(learner, rows: int) -> None:
    n, dev = learner.num_envs, learner.device
    for _ in range(rows):
        obs = TensorDict(
            {"obs": {g: torch.randn(n, d, device=dev) for g, d in learner.obs_dims.items()}}, [n]
        )
        actions = learner.act(obs)
        step = TensorDict(
            {
                "obs": {g: torch.randn(n, d, device=dev) for g, d in learner.obs_dims.items()},
                "final_obs": {
                    g: torch.randn(n, d, device=dev) for g, d in learner.obs_dims.items()
                },
                "reward": torch.randn(n, device=dev),
                "terminated": torch.rand(n, device=dev) < 0.01,
                "truncated": torch.rand(n, device=dev) < 0.01,
            },
            [n],
        )
        learner.observe(obs, actions, step)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _time_learner(learner, args: argparse.Namespace) -> dict:
    dev = learner.device
    for _ in range(args.warmup):
        learner.update()
    _sync(dev)
    times = []
    for _ in range(args.reps):
        _sync(dev)
        t0 = time.perf_counter()
        for _ in range(args.calls):
            learner.update()
        _sync(dev)
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    ups = args.calls * learner.config.num_updates / med
    return {
        "updates_per_s": ups,
        "ms_per_update_call": 1e3 * med / args.calls,
        "times_s": times,
        "captured": str(learner.capture_status["update"]) == "captured",
    }


def _make(args, capture: bool, batch: int, world: int, device, grad_sync=None, reduce_sum=None):
    from unilab_algos.fastsac import FastSAC

    learner = FastSAC(
        {"policy": (args.obs,), "critic": (args.critic_obs,)},
        args.act,
        _config(args, capture, batch),
        num_envs=args.envs,
        world_size=world,
        device=device,
        grad_sync=grad_sync,
        reduce_sum=reduce_sum,
    )
    _fill(learner, args.rows)
    return learner


def bench_single(args: argparse.Namespace, device: torch.device) -> list[dict]:
    rows = []
    for capture in (False, True):
        torch.manual_seed(0)
        learner = _make(args, capture, args.batch, 1, device)
        res = _time_learner(learner, args)
        rows.append(
            {"setting": "1 device", "capture": capture, "batch_per_rank": args.batch, **res}
        )
        del learner
    return rows


def _worker(rank: int, world: int, args: argparse.Namespace) -> list[dict]:
    """One rank of `bench_multi` (its process group set up by `run_distributed`)."""
    if args.tf32:
        torch.set_float32_matmul_precision("high")
    device = torch.device("cpu" if args.quick else f"cuda:{rank}")
    from unilab_dist import GradAllReduce, broadcast_module_state, sum_reducer

    out = []
    for scaling in ("strong", "weak"):
        batch = args.batch if scaling == "strong" else args.batch * world
        for capture in (False, True):
            torch.manual_seed(rank)
            learner = _make(args, capture, batch, world, device, GradAllReduce(), sum_reducer())
            broadcast_module_state(learner.replicated_modules())
            res = _time_learner(learner, args)
            out.append(
                {
                    "setting": f"{world} devices, {scaling}",
                    "capture": capture,
                    "batch_per_rank": learner.batch_size,
                    **res,
                }
            )
            del learner
    return out


def bench_multi(args: argparse.Namespace, world: int) -> list[dict]:
    """`world` ranks (NCCL on GPUs 0..world-1, gloo with --quick) through unilab_dist's
    `run_distributed`; rank 0's rows (the ranks are in lockstep through the collectives)."""
    from unilab_dist.testing import run_distributed

    backend = "gloo" if args.quick else "nccl"
    results = run_distributed(
        _worker, world, (args,), backend=backend, timeout=1200, pg_timeout=300
    )
    return results[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes on CPU, a few seconds")
    ap.add_argument("--obs", type=int, default=100)
    ap.add_argument("--critic-obs", type=int, default=120)
    ap.add_argument("--act", type=int, default=20)
    ap.add_argument("--batch", type=int, default=8192, help="global batch of the 1-GPU rows")
    ap.add_argument("--envs", type=int, default=4096)
    ap.add_argument("--rows", type=int, default=16, help="replay rows filled (transitions/env)")
    ap.add_argument("--actor-hidden", type=int, nargs="+", default=[512, 256, 128])
    ap.add_argument("--critic-hidden", type=int, nargs="+", default=[768, 384, 192])
    ap.add_argument("--atoms", type=int, default=101)
    ap.add_argument("--num-updates", type=int, default=8)
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast in the learner")
    ap.add_argument("--tf32", action="store_true", help="TF32 matmuls (Holosoma sets 'high')")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20, help="update() calls per repetition")
    ap.add_argument(
        "--gpus",
        default=None,
        help="process counts of the scaling rows, e.g. 2 or 2,4,8; 0: skip (default: 2 when "
        "2 GPUs are visible or with --quick, else skip)",
    )
    args = ap.parse_args()
    if args.quick:
        torch.set_num_threads(1)
        args.obs, args.critic_obs, args.act, args.batch, args.envs = 8, 10, 2, 64, 16
        args.actor_hidden, args.critic_hidden, args.atoms = [32, 16], [32, 16], 11
        args.rows, args.warmup, args.reps, args.calls = 8, 1, 3, 2
    if not args.quick and not torch.cuda.is_available():
        raise SystemExit("bench_fastsac needs a CUDA device (or --quick for CPU)")
    device = torch.device("cpu" if args.quick else "cuda:0")
    if args.tf32:
        torch.set_float32_matmul_precision("high")
    meta = {
        "torch": torch.__version__,
        "device": "cpu" if args.quick else torch.cuda.get_device_name(0),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "args": vars(args),
    }
    visible = torch.cuda.device_count()
    if args.gpus is None:
        args.gpus = "2" if args.quick or visible >= 2 else "0"
    try:
        worlds = [int(x) for x in str(args.gpus).split(",") if x.strip()]
    except ValueError:
        ap.error(f"--gpus must be comma-separated integers, got {args.gpus!r}")
    if not args.quick and max(worlds, default=0) > visible:
        ap.error(f"--gpus {args.gpus}: only {visible} CUDA device(s) visible")
    rows = bench_single(args, device)
    for world in worlds:
        if world >= 2:
            rows += bench_multi(args, world)
    base = {r["capture"]: r["updates_per_s"] for r in rows if r["setting"] == "1 device"}
    print(f"\nFastSAC learner, {meta['device']}, torch {meta['torch']}")
    print(
        f"{'setting':<22}{'capture':>8}{'batch/rank':>11}{'updates/s':>12}{'ms/call':>9}"
        f"{'vs 1 dev':>9}"
    )
    for r in rows:
        rel = r["updates_per_s"] / base[r["capture"]]
        print(
            f"{r['setting']:<22}{r['capture']!s:>8}{r['batch_per_rank']:>11}"
            f"{r['updates_per_s']:>12.1f}{r['ms_per_update_call']:>9.2f}{rel:>9.2f}"
        )
    if os.environ.get("OUT"):
        os.makedirs(os.environ["OUT"], exist_ok=True)
        with open(os.path.join(os.environ["OUT"], "fastsac.json"), "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
