"""Policies from checkpoints: rebuild the learner without an env, export to ONNX, play episodes."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import torch

from ._algorithms import algos_class
from ._checkpoint import load_checkpoint
from ._config import TrainConfig
from ._envs import import_modules

__all__ = [
    "actor_groups",
    "export_onnx",
    "learner_from_checkpoint",
    "play",
    "policy_from_checkpoint",
]


def _shapes(ckpt: dict[str, Any]) -> tuple[dict[str, tuple[int, ...]], int]:
    shapes = ckpt["shapes"]
    obs = {k[len("env.obs.") :]: tuple(v) for k, v in shapes.items() if k.startswith("env.obs.")}
    return obs, int(shapes["env.action_dim"][0])


def learner_from_checkpoint(ckpt: dict[str, Any] | str | os.PathLike, device: str = "cpu") -> Any:
    """A one-process learner (no gradient sync) holding rank 0's state of the checkpoint."""
    if not isinstance(ckpt, dict):
        ckpt = load_checkpoint(ckpt, map_location=device)
    config = TrainConfig.from_dict(ckpt["config"])
    obs_shapes, action_dim = _shapes(ckpt)
    if config.algo_name == "fastsac":
        learner = algos_class("FastSAC")(
            obs_shapes, action_dim, config.algo, num_envs=1, world_size=1, device=device
        )
    else:
        algo = config.algo
        if config.algo_name == "distill":  # the teacher's shape is in the saved state
            algo = _teacher_config(algo, ckpt["learner"][0]["teacher"])
        cls = algos_class("PPO") if config.algo_name == "ppo" else algos_class("Distillation")
        learner = cls(obs_shapes, action_dim, algo, device=device)
    learner.load_state_dict(ckpt["learner"][0])
    learner.eval_mode()
    return learner


def _teacher_config(algo: Any, teacher_state: dict[str, Any]) -> Any:
    """The distillation config whose teacher network matches the saved teacher weights."""
    import attrs

    weights = [v for k, v in teacher_state.items() if k.endswith("weight") and v.dim() == 2]
    hidden = tuple(int(w.shape[0]) for w in weights[:-1])
    return attrs.evolve(algo, teacher=attrs.evolve(algo.teacher, hidden=hidden))


def policy_from_checkpoint(path: str | os.PathLike, device: str = "cpu") -> tuple[Any, Any, dict]:
    """(policy module, learner, checkpoint): the policy maps actor observations to actions."""
    ckpt = load_checkpoint(path, map_location=device)
    learner = learner_from_checkpoint(ckpt, device)
    policy = copy.deepcopy(learner.policy_module()).eval()
    return policy, learner, ckpt


def actor_groups(algo_config: Any) -> tuple[str, ...]:
    """The observation groups the policy reads, in the order `policy_module()` concatenates."""
    for name in ("actor_obs", "student_obs"):
        groups = getattr(algo_config, name, None)
        if groups is not None:
            return tuple(groups)
    return (algo_config.actor_obs_group,)


def policy_input(groups: tuple[str, ...], obs: Any) -> torch.Tensor:
    """The tensor `policy_module()` takes: `("obs", g)` of the actor's groups, concatenated."""
    return torch.cat([obs["obs", g] for g in groups], dim=-1)


def learner_config(ckpt: dict[str, Any]) -> Any:
    """The algorithm config stored in a checkpoint."""
    return TrainConfig.from_dict(ckpt["config"]).algo


def export_onnx(
    checkpoint: str | os.PathLike, out: str | os.PathLike, *, opset: int | None = None
) -> Path:
    """Write the checkpoint's policy (normalizer included) as ONNX: input `obs` [B, D] float32,
    output `actions` [B, A]; the batch axis is dynamic."""
    policy, _learner, ckpt = policy_from_checkpoint(checkpoint)
    obs_shapes, _ = _shapes(ckpt)
    groups = actor_groups(learner_config(ckpt))
    dim = sum(int(torch.Size(obs_shapes[g]).numel()) for g in groups)
    example = torch.zeros(2, dim)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    kwargs: dict[str, Any] = {} if opset is None else {"opset_version": opset}
    torch.onnx.export(
        policy,
        (example,),
        str(out),
        input_names=["obs"],
        output_names=["actions"],
        dynamic_axes={"obs": {0: "batch"}, "actions": {0: "batch"}},
        dynamo=False,
        **kwargs,
    )
    return out


def play(
    checkpoint: str | os.PathLike,
    *,
    episodes: int = 10,
    num_envs: int = 8,
    seed: int = 0,
    device: str = "cpu",
    max_steps: int | None = None,
) -> list[float]:
    """Run the deterministic policy until `episodes` episodes end; return their returns."""
    import unilab_envs

    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    policy, _learner, ckpt = policy_from_checkpoint(checkpoint, device)
    config = TrainConfig.from_dict(ckpt["config"])
    groups = actor_groups(config.algo)
    import_modules(config.runner.imports)
    env = unilab_envs.make(
        config.task, num_envs=num_envs, device=device, seed=seed, **dict(config.env.kwargs)
    )
    limit = max_steps if max_steps is not None else 10 * int(env.max_episode_steps) * episodes
    returns: list[float] = []
    obs = env.reset()
    with torch.no_grad():
        for _ in range(limit):
            actions = policy(policy_input(groups, obs)).clamp(-1.0, 1.0)
            step = env.step(actions)
            done = step["done"]
            if bool(done.any()):
                returns += step["episode", "return"][done].tolist()
            obs = step
            if len(returns) >= episodes:
                break
    return returns[:episodes]
