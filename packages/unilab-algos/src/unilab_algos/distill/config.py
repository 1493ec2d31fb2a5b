"""`DistillationConfig`: student-teacher behaviour cloning settings."""

from __future__ import annotations

from typing import Literal

import attrs

from ..common.config import GaussianConfig, NetworkConfig, obs_groups

__all__ = ["DistillationConfig"]


@attrs.frozen(kw_only=True)
class DistillationConfig:
    """Student-teacher distillation (RSL-RL's `Distillation`).

    The student acts (samples), the teacher labels (deterministic mean). `update()` walks the
    rollout time step by time step (`num_epochs` times), accumulating the per-step loss
    (`loss` "mse" or "huber", a mean over N x A) and taking one optimizer step every
    `gradient_length` steps (a counter that runs across epochs). `reduction` "sum" (RSL-RL)
    backpropagates the sum of the accumulated per-step losses, "mean" their mean. A trailing
    window shorter than `gradient_length` is dropped ("drop", RSL-RL) or stepped ("flush").
    """

    student: NetworkConfig = attrs.field(factory=NetworkConfig)
    teacher: NetworkConfig = attrs.field(factory=NetworkConfig)
    policy: GaussianConfig = attrs.field(factory=GaussianConfig)
    student_obs: tuple[str, ...] = attrs.field(
        default=("policy",), converter=tuple, validator=obs_groups
    )
    teacher_obs: tuple[str, ...] = attrs.field(
        default=("policy",), converter=tuple, validator=obs_groups
    )
    num_epochs: int = attrs.field(default=1, validator=attrs.validators.gt(0))
    gradient_length: int = attrs.field(default=15, validator=attrs.validators.gt(0))
    learning_rate: float = attrs.field(default=1e-3, validator=attrs.validators.gt(0.0))
    max_grad_norm: float | None = None
    loss: Literal["mse", "huber"] = attrs.field(
        default="mse", validator=attrs.validators.in_(("mse", "huber"))
    )
    reduction: Literal["sum", "mean"] = attrs.field(
        default="mean", validator=attrs.validators.in_(("sum", "mean"))
    )
    remainder: Literal["drop", "flush"] = attrs.field(
        default="flush", validator=attrs.validators.in_(("drop", "flush"))
    )
    obs_norm_scope: Literal["global", "local"] = attrs.field(
        default="global", validator=attrs.validators.in_(("global", "local"))
    )
    obs_norm_mode: Literal["exact", "rsl_rl"] = attrs.field(
        default="exact", validator=attrs.validators.in_(("exact", "rsl_rl"))
    )

    @classmethod
    def rsl_rl(cls, **overrides: object) -> DistillationConfig:
        """RSL-RL 5.4.2: summed window loss, trailing remainder dropped, local rsl_rl normalizer."""
        net = NetworkConfig(hidden=(256, 256, 256))
        base = dict(
            student=net,
            teacher=net,
            reduction="sum",
            remainder="drop",
            obs_norm_scope="local",
            obs_norm_mode="rsl_rl",
        )
        base.update(overrides)
        return cls(**base)  # type: ignore[arg-type]
