"""A toy on-policy algorithm registered from its own module (the extension-point test).

Its config, its learner and one `register_algorithm` call are all it takes: no line of
integration names it. The learner is a linear Gaussian policy trained by a plain
policy-gradient step on the iteration's rewards (what it learns does not matter here; that
the runner drives it, syncs it, checkpoints, plays and resumes it does).
"""

from __future__ import annotations

from typing import Any

import attrs
import torch
from torch import nn

from unilab_integration import AlgorithmSpec, register_algorithm


@attrs.frozen(kw_only=True)
class ToyConfig:
    learning_rate: float = 1e-2
    init_std: float = 0.5
    actor_obs: tuple[str, ...] = ("policy",)


class _Mean(nn.Module):
    def __init__(self, obs_dim: int, action_dim: int) -> None:
        super().__init__()
        self.linear = nn.Linear(obs_dim, action_dim)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.linear(obs)


class ToyLearner:
    def __init__(self, obs_shapes, action_dim, cfg: ToyConfig, *, device, grad_sync=None):
        self.config, self.device, self.grad_sync = cfg, torch.device(device), grad_sync
        obs_dim = sum(obs_shapes[g][0] for g in cfg.actor_obs)
        self.actor = _Mean(obs_dim, action_dim).to(self.device)
        self.log_std = nn.Parameter(torch.full((action_dim,), float(cfg.init_std)).log())
        self.optimizer = torch.optim.SGD(
            [*self.actor.parameters(), self.log_std], lr=cfg.learning_rate
        )
        self.obs: list[torch.Tensor] = []
        self.actions: list[torch.Tensor] = []
        self.rewards: list[torch.Tensor] = []

    def _input(self, obs) -> torch.Tensor:
        return torch.cat([obs["obs", g] for g in self.config.actor_obs], dim=-1)

    def init_storage(self, num_envs: int, num_steps: int) -> None:
        self.num_envs, self.num_steps = num_envs, num_steps

    @property
    def capture_status(self) -> dict[str, Any]:
        return {}  # nothing captured in a CUDA graph

    def train_mode(self) -> None:
        self.actor.train()

    def eval_mode(self) -> None:
        self.actor.eval()

    def act(self, obs) -> torch.Tensor:
        x = self._input(obs)
        actions = self.actor(x) + self.log_std.exp() * torch.randn(
            x.shape[0], self.log_std.shape[0], device=x.device
        )
        self.obs.append(x)
        self.actions.append(actions)
        return actions

    def process_env_step(self, step) -> None:
        self.rewards.append(step["reward"])

    def compute_returns(self, obs) -> None:
        pass

    def update(self) -> dict[str, float]:
        obs, actions = torch.cat(self.obs), torch.cat(self.actions)
        rewards = torch.cat(self.rewards)
        advantage = rewards - rewards.mean()
        dist = torch.distributions.Normal(self.actor(obs), self.log_std.exp())
        loss = -(advantage * dist.log_prob(actions).sum(-1)).mean()
        self.optimizer.zero_grad()
        loss.backward()
        collectives = 0
        if self.grad_sync is not None:
            self.grad_sync([*self.actor.parameters(), self.log_std], None)
            collectives = 1
        self.optimizer.step()
        self.obs, self.actions, self.rewards = [], [], []
        return {"loss": float(loss), "collectives": float(collectives)}

    def optimizers(self) -> list[torch.optim.Optimizer]:
        return [self.optimizer]

    def policy_module(self) -> nn.Module:
        return self.actor

    def replicated_modules(self) -> list[nn.Module]:
        holder = nn.Module()
        holder.actor, holder.log_std = self.actor, self.log_std
        return [holder]

    def state_dict(self) -> dict[str, Any]:
        return {
            "actor": self.actor.state_dict(),
            "log_std": self.log_std.detach().clone(),
            "optimizer": self.optimizer.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.actor.load_state_dict(state["actor"])
        with torch.no_grad():
            self.log_std.copy_(state["log_std"])
        self.optimizer.load_state_dict(state["optimizer"])


def _build(obs_shapes, action_dim, algo, *, device, grad_sync, **_):
    return ToyLearner(obs_shapes, action_dim, algo, device=device, grad_sync=grad_sync)


register_algorithm(
    AlgorithmSpec(
        name="toy",
        kind="on-policy",
        description="a linear policy-gradient toy (integration's extension-point test)",
        presets=("default",),
        config_factory=lambda preset: ToyConfig(),
        learner_factory=_build,
    )
)
