"""The `unilab` command: train, play, export, list.

    unilab train cartpole-balance --algo ppo --cpu-workers 2 --until-solved
    unilab train quadruped-velocity --algo ppo --gpus all --num-envs 4096 --env-scope per-rank --iterations 1500
    unilab train cartpole-balance --algo ppo --set algo.learning_rate=3e-4 --set runner.checkpoints.interval=10
    unilab train cartpole-balance --algo ppo --loggers console,jsonl,wandb --set runner.logging.wandb.project=me
    unilab play runs/cartpole-balance_ppo_*/ --episodes 10
    unilab play runs/go1-velocity-flat_ppo_*/ --viewer --port 8080
    unilab play logs/rsl_rl/go1_velocity/RUN/model_1000.pt --task go1-velocity-flat
    unilab eval runs/go1-velocity-flat_ppo_*/ --num-envs 4096 --device cuda --json eval.json
    unilab export runs/cartpole-balance_ppo_*/ policy.onnx
    unilab upgrade-checkpoint runs/old_run/ --trust
    unilab list
    unilab robots get go1 g1

Exit status: 0 on success, 2 for invalid settings (refused before any worker starts and before
anything is written: also another run's folder, a live trainer's lock, a resume whose budget
is already reached), 1 when training fails (a worker raised or died; its rank and error are
printed), 143 on SIGTERM and 130 on Ctrl-C (one line; the workers stopped, the run folder's
lock released). `unilab play --viewer` runs until Ctrl-C, its normal end: 0 then too (130 only
for a Ctrl-C before the first step, while the env is being built).

The heavy modules (torch, warp, mujoco, tensordict, unilab_algos, unilab_envs) are imported
only by the command that needs them: `--help`, argument errors and an unknown task (when no
`runner.imports` module could register one) answer without them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from ._cli import (
    build_parser,
    eval_command,
    export_command,
    list_command,
    play_command,
    train_command,
    upgrade_command,
)
from ._commandline import build_config
from ._robots import robots_command

__all__ = ["build_config", "main"]

COMMANDS: dict[str, Callable[..., int]] = {
    "train": train_command,
    "play": play_command,
    "eval": eval_command,
    "export": export_command,
    "upgrade-checkpoint": upgrade_command,
    "list": list_command,
    "robots": robots_command,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `unilab`; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (ValueError, TypeError, FileNotFoundError) as e:  # CheckpointError is a ValueError
        print(f"unilab {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM during a launch (LaunchInterrupted)
        name = getattr(e, "signal", "SIGINT")
        text = str(e) or "interrupted by SIGINT"
        print(f"unilab {args.command}: {text}", file=sys.stderr)
        return 143 if name == "SIGTERM" else 130


if __name__ == "__main__":
    sys.exit(main())
