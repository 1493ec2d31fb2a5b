"""The deterministic policy's control loop: `unilab play`, `unilab eval`, the viewer and the
runner's periodic evaluation all step their env through `rollout`."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import torch

from ._env_features import env_features

__all__ = ["PolicyStepper", "actor_groups", "bound_actions", "policy_input", "rollout"]


def actor_groups(algo_config: Any) -> tuple[str, ...]:
    """The observation groups the policy reads, in the order `policy_module()` concatenates."""
    groups = getattr(algo_config, "actor_obs", None)  # Distillation's actor is its student
    return tuple(algo_config.student_obs if groups is None else groups)


def policy_input(groups: tuple[str, ...], obs: Any) -> torch.Tensor:
    """The tensor `policy_module()` takes: `("obs", g)` of the actor's groups, concatenated."""
    return torch.cat([obs["obs", g] for g in groups], dim=-1)


def bound_actions(bound: float | None, actions: torch.Tensor) -> torch.Tensor:
    """`actions` clamped as the env's task wants: to [-b, b] with b = `bound`, the env's
    `features.action_bound` (its `TaskSpec.action_bound`), unchanged when that is None (MJLab's
    tasks act unbounded). An env that reports no features gets UniLab's default contract,
    [-1, 1]."""
    return actions if bound is None else actions.clamp(-bound, bound)


class PolicyStepper:
    """Deterministic actions from a `policy_module()`, one env step at a time.

    A feed-forward module maps the actor observation to the action. A recurrent one
    (`(obs, h[, c]) -> (mean, h[, c])`, PPO's and Distillation's recurrent export) carries a
    hidden state per world: zero at the start and zeroed by `reset(done)` where an episode
    ended, as the actor's memory is during training.
    """

    def __init__(self, policy: torch.nn.Module, num_envs: int, device: str | torch.device) -> None:
        self.policy = policy
        self.state: tuple[torch.Tensor, ...] | None = None
        rnn = getattr(policy, "rnn", None)
        if rnn is not None:
            shape = (rnn.num_layers, num_envs, rnn.hidden_size)
            count = 2 if isinstance(rnn, torch.nn.LSTM) else 1
            self.state = tuple(torch.zeros(shape, device=device) for _ in range(count))

    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        if self.state is None:
            return self.policy(obs)
        out = self.policy(obs, *self.state)
        self.state = tuple(out[1:])
        return out[0]

    def reset(self, done: torch.Tensor) -> None:
        """Zero the hidden state of the worlds whose episode ended (`done` [N] bool)."""
        if self.state is not None:
            for h in self.state:
                h[:, done] = 0.0


def rollout(
    env: Any, stepper: PolicyStepper, groups: tuple[str, ...], obs: Any, steps: int | None = None
) -> Iterator[tuple[Any, Any]]:
    """The deterministic policy's control loop, the one `play_episodes` (and so `unilab play`,
    `unilab eval`, the viewer) and the runner's evaluator run: per control step the actions of
    `stepper` on the actor groups of `obs`, bounded as the task wants (`bound_actions`), one
    env step, and the recurrent state zeroed where an episode ended. Yields (the observation
    the policy acted on, the step's output); `steps` None runs until the caller stops."""
    bound = env_features(env).action_bound
    for _ in itertools.count() if steps is None else range(steps):
        actions = bound_actions(bound, stepper(policy_input(groups, obs)))
        step = env.step(actions)
        stepper.reset(step["done"])
        yield obs, step
        obs = step
