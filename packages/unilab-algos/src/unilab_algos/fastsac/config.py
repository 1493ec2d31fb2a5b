"""Configuration of the FastSAC learner (defaults from Holosoma's FastSAC)."""

from __future__ import annotations

from typing import Literal

import attrs
from attrs import validators as v

from ..common.config import CAPTURE_SETTINGS, CaptureSetting, capture_setting, obs_groups

__all__ = ["FastSACConfig"]


def _positive(_inst: object, attr: attrs.Attribute, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{attr.name} must be > 0, got {value!r}")


def _non_negative(_inst: object, attr: attrs.Attribute, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ValueError(f"{attr.name} must be >= 0, got {value!r}")


def _positive_int(_inst: object, attr: attrs.Attribute, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{attr.name} must be a positive int, got {value!r}")


def _non_negative_int(_inst: object, attr: attrs.Attribute, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{attr.name} must be a non-negative int, got {value!r}")


def _unit_interval(_inst: object, attr: attrs.Attribute, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 < value <= 1.0:
        raise ValueError(f"{attr.name} must be in (0, 1], got {value!r}")


def _hidden(_inst: object, attr: attrs.Attribute, value: object) -> None:
    if (
        not isinstance(value, tuple)
        or not value
        or any(isinstance(h, bool) or not isinstance(h, int) or h <= 0 for h in value)
    ):
        raise ValueError(f"{attr.name} must be a non-empty tuple of positive ints, got {value!r}")


def _to_tuple(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


@attrs.frozen(kw_only=True)
class FastSACConfig:
    """Settings of `FastSAC`. Defaults follow Holosoma's FastSAC unless noted.

    Batch and replay sizes are *global* (all ranks together) and split across ranks with
    `unilab_storage.split_global`; `transitions_per_env` is per environment and so already
    scales with the number of environments a rank owns.

    Attributes:
        gamma: discount per environment step.
        tau: Polyak coefficient of the target critics, `target += tau * (online - target)`.
        batch_size: global transitions per critic update (split across ranks).
        num_updates: critic updates per `update()` call (the runner calls it once per env step).
        policy_frequency: the actor and the temperature are updated together with every
            `policy_frequency`-th critic update (update numbers k, 2k, 3k, ..., counted from 1
            over the learner's lifetime).
        n_step: length of the n-step return taken from the replay shard.
        transitions_per_env: replay capacity per environment (Holosoma's `buffer_size`).
        replay_capacity: global replay capacity in transitions; when set it overrides
            `transitions_per_env * num_envs` and is split across ranks.
        learning_starts: `update()` does nothing until this many env steps were observed.
        actor_lr, critic_lr, alpha_lr: AdamW learning rates.
        weight_decay: AdamW weight decay of actor and critic.
        alpha_weight_decay: AdamW weight decay of the log-temperature (Holosoma leaves PyTorch's
            default 0.01 there, which pulls the temperature toward 1; UniLab defaults to 0).
        betas: AdamW betas of all three optimizers.
        adam_eps: AdamW epsilon of all three optimizers.
        max_grad_norm: clip actor and critic gradients to this global norm; 0 disables.
        actor_hidden, critic_hidden: hidden widths (Holosoma: 512 -> 256 -> 128 and
            768 -> 384 -> 192).
        layer_norm: LayerNorm after every hidden linear layer.
        num_q: number of Q networks (ensemble size).
        distributional: categorical critic (C51-style) when True, scalar critic when False.
        num_atoms, v_min, v_max: the fixed categorical support.
        log_std_min, log_std_max: bounds of the actor's log standard deviation (tanh-squashed).
        alpha_init: initial temperature.
        autotune: learn the temperature toward `target_entropy`.
        target_entropy_ratio: target entropy is `-target_entropy_ratio * action_dim`.
        normalize_obs: a running normalizer per observation group, in front of the actor and
            the critic (PPO's `NetworkConfig.normalize_obs`).
        obs_norm_scope: `"global"` (exact count-weighted moments merged across ranks with the
            injected `reduce_sum`, updated every env step) or `"local"` (per-rank statistics),
            as PPO's.
        normalizer_eps: added to the normalizer's std.
        actor_obs, critic_obs: observation groups the actor and the critic read, concatenated
            in this order (they may share groups), as PPO's.
        bf16: run the networks under bfloat16 autocast (Holosoma enables it on GPUs).
        capture: the update step in CUDA graphs, as PPO's setting: "auto" (where possible:
            CUDA devices; eager on CPU, and after a capture that raised), "cuda_graph" (the
            same, warning when it runs eagerly) or "none"; `FastSAC.capture_status["update"]`
            says which. A bool (older configs) reads as "auto" (True) or "none" (False).
        capture_warmup: eager calls of each half of each kind of step before its capture (they
            initialize the optimizer state and the CUDA libraries' workspaces; real updates).
    """

    gamma: float = attrs.field(default=0.97, validator=_unit_interval)
    tau: float = attrs.field(default=0.125, validator=_unit_interval)
    batch_size: int = attrs.field(default=8192, validator=_positive_int)
    num_updates: int = attrs.field(default=8, validator=_positive_int)
    policy_frequency: int = attrs.field(default=4, validator=_positive_int)
    n_step: int = attrs.field(default=1, validator=_positive_int)
    transitions_per_env: int = attrs.field(default=1024, validator=_positive_int)
    replay_capacity: int | None = attrs.field(default=None, validator=v.optional(_positive_int))
    learning_starts: int = attrs.field(default=10, validator=_non_negative_int)

    actor_lr: float = attrs.field(default=3e-4, validator=_positive)
    critic_lr: float = attrs.field(default=3e-4, validator=_positive)
    alpha_lr: float = attrs.field(default=3e-4, validator=_positive)
    weight_decay: float = attrs.field(default=1e-3, validator=_non_negative)
    alpha_weight_decay: float = attrs.field(default=0.0, validator=_non_negative)
    betas: tuple[float, float] = attrs.field(default=(0.9, 0.95), converter=_to_tuple)
    adam_eps: float = attrs.field(default=1e-8, validator=_positive)
    max_grad_norm: float = attrs.field(default=0.0, validator=_non_negative)

    actor_hidden: tuple[int, ...] = attrs.field(
        default=(512, 256, 128), converter=_to_tuple, validator=_hidden
    )
    critic_hidden: tuple[int, ...] = attrs.field(
        default=(768, 384, 192), converter=_to_tuple, validator=_hidden
    )
    layer_norm: bool = attrs.field(default=True, validator=v.instance_of(bool))
    num_q: int = attrs.field(default=2, validator=_positive_int)
    distributional: bool = attrs.field(default=True, validator=v.instance_of(bool))
    num_atoms: int = attrs.field(default=101, validator=_positive_int)
    v_min: float = attrs.field(default=-20.0)
    v_max: float = attrs.field(default=20.0)
    log_std_min: float = attrs.field(default=-5.0)
    log_std_max: float = attrs.field(default=0.0)

    alpha_init: float = attrs.field(default=1e-3, validator=_positive)
    autotune: bool = attrs.field(default=True, validator=v.instance_of(bool))
    target_entropy_ratio: float = attrs.field(default=0.0)

    normalize_obs: bool = attrs.field(default=True, validator=v.instance_of(bool))
    obs_norm_scope: Literal["global", "local"] = attrs.field(
        default="global", validator=v.in_(("global", "local"))
    )
    normalizer_eps: float = attrs.field(default=1e-2, validator=_non_negative)
    actor_obs: tuple[str, ...] = attrs.field(
        default=("policy",), converter=tuple, validator=obs_groups
    )
    critic_obs: tuple[str, ...] = attrs.field(
        default=("critic",), converter=tuple, validator=obs_groups
    )

    bf16: bool = attrs.field(default=False, validator=v.instance_of(bool))
    capture: CaptureSetting | bool = attrs.field(
        default="auto", converter=capture_setting, validator=v.in_(CAPTURE_SETTINGS)
    )
    capture_warmup: int = attrs.field(default=3, validator=_positive_int)

    @betas.validator
    def _check_betas(self, attr: attrs.Attribute, value: object) -> None:
        if (
            not isinstance(value, tuple)
            or len(value) != 2
            or not all(isinstance(b, int | float) and 0.0 <= b < 1.0 for b in value)
        ):
            raise ValueError(f"betas must be two floats in [0, 1), got {value!r}")

    def __attrs_post_init__(self) -> None:
        if not self.v_min < self.v_max:
            raise ValueError(f"v_min must be < v_max, got {self.v_min} >= {self.v_max}")
        if self.distributional and self.num_atoms < 2:
            raise ValueError(f"a distributional critic needs num_atoms >= 2, got {self.num_atoms}")
        if not self.log_std_min < self.log_std_max:
            raise ValueError(
                f"log_std_min must be < log_std_max, got {self.log_std_min} >= {self.log_std_max}"
            )
