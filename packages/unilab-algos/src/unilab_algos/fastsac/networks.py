"""FastSAC networks: a tanh-squashed Gaussian actor and an ensemble of (categorical) Q networks."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "DeterministicPolicy",
    "GroupNormalizers",
    "QEnsemble",
    "SquashedGaussianActor",
    "Temperature",
    "layer_norm_mlp",
]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def layer_norm_mlp(
    in_dim: int, hidden: Sequence[int], out_dim: int, *, layer_norm: bool = True
) -> nn.Sequential:
    """`in_dim -> hidden... -> out_dim`: Linear, LayerNorm (optional), SiLU per hidden layer,
    then a final Linear (Holosoma's FastSAC trunks)."""
    layers: list[nn.Module] = []
    dims = [in_dim, *hidden]
    for a, b in itertools.pairwise(dims):
        layers += [nn.Linear(a, b), nn.LayerNorm(b) if layer_norm else nn.Identity(), nn.SiLU()]
    layers.append(nn.Linear(dims[-1], out_dim))
    return nn.Sequential(*layers)


class Temperature(nn.Module):
    """Holds the trainable `log_alpha` `(1,)` so that it is broadcast and saved like a module."""

    def __init__(self, alpha_init: float) -> None:
        super().__init__()
        self.log_alpha = nn.Parameter(torch.tensor([math.log(alpha_init)]))

    def forward(self) -> torch.Tensor:
        return self.log_alpha.exp()


class SquashedGaussianActor(nn.Module):
    """Gaussian policy squashed by tanh and scaled to the action bounds `[low, high]`.

    `log_std` is bounded smoothly: `log_std_min + (log_std_max - log_std_min) * (tanh(h) + 1) / 2`
    (SpinUp / Yarats, as Holosoma). The mean and log-std heads start at zero, so the initial
    policy is centred with `std = exp((log_std_min + log_std_max) / 2)`.

    Shapes: obs `(B, obs_dim)`, actions `(B, action_dim)`, log-probs `(B,)`.
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        hidden: Sequence[int],
        *,
        layer_norm: bool = True,
        log_std_min: float = -5.0,
        log_std_max: float = 0.0,
        action_low: float = -1.0,
        action_high: float = 1.0,
    ) -> None:
        super().__init__()
        if not action_low < action_high:
            raise ValueError(f"action_low must be < action_high, got {action_low}, {action_high}")
        self.obs_dim = obs_dim
        self.action_dim = action_dim
        self.log_std_min = float(log_std_min)
        self.log_std_max = float(log_std_max)
        trunk = layer_norm_mlp(obs_dim, hidden[:-1], hidden[-1], layer_norm=layer_norm)
        self.trunk = nn.Sequential(
            *trunk, nn.LayerNorm(hidden[-1]) if layer_norm else nn.Identity(), nn.SiLU()
        )
        self.mu = nn.Linear(hidden[-1], action_dim)
        self.log_std = nn.Linear(hidden[-1], action_dim)
        for layer in (self.mu, self.log_std):
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)
        scale = (action_high - action_low) / 2.0
        self.register_buffer("action_scale", torch.full((action_dim,), scale))
        self.register_buffer("action_bias", torch.full((action_dim,), action_low + scale))

    def distribution(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Pre-squash mean and bounded log-std, both `(B, action_dim)`."""
        h = self.trunk(obs)
        t = torch.tanh(self.log_std(h))
        log_std = self.log_std_min + 0.5 * (self.log_std_max - self.log_std_min) * (t + 1.0)
        return self.mu(h), log_std

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Deterministic action `tanh(mean) * scale + bias`, `(B, action_dim)`."""
        mean = self.mu(self.trunk(obs))
        return torch.tanh(mean) * self.action_scale + self.action_bias

    def sample(self, obs: torch.Tensor, noise: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Reparameterized sample with the given standard-normal `noise` `(B, action_dim)`.

        Returns the scaled action and its log-density `(B,)` including the tanh and scale
        Jacobians; `log(1 - tanh(u)^2)` is computed as `2 (log 2 - u - softplus(-2u))`, which
        is exact where the usual `+1e-6` form saturates.
        """
        mean, log_std = self.distribution(obs)
        u = mean + log_std.exp() * noise
        log_prob = -0.5 * noise.pow(2) - log_std - _LOG_SQRT_2PI
        log_det = 2.0 * (math.log(2.0) - u - F.softplus(-2.0 * u))
        log_prob = (log_prob - log_det - torch.log(self.action_scale)).sum(-1)
        return torch.tanh(u) * self.action_scale + self.action_bias, log_prob


class QEnsemble(nn.Module):
    """`num_q` independent Q networks on `concat(obs, action)`.

    Each network outputs `num_atoms` logits over the fixed support `linspace(v_min, v_max,
    num_atoms)` (categorical critic) or, with `num_atoms == 1`, the Q value itself (scalar
    critic). `forward` returns `(num_q, B, num_atoms)`; `value` returns `(num_q, B)`.
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        hidden: Sequence[int],
        *,
        num_q: int = 2,
        num_atoms: int = 101,
        v_min: float = -20.0,
        v_max: float = 20.0,
        layer_norm: bool = True,
    ) -> None:
        super().__init__()
        self.num_atoms = num_atoms
        self.v_min = float(v_min)
        self.v_max = float(v_max)
        self.nets = nn.ModuleList(
            layer_norm_mlp(obs_dim + action_dim, hidden, num_atoms, layer_norm=layer_norm)
            for _ in range(num_q)
        )
        self.register_buffer("support", torch.linspace(v_min, v_max, max(num_atoms, 2)))

    @property
    def distributional(self) -> bool:
        return self.num_atoms > 1

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        x = torch.cat([obs, action], dim=-1)
        return torch.stack([net(x) for net in self.nets], dim=0)

    def value(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Expected Q value of each network, `(num_q, B)`."""
        out = self(obs, action)
        if not self.distributional:
            return out.squeeze(-1)
        return (out.float().softmax(-1) * self.support).sum(-1)


class GroupNormalizers(nn.Module):
    """Raw observations of several groups, concatenated `(B, sum(dims))`, normalized group by
    group and concatenated again: the policy input of an actor that reads more than one
    group (its normalizers are the learner's, shared)."""

    def __init__(self, normalizers: list[nn.Module], dims: list[int]) -> None:
        super().__init__()
        self.normalizers = nn.ModuleList(normalizers)
        self.dims = list(dims)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        parts = torch.split(obs, self.dims, dim=-1)
        return torch.cat([n(x) for n, x in zip(self.normalizers, parts, strict=True)], dim=-1)


class DeterministicPolicy(nn.Module):
    """Observation -> deterministic action in `[low, high]`, normalizer included (for play and
    ONNX export). Input `(B, obs_dim)` raw observations, output `(B, action_dim)`."""

    def __init__(self, normalizer: nn.Module, actor: SquashedGaussianActor) -> None:
        super().__init__()
        self.normalizer = normalizer
        self.actor = actor

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor(self.normalizer(obs))
