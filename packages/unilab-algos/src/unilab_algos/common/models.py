"""Actor, critic and recurrent memory modules shared by PPO and Distillation.

Parameter registration order mirrors RSL-RL 5.4.2's `MLPModel`/`RNNModel` (normalizer, std,
MLP, then RNN) so that gradient-norm clipping over `parameters()` reduces in the same order.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.distributions import Normal

from .config import GaussianConfig, NetworkConfig
from .networks import mlp
from .normalizer import EmpiricalNormalizer

__all__ = [
    "GaussianActor",
    "Memory",
    "ValueCritic",
    "convert_rsl_rl_state_dict",
    "unpad_trajectories",
]

Hidden = torch.Tensor | tuple[torch.Tensor, torch.Tensor] | None
"""GRU: h [L, B, H]; LSTM: (h, c) each [L, B, H]; None: zeros."""


def unpad_trajectories(x: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """Inverse of trajectory padding: `[T, n_traj, ...]` with `masks` [T, n_traj] -> `[T, n_env, ...]`.

    Same arithmetic as `rsl_rl.utils.unpad_trajectories` (valid steps taken env-major).
    """
    t = x.shape[0]
    valid = x.transpose(1, 0)[masks.transpose(1, 0)]
    return valid.view(-1, t, *x.shape[2:]).transpose(1, 0)


class Memory(nn.Module):
    """A GRU or LSTM with a rollout-time hidden state.

    Rollout mode (`forward(x)`, x [B, D]): one step from the internal state (zeros when None),
    which is then kept. Batch mode (`forward_padded`): padded trajectories [T, n_traj, D] from
    the given initial state, output unpadded to [T, n_env, H].
    """

    def __init__(self, in_dim: int, rnn_type: str, hidden: int, layers: int) -> None:
        super().__init__()
        if rnn_type not in ("gru", "lstm"):
            raise ValueError(f"rnn_type must be 'gru' or 'lstm', got {rnn_type!r}")
        cls = nn.GRU if rnn_type == "gru" else nn.LSTM
        self.rnn = cls(input_size=in_dim, hidden_size=hidden, num_layers=layers)
        self.rnn_type = rnn_type
        self.hidden_state: Hidden = None

    @property
    def num_states(self) -> int:
        """Number of state tensors: 1 for GRU (h), 2 for LSTM (h, c)."""
        return 1 if self.rnn_type == "gru" else 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, self.hidden_state = self.rnn(x.unsqueeze(0), self.hidden_state)
        return out.squeeze(0)

    def forward_padded(self, x: torch.Tensor, masks: torch.Tensor, hidden: Hidden) -> torch.Tensor:
        if hidden is None:
            raise ValueError("forward_padded needs the initial hidden states of the trajectories")
        out, _ = self.rnn(x, hidden)
        return unpad_trajectories(out, masks)

    def state_tensors(self, batch: int, device: torch.device) -> list[torch.Tensor]:
        """The current state as a list of [L, B, H] tensors (zeros when not yet started)."""
        if self.hidden_state is None:
            shape = (self.rnn.num_layers, batch, self.rnn.hidden_size)
            return [torch.zeros(shape, device=device) for _ in range(self.num_states)]
        hs = self.hidden_state
        return list(hs) if isinstance(hs, tuple) else [hs]

    def reset(self, dones: torch.Tensor | None = None) -> None:
        """Zero the state of done envs (`dones` [B] bool), or drop the whole state if None."""
        if dones is None:
            self.hidden_state = None
            return
        if self.hidden_state is None:
            return
        hs = self.hidden_state if isinstance(self.hidden_state, tuple) else (self.hidden_state,)
        for h in hs:
            h[..., dones.bool(), :] = 0.0

    def set_state(self, state: Hidden) -> None:
        self.hidden_state = state


class _Body(nn.Module):
    """Normalizer -> (RNN) -> MLP, shared by actor and critic."""

    def _build(
        self, obs_dim: int, out_dim: int, cfg: NetworkConfig, normalizer: EmpiricalNormalizer | None
    ) -> None:
        self.obs_dim = obs_dim
        self.obs_normalizer = normalizer if normalizer is not None else nn.Identity()
        self._pre_mlp()
        latent = cfg.rnn_hidden if cfg.recurrent else obs_dim
        self.mlp = mlp(latent, cfg.hidden, out_dim, cfg.activation)
        self.memory = (
            Memory(obs_dim, cfg.rnn_type, cfg.rnn_hidden, cfg.rnn_layers) if cfg.recurrent else None
        )

    def _pre_mlp(self) -> None:
        pass

    @property
    def is_recurrent(self) -> bool:
        return self.memory is not None

    def features(
        self, x: torch.Tensor, masks: torch.Tensor | None = None, hidden: Hidden = None
    ) -> torch.Tensor:
        """MLP output for x [B, D] (rollout) or padded [T, n_traj, D] with `masks` (update)."""
        z = self.obs_normalizer(x)
        if self.memory is not None:
            z = self.memory(z) if masks is None else self.memory.forward_padded(z, masks, hidden)
        elif masks is not None:
            z = unpad_trajectories(z, masks)
        return self.mlp(z)

    def update_normalizer(self, x: torch.Tensor) -> None:
        if isinstance(self.obs_normalizer, EmpiricalNormalizer):
            self.obs_normalizer.update(x)

    def reset(self, dones: torch.Tensor | None = None) -> None:
        if self.memory is not None:
            self.memory.reset(dones)


class GaussianActor(_Body):
    """Observation [B, D] -> action mean [B, A], with a state-independent Gaussian std.

    `forward(*groups)` concatenates the observation groups on the last axis (so it can be
    wrapped in a `tensordict.nn.TensorDictModule` with one in_key per group) and returns the
    mean; `std()` returns the clamped std [A].
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        cfg: NetworkConfig,
        head: GaussianConfig,
        normalizer: EmpiricalNormalizer | None = None,
    ) -> None:
        super().__init__()
        self.action_dim = action_dim
        self.head = head
        self._build(obs_dim, action_dim, cfg, normalizer)

    def _pre_mlp(self) -> None:
        n = 1 if self.head.shared else self.action_dim
        init = torch.full((n,), float(self.head.init_std))
        if self.head.std_param == "std":
            self.std_param = nn.Parameter(init, requires_grad=self.head.learn_std)
        else:
            self.log_std_param = nn.Parameter(torch.log(init), requires_grad=self.head.learn_std)
        lo = max(self.head.std_range[0], 1e-6)
        self._std_range = (lo, self.head.std_range[1])
        self._log_std_range = (math.log(lo), math.log(self.head.std_range[1]))

    def std(self) -> torch.Tensor:
        """Clamped std, shape [A] (or [1] when shared; broadcasts against the mean)."""
        if self.head.std_param == "std":
            return self.std_param.clamp(self._std_range[0], self._std_range[1])
        return torch.exp(self.log_std_param.clamp(self._log_std_range[0], self._log_std_range[1]))

    def distribution(self, mean: torch.Tensor) -> Normal:
        """`Normal(mean, std)` (validation off); log_prob/entropy are summed over actions by callers."""
        return Normal(mean, self.std(), validate_args=False)

    def forward(self, *groups: torch.Tensor) -> torch.Tensor:
        return self.features(torch.cat(groups, dim=-1) if len(groups) > 1 else groups[0])


class ValueCritic(_Body):
    """Observation [B, D] -> value [B] (an MLP with one output, squeezed)."""

    def __init__(
        self, obs_dim: int, cfg: NetworkConfig, normalizer: EmpiricalNormalizer | None = None
    ) -> None:
        super().__init__()
        self._build(obs_dim, 1, cfg, normalizer)

    def forward(self, *groups: torch.Tensor) -> torch.Tensor:
        x = torch.cat(groups, dim=-1) if len(groups) > 1 else groups[0]
        return self.features(x).squeeze(-1)


def convert_rsl_rl_state_dict(sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Map an RSL-RL 5.4.2 `MLPModel`/`RNNModel` state dict onto `GaussianActor`/`ValueCritic` keys.

    `obs_normalizer._mean/_var/_std` [1, D] -> `obs_normalizer.mean/var/std` [D];
    `distribution.std_param` / `distribution.log_std_param` -> `std_param` / `log_std_param`;
    `rnn.rnn.*` -> `memory.rnn.*`; `mlp.*` unchanged. The normalizer must be built with
    `mode="rsl_rl"` (float32 buffers) or the values are cast on load.
    """
    out: dict[str, torch.Tensor] = {}
    for key, value in sd.items():
        if key.startswith("obs_normalizer._"):
            out["obs_normalizer." + key[len("obs_normalizer._") :]] = value.squeeze(0)
        elif key.startswith("distribution."):
            out[key[len("distribution.") :]] = value
        elif key.startswith("rnn."):
            out["memory." + key[len("rnn.") :]] = value
        else:
            out[key] = value
    return out
