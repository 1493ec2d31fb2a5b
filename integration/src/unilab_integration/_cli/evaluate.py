"""`unilab eval`: the velocity-tracking metrics of a checkpoint over the full command range."""

from __future__ import annotations

import argparse

from .common import env_output, policy_checkpoint

__all__ = ["eval_command"]


def eval_command(args: argparse.Namespace) -> int:
    """`unilab eval`: prints the metrics (and their JSON); `--json` also writes them."""
    from .._mjlab import evaluate_tracking

    env_output()
    result = evaluate_tracking(
        policy_checkpoint(args),
        num_envs=args.num_envs,
        seed=args.seed,
        device=args.device,
        env_kwargs=args.env_kwargs,
    )
    _, lin_x, ang_z = result.command_stage
    print(
        f"{result.task}: {result.episodes} episodes, command lin_vel_x {list(lin_x)} m/s, "
        f"ang_vel_z {list(ang_z)} rad/s (final stage)"
    )
    print(f"  lin_vel_error        {result.lin_vel_error:.4f} m/s")
    print(f"  yaw_rate_error       {result.yaw_rate_error:.4f} rad/s")
    print(f"  time_limit_fraction  {result.time_limit_fraction:.4f}")
    print(f"  mean_return          {result.mean_return:.4f}")
    print(f"  mean_length          {result.mean_length:.1f} steps")
    print(result.to_json())
    if args.json:
        with open(args.json, "w") as f:
            f.write(result.to_json() + "\n")
    return 0
