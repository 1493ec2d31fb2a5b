"""Learners and policies restored from a checkpoint, without an env (what play, export and
evaluation start from), and the env's curriculum restored to the checkpoint's level."""

from __future__ import annotations

import copy
import os
from typing import TYPE_CHECKING, Any

import attrs

from ._algorithms import algorithm_spec
from ._checkpoint import load_checkpoint
from ._config import TrainConfig
from ._env_features import env_features

if TYPE_CHECKING:
    from unilab_algos import Learner

__all__ = [
    "checkpoint_shapes",
    "learner_from_checkpoint",
    "policy_from_checkpoint",
    "restore_curriculum",
]


def checkpoint_shapes(ckpt: dict[str, Any]) -> tuple[dict[str, tuple[int, ...]], int]:
    """(observation shape per group, action dim) of the env a checkpoint was trained on."""
    shapes = ckpt["shapes"]
    obs = {k[len("env.obs.") :]: tuple(v) for k, v in shapes.items() if k.startswith("env.obs.")}
    return obs, int(shapes["env.action_dim"][0])


def learner_from_checkpoint(
    ckpt: dict[str, Any] | str | os.PathLike, device: str = "cpu"
) -> Learner:
    """A one-process learner (no gradient sync) holding rank 0's state of the checkpoint."""
    if not isinstance(ckpt, dict):
        ckpt = load_checkpoint(ckpt, map_location=device)
    config = TrainConfig.from_dict(ckpt["config"])
    obs_shapes, action_dim = checkpoint_shapes(ckpt)
    spec = algorithm_spec(config.algo_name)
    algo = config.algo
    state = ckpt["learner"][0]
    if spec.teacher:
        algo = _teacher_config(algo, state["teacher"])
    learner = spec.build_learner(obs_shapes, action_dim, algo, device=device)
    if spec.replay:  # a saved replay shard (runner.checkpoints.replay) is not needed to act
        state = {k: v for k, v in state.items() if k != "replay"}
    learner.load_state_dict(state)
    learner.eval_mode()
    return learner


def _teacher_config(algo: Any, teacher_state: dict[str, Any]) -> Any:
    """The distillation config a checkpoint's learner was built with.

    Its saved config holds the teacher's network (the runner records it). Checkpoints written
    before it did hold the default teacher config: for those alone the hidden sizes are read
    from the saved teacher's weights, and the activation and the rest stay the config's."""
    weights = [v for k, v in teacher_state.items() if k.endswith("weight") and v.dim() == 2]
    hidden = tuple(int(w.shape[0]) for w in weights[:-1])
    if tuple(algo.teacher.hidden) == hidden:
        return algo
    return attrs.evolve(algo, teacher=attrs.evolve(algo.teacher, hidden=hidden))


def policy_from_checkpoint(
    path: str | os.PathLike | dict[str, Any], device: str = "cpu"
) -> tuple[Any, Any, dict]:
    """(policy module, learner, checkpoint): the policy maps actor observations to actions.

    `path` may also be a loaded checkpoint dict (e.g. a converted MJLab checkpoint)."""
    ckpt = path if isinstance(path, dict) else load_checkpoint(path, map_location=device)
    learner = learner_from_checkpoint(ckpt, device)
    policy = copy.deepcopy(learner.policy_module()).eval()
    return policy, learner, ckpt


def restore_curriculum(env: Any, ckpt: dict[str, Any]) -> float | None:
    """Put rank 0's curriculum state from `ckpt` into `env` (before its reset); return the level.

    A policy is evaluated under the commands it was trained at: without this, a fresh env
    starts at the curriculum's first level. Returns None when the env has no curriculum; a
    checkpoint without curriculum state (an env that had none) leaves the env as it is.
    """
    curriculum = env_features(env).curriculum
    if curriculum is None:
        return None
    states = ckpt.get("curriculum") or [None]
    if states[0] is not None:
        curriculum.load_state_dict(states[0])
    return float(curriculum.level)
