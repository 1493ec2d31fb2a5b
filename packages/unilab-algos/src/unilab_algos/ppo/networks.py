"""PPO networks: Gaussian actor, value critic (TensorDict-module wrapped) and the RND module."""

from __future__ import annotations

import copy
from collections.abc import Mapping

import torch
from tensordict.nn import TensorDictModule
from torch import nn

from ..common.config import GaussianConfig, NetworkConfig
from ..common.models import GaussianActor, ValueCritic
from ..common.networks import mlp
from ..common.normalizer import EmpiricalNormalizer
from ..common.sync import ReduceSum
from .config import RNDConfig

__all__ = ["RND", "ExportPolicy", "build_actor", "build_critic", "obs_dim", "td_module"]


def obs_dim(obs_shapes: Mapping[str, tuple[int, ...]], groups: tuple[str, ...]) -> int:
    """The width of the observation groups `groups` concatenated (each group 1-D)."""
    dim = 0
    for g in groups:
        if g not in obs_shapes:
            raise ValueError(f"observation group {g!r} not in obs_shapes {sorted(obs_shapes)}")
        shape = tuple(obs_shapes[g])
        if len(shape) != 1:
            raise ValueError(f"observation group {g!r} must be 1-D, got shape {shape}")
        dim += shape[0]
    return dim


def _normalizer(dim: int, cfg: NetworkConfig, mode: str, reduce_sum: ReduceSum | None):
    if not cfg.normalize_obs:
        return None
    return EmpiricalNormalizer(dim, reduce_sum=reduce_sum, mode=mode)  # type: ignore[arg-type]


def build_actor(
    obs_dim: int,
    action_dim: int,
    cfg: NetworkConfig,
    head: GaussianConfig,
    *,
    norm_mode: str = "exact",
    reduce_sum: ReduceSum | None = None,
) -> GaussianActor:
    """A Gaussian actor `obs [B, obs_dim] -> mean [B, action_dim]` with its own normalizer."""
    return GaussianActor(
        obs_dim, action_dim, cfg, head, _normalizer(obs_dim, cfg, norm_mode, reduce_sum)
    )


def build_critic(
    obs_dim: int,
    cfg: NetworkConfig,
    *,
    norm_mode: str = "exact",
    reduce_sum: ReduceSum | None = None,
) -> ValueCritic:
    """A value critic `obs [B, obs_dim] -> value [B]` with its own normalizer."""
    return ValueCritic(obs_dim, cfg, _normalizer(obs_dim, cfg, norm_mode, reduce_sum))


def td_module(module: nn.Module, groups: tuple[str, ...], out_key: str) -> TensorDictModule:
    """Wrap an actor/critic as a TensorDictModule reading `("obs", g)` for each group."""
    return TensorDictModule(module, in_keys=[("obs", g) for g in groups], out_keys=[out_key])


class ExportPolicy(nn.Module):
    """Deterministic feed-forward policy `obs [B, D] -> action mean [B, A]`, normalizer included.

    Holds detached copies (no reducer, eval mode); safe to `torch.onnx.export`.
    """

    def __init__(self, actor: GaussianActor) -> None:
        super().__init__()
        if actor.is_recurrent:
            raise ValueError("ExportPolicy is feed-forward; use ExportRecurrentPolicy")
        norm = actor.obs_normalizer
        self.obs_normalizer = (
            norm.detached_copy() if isinstance(norm, EmpiricalNormalizer) else nn.Identity()
        )
        self.mlp = copy.deepcopy(actor.mlp)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.obs_normalizer(obs))


class ExportRecurrentPolicy(nn.Module):
    """Deterministic recurrent policy `(obs [B, D], h [L, B, H](, c)) -> (mean, h(, c))`."""

    def __init__(self, actor: GaussianActor) -> None:
        super().__init__()
        if not actor.is_recurrent:
            raise ValueError("ExportRecurrentPolicy needs a recurrent actor")
        norm = actor.obs_normalizer
        self.obs_normalizer = (
            norm.detached_copy() if isinstance(norm, EmpiricalNormalizer) else nn.Identity()
        )
        self.rnn = copy.deepcopy(actor.memory.rnn)
        self.mlp = copy.deepcopy(actor.mlp)
        self.is_lstm = isinstance(self.rnn, nn.LSTM)

    def forward(self, obs: torch.Tensor, h: torch.Tensor, c: torch.Tensor | None = None):
        x = self.obs_normalizer(obs).unsqueeze(0)
        if self.is_lstm:
            y, (h2, c2) = self.rnn(x, (h, c))
            return self.mlp(y.squeeze(0)), h2, c2
        y, h2 = self.rnn(x, h)
        return self.mlp(y.squeeze(0)), h2


class RND(nn.Module):
    """Random Network Distillation: frozen `target`, trained `predictor`, state normalizer.

    `intrinsic_reward(state [N, D]) -> [N]` = `weight * ||target - predictor||_2`;
    `loss(state [B, D])` = MSE(predictor, target) (predictor grads only).
    """

    def __init__(self, state_dim: int, cfg: RNDConfig, reduce_sum: ReduceSum | None) -> None:
        super().__init__()
        self.config = cfg
        self.state_normalizer = (
            EmpiricalNormalizer(state_dim, reduce_sum=reduce_sum, until=int(1e8))
            if cfg.state_normalization
            else nn.Identity()
        )
        self.predictor = mlp(state_dim, cfg.predictor_hidden, cfg.num_outputs, cfg.activation)
        self.target = mlp(state_dim, cfg.target_hidden, cfg.num_outputs, cfg.activation)
        self.target.requires_grad_(False)

    def update_normalizer(self, state: torch.Tensor) -> None:
        if isinstance(self.state_normalizer, EmpiricalNormalizer):
            self.state_normalizer.update(state)

    @torch.no_grad()
    def intrinsic_reward(self, state: torch.Tensor) -> torch.Tensor:
        s = self.state_normalizer(state)
        return self.config.weight * torch.linalg.norm(self.target(s) - self.predictor(s), dim=1)

    def loss(self, state: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            s = self.state_normalizer(state)
            target = self.target(s)
        return nn.functional.mse_loss(self.predictor(s), target)
