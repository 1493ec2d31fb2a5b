"""Configs shared by the on-policy learners: network shapes and the Gaussian policy head."""

from __future__ import annotations

from typing import Literal

import attrs

__all__ = [
    "ACTIVATION_NAMES",
    "CAPTURE_SETTINGS",
    "CaptureSetting",
    "GaussianConfig",
    "NetworkConfig",
    "capture_setting",
    "obs_groups",
]

ACTIVATION_NAMES: tuple[str, ...] = (
    "elu", "selu", "relu", "lrelu", "leaky_relu", "tanh", "sigmoid", "silu", "swish", "crelu",
    "gelu", "mish", "softplus", "identity",
)  # fmt: skip
"""Activation names a `NetworkConfig` accepts (`networks.ACTIVATIONS` maps each to a module):
RSL-RL's names plus a few. Here without torch, so that a config is checked before it loads."""

CaptureSetting = Literal["auto", "none", "cuda_graph"]
"""A learner config's `capture`: where possible ("auto"), never ("none"), or where possible with
a warning when it is not ("cuda_graph")."""
CAPTURE_SETTINGS: tuple[str, ...] = ("auto", "none", "cuda_graph")


def capture_setting(value: object) -> object:
    """A config's `capture` as a `CaptureSetting`: a bool (what older FastSAC configs and
    checkpoints hold, and `--set algo.capture=false`) reads as "auto" (True) or "none"."""
    if isinstance(value, bool):
        return "auto" if value else "none"
    return value


def obs_groups(_inst: object, attr: attrs.Attribute, value: tuple[str, ...]) -> None:
    """attrs validator of a learner's observation groups (`actor_obs`, `critic_obs`, ...): a
    non-empty tuple of group names, concatenated in this order into the network's input."""
    if not value or any(not isinstance(g, str) or not g for g in value):
        raise ValueError(f"{attr.name} must be a non-empty tuple of group names, got {value!r}")


def _positive_ints(_inst: object, attr: attrs.Attribute, value: tuple[int, ...]) -> None:
    if any(not isinstance(v, int) or isinstance(v, bool) or v <= 0 for v in value):
        raise ValueError(f"{attr.name} must hold positive ints, got {value!r}")


def _activation(_inst: object, attr: attrs.Attribute, value: str) -> None:
    if value not in ACTIVATION_NAMES:
        raise ValueError(
            f"{attr.name}: unknown activation {value!r}; one of {sorted(ACTIVATION_NAMES)}"
        )


@attrs.frozen(kw_only=True)
class NetworkConfig:
    """One network (actor, critic or student): optional RNN, then an MLP.

    `rnn_type` None gives a feed-forward MLP on the (normalized) observation; "gru"/"lstm" put a
    recurrent layer of `rnn_hidden` units x `rnn_layers` before the MLP (RSL-RL's RNNModel).
    `normalize_obs` adds an `EmpiricalNormalizer` in front (statistics scope set by the learner).
    """

    hidden: tuple[int, ...] = attrs.field(
        default=(512, 256, 128), converter=tuple, validator=_positive_ints
    )
    activation: str = attrs.field(default="elu", validator=_activation)
    normalize_obs: bool = True
    rnn_type: Literal["gru", "lstm"] | None = attrs.field(
        default=None, validator=attrs.validators.in_((None, "gru", "lstm"))
    )
    rnn_hidden: int = attrs.field(default=256, validator=attrs.validators.gt(0))
    rnn_layers: int = attrs.field(default=1, validator=attrs.validators.gt(0))

    @property
    def recurrent(self) -> bool:
        return self.rnn_type is not None


@attrs.frozen(kw_only=True)
class GaussianConfig:
    """State-independent diagonal Gaussian head.

    `std_param`: "std" learns the std itself (RSL-RL's default `std_type="scalar"`), "log_std"
    learns its log (RSL-RL's `std_type="log"`). `shared`: one value for all action dims (scalar)
    instead of one per action. The std is clamped to `std_range`.
    """

    init_std: float = attrs.field(default=1.0, validator=attrs.validators.gt(0.0))
    std_param: Literal["std", "log_std"] = attrs.field(
        default="std", validator=attrs.validators.in_(("std", "log_std"))
    )
    shared: bool = False
    learn_std: bool = True
    std_range: tuple[float, float] = attrs.field(default=(1e-6, 1e6), converter=tuple)

    @std_range.validator
    def _check_range(self, _attr: attrs.Attribute, value: tuple[float, float]) -> None:
        if len(value) != 2 or not 0.0 <= value[0] < value[1]:
            raise ValueError(f"std_range must be (low, high) with 0 <= low < high, got {value!r}")
