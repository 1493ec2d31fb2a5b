"""Latency of unilab-dist's flat gradient all-reduce vs DistributedDataParallel, W processes.

    python3 tools/bench/bench_dist.py             # 2 NCCL ranks on cuda:0/1
    python3 tools/bench/bench_dist.py --world 4   # 4 NCCL ranks on cuda:0..3
    python3 tools/bench/bench_dist.py --quick     # 2 gloo ranks on CPU, a few seconds

Model: a PPO-sized actor + critic (obs 48 -> 512-256-128 -> 12 actions / 1 value, ELU),
about 380k float32 parameters (~1.5 MB of gradients). Batch 4096 (--quick: 256).
Timed per repetition (milliseconds, median over repetitions, after warm-up, synchronized):
  flat_allreduce     GradAllReduce on ready gradients (one collective of all grads)
  backward_local     forward + backward, no communication
  backward_flat      forward + backward + GradAllReduce
  backward_ddp       forward + backward through DDP (its bucketed all-reduce overlaps)
  scalar_allreduce   all_reduce of one float32 value
  reduce_scalars_8   reduce_scalars of 8 Python floats (one float64 collective)
Prints a table last; writes full JSON to $OUT/dist.json when $OUT is set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for pkg in ("unilab-dist",):
    sys.path.insert(0, str(ROOT / "packages" / pkg / "src"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402


def mlp(sizes: list[int]) -> torch.nn.Sequential:
    layers: list[torch.nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ELU())
    return torch.nn.Sequential(*layers)


def timed(fn, reps: int, warmup: int, device: torch.device) -> list[float]:
    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        dist.barrier()

    for _ in range(warmup):
        fn()
    out = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def worker(rank: int, world: int, quick: bool, reps: int) -> dict | None:
    """One rank (its process group set up by `run_distributed`); rank 0 returns the numbers."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    import unilab_dist as ud

    use_cuda = not quick
    device = torch.device("cuda", rank) if use_cuda else torch.device("cpu")
    torch.manual_seed(0)
    actor, critic = mlp([48, 512, 256, 128, 12]).to(device), mlp([48, 512, 256, 128, 1]).to(device)
    model = torch.nn.ModuleList([actor, critic])
    batch = 256 if quick else 4096
    x = torch.randn(batch, 48, device=device)
    params = list(model.parameters())
    n_params = sum(p.numel() for p in params)
    sync = ud.GradAllReduce()

    def backward_local() -> None:
        model.zero_grad(set_to_none=False)
        (actor(x).pow(2).mean() + critic(x).pow(2).mean()).backward()

    def backward_flat() -> None:
        backward_local()
        sync(params)

    class Both(torch.nn.Module):
        def __init__(self, inner: torch.nn.ModuleList) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, inp: torch.Tensor) -> torch.Tensor:
            return self.inner[0](inp).pow(2).mean() + self.inner[1](inp).pow(2).mean()

    torch.manual_seed(0)  # same initial weights as `model`
    ddp = DDP(
        Both(torch.nn.ModuleList([mlp([48, 512, 256, 128, 12]), mlp([48, 512, 256, 128, 1])])).to(
            device
        ),
        device_ids=[rank] if use_cuda else None,
    )

    def backward_ddp() -> None:
        ddp.zero_grad(set_to_none=False)
        ddp(x).backward()

    backward_local()
    one = torch.ones(1, device=device)
    eight = {f"k{i}": float(i) for i in range(8)}
    warmup = 3 if quick else 20
    res = {
        "flat_allreduce": timed(lambda: sync(params), reps, warmup, device),
        "backward_local": timed(backward_local, reps, warmup, device),
        "backward_flat": timed(backward_flat, reps, warmup, device),
        "backward_ddp": timed(backward_ddp, reps, warmup, device),
        "scalar_allreduce": timed(lambda: ud.all_reduce(one, "sum"), reps, warmup, device),
        "reduce_scalars_8": timed(lambda: ud.reduce_scalars(eight), reps, warmup, device),
    }
    out = {
        "backend": dist.get_backend(),
        "device": torch.cuda.get_device_name(device) if use_cuda else "cpu",
        "world_size": world,
        "params": n_params,
        "grad_bytes": n_params * 4,
        "batch": batch,
        "reps": reps,
        "torch": torch.__version__,
        "ms": res,
    }
    dist.barrier()
    return out if rank == 0 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="gloo on CPU, few repetitions")
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--world", type=int, default=2, help="processes (one GPU each), >= 2")
    args = parser.parse_args()
    reps = args.reps or (10 if args.quick else 200)
    if args.world < 2:
        parser.error("--world must be at least 2 (a collective needs two ranks)")
    if not args.quick and torch.cuda.device_count() < args.world:
        sys.exit(
            f"--world {args.world} needs {args.world} CUDA GPUs, "
            f"{torch.cuda.device_count()} visible (or use --quick for a CPU run)"
        )
    from unilab_dist.testing import run_distributed

    backend = "gloo" if args.quick else "nccl"
    data = run_distributed(
        worker, args.world, (args.quick, reps), backend=backend, timeout=1800, pg_timeout=300
    )[0]
    med = {k: statistics.median(v) for k, v in data["ms"].items()}
    data["median_ms"] = med
    if os.environ.get("OUT"):
        os.makedirs(os.environ["OUT"], exist_ok=True)
        Path(os.environ["OUT"], "dist.json").write_text(json.dumps(data, indent=1))
    print(
        f"backend {data['backend']} on {data['device']}, world {data['world_size']}, "
        f"{data['params']} params ({data['grad_bytes'] / 2**20:.2f} MiB grads), batch "
        f"{data['batch']}, {reps} reps"
    )
    print(f"{'measure':<20}{'median ms':>12}{'min ms':>10}")
    for k, v in data["ms"].items():
        print(f"{k:<20}{med[k]:>12.3f}{min(v):>10.3f}")


if __name__ == "__main__":
    main()
