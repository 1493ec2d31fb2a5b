"""Does capturing PPO in CUDA graphs change what it computes? A shadow-learner diagnostic.

    python3 tools/bench/diag_ppo_capture.py [--task quadruped-velocity] [--iterations 60]
        [--num-envs N] [--seed 0] [--shadow captured|update|eager] [--device cuda] [--quick]

One env and two PPO learners made from the task's default `unilab train` config
(`unilab_integration.make_config(task, "ppo")`), each built right after seeding torch with the
same seed (so they start with the same weights) and given its own mini-batch generator seeded
alike (so they draw the same mini-batches):

  reference  `capture="none"`: eager update and rollout; its actions drive the env;
  shadow     `--shadow captured` (default): the default config, update and rollout captured in
             CUDA graphs; `update`: update captured, rollout eager; `eager`: another eager
             learner (the noise floor).

Every env step both learners `act` on the same observations (the shadow's sampled actions are
thrown away), the env steps with the reference's actions, and both `process_env_step` the same
step, so each updates its own normalizers and computes its own values and time-out bootstraps.
Before each update the shadow's stored actions, log-probs, means and stds are overwritten with
the reference's (teacher forcing: both learn from the same transitions); then both run
`compute_returns` and `update`. After each update the script records, per module, the largest
parameter difference relative to the largest parameter (`actor`, `critic`, the actor's std
parameter separately), the normalizers' mean and std differences, both learning rates, KLs
and action stds.

Two correct implementations stay near float rounding and drift slowly (two eager learners on the
GPU differ only in the order of reductions); a semantic difference (a buffer the graph does not
see, a stale value baked into a capture) shows as a jump within a few updates. `--shadow eager`
measures the floor to compare with. On CPU capture is unavailable (the shadow runs eagerly):
`--quick` (cart-pole, 64 envs, CPU, 3 iterations, `--shadow eager`) checks the script, and two
eager learners on CPU must agree exactly. `--force-static` drives the shadow through the
captured code (static buffers, the graph bodies, the collective between them) with
`unilab_algos.common.RerunBackend` (bodies re-run instead of replayed), on any device: on CPU it
must agree with the reference to rounding, which checks the plumbing on a real task (the unit
tests do it on scripted data).

Prints one line per iteration; writes `$OUT/diag_ppo_capture_<shadow>.json` when $OUT is set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for _src in [str(ROOT / "integration" / "src")] + [
    str(p) for p in sorted((ROOT / "packages").glob("*/src"))
]:
    if _src not in sys.path:
        sys.path.insert(0, _src)

import attrs  # noqa: E402
import torch  # noqa: E402

SHADOW_SETTINGS = {
    "captured": {"capture": "cuda_graph", "capture_rollout": True},
    "update": {"capture": "cuda_graph", "capture_rollout": False},
    "eager": {"capture": "none"},
}
FORCED_KEYS = ("actions", "log_prob", "mean", "std")


def _learner(cfg, algo, env, device: str, seed: int, backend=None):
    from unilab_algos import PPO

    torch.manual_seed(seed)
    # each learner its own mini-batch generator, seeded alike: the same permutations
    gen = torch.Generator(device=device).manual_seed(seed)
    ppo = PPO(
        env.observation_shapes,
        int(env.action_dim),
        algo,
        device=device,
        generator=gen,
        graph_backend=backend,
    )
    ppo.init_storage(env.num_envs, cfg.runner.num_steps_per_env)
    return ppo


def _rel_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    scale = float(a.abs().max()) or 1.0
    return float((a.double() - b.double()).abs().max()) / scale


def compare(ref, shadow) -> dict[str, float]:
    """Largest relative parameter / statistic differences between the two learners."""
    out: dict[str, float] = {}
    for name in ("actor", "critic"):
        worst, std = 0.0, None
        sa, sb = getattr(ref, name).state_dict(), getattr(shadow, name).state_dict()
        for key, value in sa.items():
            if not value.is_floating_point():
                continue
            d = _rel_diff(value, sb[key])
            if "std" in key and "normalizer" not in key:
                std = d
            elif "normalizer" in key:
                out[f"{name}.{key}"] = d
            else:
                worst = max(worst, d)
        out[f"{name}.params"] = worst
        if std is not None:
            out[f"{name}.std_param"] = std
    return out


def run(args) -> dict:
    import unilab_envs
    from unilab_algos.common import RerunBackend
    from unilab_integration import make_config

    cfg = make_config(args.task, "ppo")
    num_envs = args.num_envs or cfg.env.num_envs
    env = unilab_envs.make(
        args.task, num_envs=num_envs, device=args.device, seed=args.seed, **dict(cfg.env.kwargs)
    )
    ref_algo = attrs.evolve(cfg.algo, capture="none")
    shadow_algo = attrs.evolve(cfg.algo, **SHADOW_SETTINGS[args.shadow])
    ref = _learner(cfg, ref_algo, env, args.device, args.seed)
    # --force-static: the captured code paths with their bodies re-run instead of replayed
    backend = RerunBackend() if args.force_static else None
    shadow = _learner(cfg, shadow_algo, env, args.device, args.seed, backend)
    start = compare(ref, shadow)
    if any(v != 0.0 for v in start.values()):
        raise SystemExit(f"the two learners do not start equal: {start}")
    obs = env.reset().select("obs")
    rows = []
    print(
        f"diag_ppo_capture: {args.task}, {num_envs} envs on {args.device}, reference eager vs "
        f"shadow {args.shadow} (update {shadow.capture_status['update']}, rollout "
        f"{shadow.capture_status['rollout']})",
        flush=True,
    )
    for it in range(1, args.iterations + 1):
        t0 = time.perf_counter()
        ref.train_mode()
        shadow.train_mode()
        with torch.no_grad():
            for _ in range(cfg.runner.num_steps_per_env):
                actions = ref.act(obs)
                shadow.act(obs)
                step = env.step(actions)
                ref.process_env_step(step)
                shadow.process_env_step(step)
                obs = step.select("obs")
            data_ref, data_shadow = ref.storage.data, shadow.storage.data
            for key in FORCED_KEYS:
                data_shadow[key].copy_(data_ref[key])
            ref.compute_returns(obs)
            shadow.compute_returns(obs)
        m_ref, m_shadow = ref.update(), shadow.update()
        row = {
            "iteration": it,
            "seconds": time.perf_counter() - t0,
            "diff": compare(ref, shadow),
            "ref": {k: m_ref.get(k) for k in ("learning_rate", "kl", "action_std", "value")},
            "shadow": {k: m_shadow.get(k) for k in ("learning_rate", "kl", "action_std", "value")},
            "shadow_capture": [str(s) for s in shadow.capture_status.values()],
            # whether the shadow ran the captured code (static buffers), graphs or not
            "shadow_static_update": shadow.capture_status["update"].active,
            "shadow_static_rollout": shadow.capture_status["rollout"].active,
        }
        rows.append(row)
        d = row["diff"]
        print(
            f"it {it:4d}  actor {d['actor.params']:.2e}  std {d.get('actor.std_param', 0.0):.2e}  "
            f"critic {d['critic.params']:.2e}  lr {m_ref['learning_rate']:.2e}/"
            f"{m_shadow['learning_rate']:.2e}  action std {m_ref.get('action_std', 0.0):.4f}/"
            f"{m_shadow.get('action_std', 0.0):.4f}  static update/rollout "
            f"{row['shadow_static_update']}/{row['shadow_static_rollout']}",
            flush=True,
        )
    return {
        "args": vars(args),
        "device_name": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu",
        "shadow_settings": SHADOW_SETTINGS[args.shadow],
        "rows": rows,
    }


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="quadruped-velocity")
    ap.add_argument("--iterations", type=int, default=60)
    ap.add_argument("--num-envs", type=int, default=None, help="default: the task's config")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shadow", choices=tuple(SHADOW_SETTINGS), default="captured")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument(
        "--force-static",
        action="store_true",
        help="run the shadow through the captured code paths without CUDA graphs (e.g. on CPU)",
    )
    ap.add_argument("--quick", action="store_true", help="cart-pole, 64 envs, CPU, 3 iterations")
    args = ap.parse_args(argv)
    if args.quick:
        args.task, args.num_envs, args.device = "cartpole-balance", 64, "cpu"
        args.iterations, args.shadow = 3, "eager"
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    result = run(args)
    out = os.environ.get("OUT")
    if out:
        path = Path(out) / f"diag_ppo_capture_{args.shadow}.json"
        path.write_text(json.dumps(result, indent=1))
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
