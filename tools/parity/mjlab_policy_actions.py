"""Deterministic actions of an MJLab checkpoint's policy, as MJLab's play script computes them.

Run in MJLab's venv (tools/parity/README.md). Loads `model_<it>.pt` exactly as
`mjlab/scripts/play.py` does (`MjlabOnPolicyRunner(env, agent_cfg).load(..., {"actor": True})`,
`get_inference_policy`), feeds it the env's own observations after a reset and a few steps
plus seeded random ones, and writes {"task", "checkpoint", "obs": [B, D], "actions": [B, A]}
to a JSON. `tools/parity/compare_mjlab_policy.py` (UniLab's venv) checks that UniLab's
converted policy gives the same actions.

    PYTHONPATH=tools/parity/stubs MUJOCO_GL=disable \
      /tmp/mjvenv/bin/python tools/parity/mjlab_policy_actions.py \
      --task Mjlab-Velocity-Flat-Unitree-Go1 --checkpoint logs/.../model_1.pt --out go1.json
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

import torch
from tensordict import TensorDict


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--task", required=True)
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--num-envs", type=int, default=4)
    p.add_argument("--random", type=int, default=8, help="extra seeded random observations")
    args = p.parse_args()

    import mjlab.tasks  # noqa: F401 (fills the task registry)
    from mjlab.envs import ManagerBasedRlEnv
    from mjlab.rl import MjlabOnPolicyRunner, RslRlVecEnvWrapper
    from mjlab.tasks.registry import load_env_cfg, load_rl_cfg, load_runner_cls

    env_cfg = load_env_cfg(args.task, play=True)
    env_cfg.scene.num_envs = args.num_envs
    agent_cfg = load_rl_cfg(args.task)
    env = RslRlVecEnvWrapper(
        ManagerBasedRlEnv(cfg=env_cfg, device="cpu"), clip_actions=agent_cfg.clip_actions
    )
    runner_cls = load_runner_cls(args.task) or MjlabOnPolicyRunner
    runner = runner_cls(env, asdict(agent_cfg), device="cpu")
    runner.load(args.checkpoint, load_cfg={"actor": True}, strict=True, map_location="cpu")
    policy = runner.get_inference_policy(device="cpu")

    rows, acts = [], []
    obs = env.get_observations()
    with torch.inference_mode():
        for _ in range(3):  # the env's own observations
            a = policy(obs)
            rows.append(obs["actor"].clone())
            acts.append(a.clone())
            obs, *_ = env.step(a)
        g = torch.Generator().manual_seed(0)
        d = rows[0].shape[1]
        rand = torch.randn(args.random, d, generator=g) * 2.0
        rows.append(rand)
        acts.append(policy(TensorDict({"actor": rand}, batch_size=[args.random])))
    out = {
        "task": args.task,
        "checkpoint": args.checkpoint,
        "obs": torch.cat(rows).tolist(),
        "actions": torch.cat(acts).tolist(),
    }
    with open(args.out, "w") as f:
        json.dump(out, f)
    print(f"wrote {args.out}: {len(out['obs'])} observations of {d}")


if __name__ == "__main__":
    main()
