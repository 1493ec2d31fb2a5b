"""An untrained cart-pole PPO run folder for the tests of `unilab play` (video, progress)."""

from __future__ import annotations

from pathlib import Path

from unilab_integration import apply_overrides, make_config, save_checkpoint
from unilab_integration._algorithms import algos_class

EPISODE_STEPS = 12  # cartpole-balance with max_episode_steps=12, step_dt 0.02 s -> 50 fps


def write_untrained_cartpole_run(run: Path) -> Path:
    """RUN/checkpoints with one checkpoint of a freshly initialized PPO learner (seed 0)."""
    import torch

    torch.manual_seed(0)
    cfg = make_config("cartpole-balance", "ppo")
    cfg = apply_overrides(cfg, [f'env.kwargs={{"max_episode_steps": {EPISODE_STEPS}}}'])
    obs = {"policy": (5,), "critic": (5,)}
    learner = algos_class("PPO")(obs, 1, cfg.algo, device="cpu")
    payload = {
        "task": cfg.task,
        "algo_name": "ppo",
        "config": cfg.to_dict(),
        "shapes": {"env.obs.policy": (5,), "env.obs.critic": (5,), "env.action_dim": (1,)},
        "learner": [learner.state_dict()],
    }
    save_checkpoint(run / "checkpoints", 1, payload)
    return run
