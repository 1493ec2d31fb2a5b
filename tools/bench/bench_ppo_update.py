"""Benchmark of the PPO update phase: UniLab PPO (rsl_rl and default presets) vs RSL-RL 5.4.2.

MJLab Go1 setting: 4096 envs x 24 steps, 5 epochs x 4 mini-batches, 512-256-128 ELU actor and
critic with observation normalizers, obs 48 (policy) / 60 (critic), 12 actions, adaptive KL.

    python3 tools/bench/bench_ppo_update.py [--quick]

Needs the unilab `src/` folders on PYTHONPATH (and rsl_rl for the side-by-side number).
`--quick` runs a tiny CPU-sized case in seconds. Writes `$OUT/ppo_update.json` if `$OUT` is set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch
from tensordict import TensorDict


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _fill_unilab(ppo, n: int, t: int, dims: dict[str, int], a: int, g: torch.Generator) -> None:
    dev = ppo.device
    data = ppo.storage.data
    for k, d in dims.items():
        data["obs", k] = torch.randn(t, n, d, generator=g).to(dev)
    data["actions"] = torch.randn(t, n, a, generator=g).to(dev)
    data["mean"] = torch.randn(t, n, a, generator=g).to(dev) * 0.1
    data["std"] = torch.ones(t, n, a, device=dev)
    data["log_prob"] = torch.randn(t, n, generator=g).to(dev) - 10
    data["values"] = torch.randn(t, n, generator=g).to(dev)
    data["rewards"] = torch.randn(t, n, generator=g).to(dev)
    data["dones"] = (torch.rand(t, n, generator=g) < 0.02).to(dev)
    ppo.storage.step = t
    with torch.no_grad():
        obs = TensorDict({("obs", k): torch.randn(n, d, device=dev) for k, d in dims.items()}, [n])
        ppo.compute_returns(obs)


def bench_unilab(preset: str, n, t, dims, a, hidden, reps, device) -> list[float]:
    from unilab_algos import PPO, NetworkConfig, PPOConfig

    net = NetworkConfig(hidden=hidden)
    cfg = (
        PPOConfig.rsl_rl(actor=net, critic=net)
        if preset == "rsl_rl"
        else PPOConfig(actor=net, critic=net)
    )
    ppo = PPO({k: (d,) for k, d in dims.items()}, a, cfg, device=device)
    ppo.init_storage(n, t)
    g = torch.Generator().manual_seed(0)
    times = []
    for i in range(reps + 1):
        _fill_unilab(ppo, n, t, dims, a, g)
        _sync(device)
        t0 = time.perf_counter()
        ppo.update()
        _sync(device)
        if i:  # first repetition is the warm-up
            times.append(time.perf_counter() - t0)
    return times


def bench_rsl_rl(n, t, dims, a, hidden, reps, device) -> list[float] | None:
    try:
        from rsl_rl.algorithms import PPO as RslPPO
        from rsl_rl.models import MLPModel
        from rsl_rl.storage import RolloutStorage
    except ImportError:
        return None
    obs = TensorDict({k: torch.zeros(n, d, device=device) for k, d in dims.items()}, [n])
    groups = {"actor": ["policy"], "critic": ["critic"]}
    kw = dict(hidden_dims=list(hidden), activation="elu", obs_normalization=True)
    dist = {"class_name": "GaussianDistribution", "init_std": 1.0}
    actor = MLPModel(obs, groups, "actor", a, distribution_cfg=dist, **kw)
    critic = MLPModel(obs, groups, "critic", 1, **kw)
    st = RolloutStorage("rl", n, t, obs, [a], device=str(device))
    ppo = RslPPO(actor, critic, st, device=str(device))
    g = torch.Generator().manual_seed(0)
    times = []
    for i in range(reps + 1):
        for k, d in dims.items():
            st.observations[k].copy_(torch.randn(t, n, d, generator=g))
        st.actions.copy_(torch.randn(t, n, a, generator=g))
        st.values.copy_(torch.randn(t, n, 1, generator=g))
        st.returns.copy_(torch.randn(t, n, 1, generator=g))
        st.advantages.copy_(torch.randn(t, n, 1, generator=g))
        st.actions_log_prob.copy_(torch.randn(t, n, 1, generator=g) - 10)
        st.distribution_params = (
            torch.randn(t, n, a, generator=g).to(device) * 0.1,
            torch.ones(t, n, a, device=device),
        )
        st.step = t
        _sync(device)
        t0 = time.perf_counter()
        ppo.update()
        _sync(device)
        if i:
            times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny CPU-sized case")
    ap.add_argument("--reps", type=int, default=None)
    args = ap.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if args.quick:
        n, t, hidden, reps = 128, 8, (64, 32), args.reps or 3
    else:
        n, t, hidden, reps = 4096, 24, (512, 256, 128), args.reps or 10
    dims, a = {"policy": 48, "critic": 60}, 12
    rows = {}
    for name, fn in (
        (
            "unilab rsl_rl preset",
            lambda: bench_unilab("rsl_rl", n, t, dims, a, hidden, reps, device),
        ),
        (
            "unilab default preset",
            lambda: bench_unilab("default", n, t, dims, a, hidden, reps, device),
        ),
        ("rsl_rl 5.4.2 PPO", lambda: bench_rsl_rl(n, t, dims, a, hidden, reps, device)),
    ):
        times = fn()
        if times is not None:
            rows[name] = {"median_s": statistics.median(times), "times_s": times}
    result = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "num_envs": n,
        "num_steps": t,
        "hidden": list(hidden),
        "epochs": 5,
        "mini_batches": 4,
        "torch": torch.__version__,
        "results": rows,
    }
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "ppo_update.json"), "w") as f:
            json.dump(result, f, indent=2)
    print(f"PPO update, {n} envs x {t} steps, 5x4 mini-batches, {hidden}, {result['device']}")
    print(f"{'implementation':<26}{'median s/update':>18}")
    for name, row in rows.items():
        print(f"{name:<26}{row['median_s']:>18.4f}")


if __name__ == "__main__":
    main()
