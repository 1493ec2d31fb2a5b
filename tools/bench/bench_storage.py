"""Benchmark of unilab-storage: rollout add + GAE + one feed-forward epoch, replay add/sample.

    PYTHONPATH=packages/unilab-storage/src python3 tools/bench/bench_storage.py [--quick]

Full size (CUDA): a 4096-env x 24-step rollout with 48-dim policy and critic observations and
12-dim actions; a 1M-transition replay shard (4096 envs per add) sampled with batch 8192, for
n_step 1 and 3. `--quick` shrinks everything so it runs on CPU in seconds. Each figure is the
median over repetitions after warm-up, with the device synchronized before every clock read.
Prints a table last; writes the full results to $OUT/storage.json when $OUT is set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

import torch
from tensordict import TensorDict

from unilab_storage import (
    FeedForwardBatcher,
    ReplayShard,
    RolloutStorage,
    compute_gae,
    normalize_advantages,
)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _median_ms(fn: Callable[[], None], device: torch.device, reps: int, warmup: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        _sync(device)
        t0 = time.perf_counter()
        fn()
        _sync(device)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _rollout_step(n: int, obs_dim: int, act_dim: int, device: torch.device) -> TensorDict:
    return TensorDict(
        {
            "obs": {
                "policy": torch.randn(n, obs_dim, device=device),
                "critic": torch.randn(n, obs_dim, device=device),
            },
            "actions": torch.randn(n, act_dim, device=device),
            "log_prob": torch.randn(n, device=device),
            "mean": torch.randn(n, act_dim, device=device),
            "std": torch.rand(n, act_dim, device=device),
            "values": torch.randn(n, device=device),
            "rewards": torch.randn(n, device=device),
            "dones": torch.rand(n, device=device) < 0.02,
            "time_outs": torch.rand(n, device=device) < 0.01,
        },
        batch_size=[n],
        device=device,
    )


def bench_rollout(n: int, t: int, obs_dim: int, reps: int, device: torch.device) -> dict:
    step = _rollout_step(n, obs_dim, 12, device)
    storage = RolloutStorage(t, n, step, device=device)
    last_values = torch.randn(n, device=device)
    batcher = FeedForwardBatcher.rsl_rl(num_mini_batches=4, num_epochs=1)
    gen = torch.Generator(device=device).manual_seed(0)

    def fill() -> None:
        storage.clear()
        for _ in range(t):
            storage.add(step)

    def gae() -> None:
        d = storage.data
        adv, ret = compute_gae(
            d["rewards"], d["values"], d["dones"], last_values, 0.99, 0.95, d["time_outs"]
        )
        d["advantages"] = normalize_advantages(adv)
        d["returns"] = ret

    def epoch() -> None:
        for batch in batcher.batches(storage.data, generator=gen):
            batch["advantages"].sum()

    fill()
    gae()
    res = {
        "num_envs": n,
        "num_steps": t,
        "obs_dim": obs_dim,
        "add_rollout_ms": _median_ms(fill, device, reps, 2),
        "gae_normalize_ms": _median_ms(gae, device, reps, 2),
        "ff_epoch_4mb_ms": _median_ms(epoch, device, reps, 2),
    }
    res["add_per_step_us"] = res["add_rollout_ms"] * 1e3 / t
    res["total_ms"] = res["add_rollout_ms"] + res["gae_normalize_ms"] + res["ff_epoch_4mb_ms"]
    return res


def bench_replay(
    capacity: int, n: int, batch: int, obs_dim: int, n_step: int, reps: int, device: torch.device
) -> dict:
    row = TensorDict(
        {
            "obs": {"policy": torch.randn(n, obs_dim, device=device)},
            "actions": torch.randn(n, 12, device=device),
            "reward": torch.randn(n, device=device),
            "next_obs": {"policy": torch.randn(n, obs_dim, device=device)},
            "terminated": torch.rand(n, device=device) < 0.01,
            "truncated": torch.rand(n, device=device) < 0.01,
        },
        batch_size=[n],
        device=device,
    )
    shard = ReplayShard(capacity, row, device=device, n_step=n_step, gamma=0.99)
    for _ in range(shard.rows):  # fill once so sampling sees a full ring
        shard.add(row)
    gen = torch.Generator(device=device).manual_seed(0)
    return {
        "capacity": shard.capacity,
        "num_envs": n,
        "batch_size": batch,
        "n_step": n_step,
        "add_ms": _median_ms(lambda: shard.add(row), device, reps, 3),
        "sample_ms": _median_ms(lambda: shard.sample(batch, generator=gen), device, reps, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, runs on CPU")
    parser.add_argument("--device", default=None, help="default: cuda if available, else cpu")
    args = parser.parse_args()
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cpu":
        torch.set_num_threads(1)  # OpenMP spinning dominates small CPU kernels on shared hosts
    if args.quick:
        n, t, cap, batch, reps = 256, 8, 65_536, 1024, 3
    else:
        n, t, cap, batch, reps = 4096, 24, 1_000_000, 8192, 20
    results = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "quick": args.quick,
        "rollout": bench_rollout(n, t, 48, reps, device),
        "replay": [bench_replay(cap, n, batch, 48, k, reps, device) for k in (1, 3)],
    }
    out = os.environ.get("OUT")
    if out:
        os.makedirs(out, exist_ok=True)
    if out:
        with open(os.path.join(out, "storage.json"), "w") as f:
            json.dump(results, f, indent=2)
    r = results["rollout"]
    print(f"unilab-storage benchmark on {results['device']} (median of {reps})")
    print(f"{'what':<44} {'ms':>10}")
    print(f"{f'rollout add x{t} ({n} envs, obs {48})':<44} {r['add_rollout_ms']:>10.3f}")
    print(f"{'GAE + advantage normalization':<44} {r['gae_normalize_ms']:>10.3f}")
    print(f"{'feed-forward epoch (4 mini-batches, gather)':<44} {r['ff_epoch_4mb_ms']:>10.3f}")
    print(f"{'rollout total':<44} {r['total_ms']:>10.3f}")
    for rep in results["replay"]:
        tag = f"replay {rep['capacity']} n_step={rep['n_step']}"
        print(f"{tag + f' add ({n} envs)':<44} {rep['add_ms']:>10.3f}")
        print(f"{tag + f' sample {batch}':<44} {rep['sample_ms']:>10.3f}")


if __name__ == "__main__":
    main()
