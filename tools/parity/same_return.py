"""One MJLab checkpoint played in MJLab's own play env and in UniLab's task: the same return?

    # MJLab's side, in MJLab's venv (tools/parity/README.md):
    /tmp/mjvenv/bin/python tools/parity/same_return.py mjlab model_600.pt \\
        --task Mjlab-Velocity-Flat-Unitree-Go1 --num-envs 4096 --steps 1000 --device cuda:0
    # UniLab's side, in UniLab's environment:
    python3 tools/parity/same_return.py unilab model_600.pt \\
        --task Mjlab-Velocity-Flat-Unitree-Go1 --num-envs 4096 --steps 1000 --device cuda:0

Both sides play the checkpoint's deterministic policy (the actor's mean) for `--steps` control
steps in `--num-envs` worlds under MJLab's *play* settings (`load_env_cfg(task, play=True)`:
no observation noise, no pushes, the play command ranges, episodes without a time limit) and
report the mean reward per world and step (the sum over worlds and steps of the step reward,
MJLab's weight x term x step_dt, over worlds x steps), its standard error over worlds, each
reward term's mean per step, and the number of terminations (falls). MJLab's side reads its
env's reward manager; UniLab's side loads the checkpoint through `load_policy_checkpoint`
(the MJLab checkpoint converter) into UniLab's task with the equivalent overrides. The runs are
independent random streams (commands, resets, startup randomization), so the two agree within
their standard errors, not bit for bit. Prints one JSON line last (`--json FILE` writes it too).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# MJLab's play settings (mjlab/tasks/velocity/config/*/env_cfgs.py, play=True) for UniLab's task
PLAY_COMMAND = {  # lin_vel_x, ang_vel_z
    "go1-velocity-flat": ((-1.5, 2.0), (-0.7, 0.7)),
    "g1-velocity-flat": ((-1.5, 2.0), (-0.7, 0.7)),
}


def summarize(side, per_world, term_sums, falls, n, steps, seconds) -> dict:
    """The report of one side: per_world [N] sums of the step reward over the steps."""
    mean = sum(per_world) / n
    var = sum((x - mean) ** 2 for x in per_world) / max(n - 1, 1)
    return {
        "side": side,
        "num_envs": n,
        "steps": steps,
        "mean_reward_per_step": mean / steps,
        "stderr_per_step": math.sqrt(var / n) / steps,
        "terms_per_step": {k: v / (n * steps) for k, v in sorted(term_sums.items())},
        "terminations": int(falls),
        "seconds": seconds,
    }


def run_mjlab(args) -> dict:
    from dataclasses import asdict

    import mjlab.tasks  # noqa: F401  (fills the task registry)
    import torch
    from mjlab.envs import ManagerBasedRlEnv
    from mjlab.rl import MjlabOnPolicyRunner, RslRlVecEnvWrapper
    from mjlab.tasks.registry import load_env_cfg, load_rl_cfg, load_runner_cls

    cfg = load_env_cfg(args.task, play=True)
    cfg.scene.num_envs = args.num_envs
    cfg.seed = args.seed
    agent = load_rl_cfg(args.task)
    env = RslRlVecEnvWrapper(ManagerBasedRlEnv(cfg=cfg, device=args.device), agent.clip_actions)
    runner_cls = load_runner_cls(args.task) or MjlabOnPolicyRunner
    runner = runner_cls(env, asdict(agent), device=args.device)
    runner.load(args.checkpoint, load_cfg={"actor": True}, strict=True, map_location=args.device)
    policy = runner.get_inference_policy(device=args.device)
    raw = env.unwrapped
    manager = raw.reward_manager
    names = list(manager.active_terms)
    obs = env.get_observations()
    total = torch.zeros(args.num_envs, dtype=torch.float64, device=args.device)
    terms = {k: 0.0 for k in names}
    falls = 0
    t0 = time.perf_counter()
    with torch.inference_mode():
        for _ in range(args.steps):
            obs, reward, dones, _ = env.step(policy(obs))
            total += reward.double()
            # the step's weighted terms (x step_dt), as the reward manager summed them
            for i, k in enumerate(names):
                terms[k] += float(manager._step_reward[:, i].double().sum()) * raw.step_dt
            falls += int(dones.sum())
    return summarize(
        "mjlab", total.tolist(), terms, falls, args.num_envs, args.steps, time.perf_counter() - t0
    )


def run_unilab(args) -> dict:
    for src in [*sorted((ROOT / "packages").glob("*/src")), ROOT / "integration" / "src"]:
        sys.path.insert(0, str(src))
    import torch

    from unilab_integration import load_policy_checkpoint, play_episodes, quiet_warp

    quiet_warp()
    sys.path.insert(0, str(ROOT / "tools" / "bench"))
    from bench_time_to_walk import MJLAB_TASKS  # MJLab's task ids -> UniLab's task names

    task = MJLAB_TASKS[args.task]
    if task not in PLAY_COMMAND:
        raise SystemExit(f"{args.task}: no play settings here for {task} (flat tasks only)")
    lin_x, ang_z = PLAY_COMMAND[task]
    overrides = {
        "obs_noise": False,
        "push_lin_vel": (0.0, 0.0, 0.0),
        "push_ang_vel": (0.0, 0.0, 0.0),
        "command_stages": ((0, lin_x, ang_z),),
        "episode_length_s": 1e6,  # MJLab: 1e9 s; 1e6 s fits the env's int32 step counter
    }
    sums: dict = {}

    def observe(env, obs, step) -> None:
        r = step["reward"].double()
        if "total" not in sums:
            sums["total"] = torch.zeros_like(r)
            sums["falls"] = 0
            sums["terms"] = {}
        sums["total"] += r
        sums["falls"] += int(step["done"].sum())
        # each reward term's weight x value x step_dt (iterating a TensorDict walks its batch)
        for k in step["log"].keys():  # noqa: SIM118
            sums["terms"][k] = sums["terms"].get(k, 0.0) + float(step["log", k].double().sum())

    ckpt = load_policy_checkpoint(args.checkpoint, task=task, device=args.device)
    t0 = time.perf_counter()
    play_episodes(
        ckpt,
        episodes=None,
        max_steps=args.steps,
        num_envs=args.num_envs,
        seed=args.seed,
        device=args.device,
        env_kwargs=overrides,
        observer=observe,
    )
    return summarize(
        "unilab",
        sums["total"].tolist(),
        sums["terms"],
        sums["falls"],
        args.num_envs,
        args.steps,
        time.perf_counter() - t0,
    )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("side", choices=("mjlab", "unilab"))
    ap.add_argument("checkpoint", help="MJLab's model_<iteration>.pt")
    ap.add_argument("--task", default="Mjlab-Velocity-Flat-Unitree-Go1", help="an MJLab task id")
    ap.add_argument("--num-envs", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    out = run_mjlab(args) if args.side == "mjlab" else run_unilab(args)
    out.update(task=args.task, checkpoint=str(args.checkpoint), seed=args.seed)
    line = json.dumps(out)
    if args.json:
        Path(args.json).write_text(line + "\n")
    print(line)


if __name__ == "__main__":
    main()
