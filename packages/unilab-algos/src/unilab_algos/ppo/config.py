"""`PPOConfig`: every PPO setting, with an `rsl_rl()` preset and a global-statistics default."""

from __future__ import annotations

from typing import Literal

import attrs

from ..common.config import (
    CAPTURE_SETTINGS,
    CaptureSetting,
    GaussianConfig,
    NetworkConfig,
    capture_setting,
    obs_groups,
)

__all__ = ["LargeBatch", "PPOConfig", "RNDConfig", "SymmetryConfig"]

_pos = attrs.validators.gt(0)
_nonneg = attrs.validators.ge(0.0)


@attrs.frozen(kw_only=True)
class RNDConfig:
    """Random Network Distillation curiosity (Burda et al. 2018; RSL-RL's extension).

    Intrinsic reward `weight * ||target(s) - predictor(s)||_2` on the normalized `obs` groups,
    added to the environment reward in `process_env_step`. The target is frozen (identical on
    every rank because the runner broadcasts `replicated_modules()`); the predictor is trained
    with MSE by its own Adam, its grads riding in the PPO gradient collective.
    """

    obs: tuple[str, ...] = attrs.field(default=("policy",), converter=tuple, validator=obs_groups)
    num_outputs: int = attrs.field(default=16, validator=_pos)
    predictor_hidden: tuple[int, ...] = attrs.field(default=(256, 256), converter=tuple)
    target_hidden: tuple[int, ...] = attrs.field(default=(256, 256), converter=tuple)
    activation: str = "elu"
    weight: float = attrs.field(default=0.0, validator=_nonneg)
    learning_rate: float = attrs.field(default=1e-3, validator=_pos)
    state_normalization: bool = True


@attrs.frozen(kw_only=True)
class LargeBatch:
    """The large-batch recipe of `unilab_algos.ppo.large_batch` (its docstring has the rule):
    `reference_envs`, the env count the config is tuned for, and `scope` ("rank": the env
    count of one rank; "global": the env count over all ranks)."""

    reference_envs: int = attrs.field(default=4096, validator=attrs.validators.gt(0))
    scope: Literal["rank", "global"] = attrs.field(
        default="rank", validator=attrs.validators.in_(("rank", "global"))
    )


@attrs.frozen(kw_only=True)
class SymmetryConfig:
    """Left/right symmetry in the PPO update (RSL-RL 5.4.2's `symmetry_cfg`, Mittal et al. 2024).

    The learner receives the maps as a `unilab_algos.ppo.symmetry.Mirror` (`PPO(mirror=...)`).
    `data_augmentation`: every mini-batch is doubled with its mirrored samples (observations
    and actions mirrored; old log-prob, value, advantage and return repeated), the surrogate and
    value losses are taken over both halves, the entropy and the KL over the original half.
    `mirror_loss`: adds `mirror_loss_coef * mse(mean(mirror(o)), mirror(mean(o)).detach())` to
    the loss. With both off the mirror loss is still computed and logged (`symmetry`), as
    RSL-RL does. Feed-forward networks only.
    """

    data_augmentation: bool = True
    mirror_loss: bool = False
    mirror_loss_coef: float = attrs.field(default=0.0, validator=_nonneg)


@attrs.frozen(kw_only=True)
class PPOConfig:
    """PPO hyper-parameters and synchronization semantics.

    Statistics scopes (docs/semantics.md): `obs_norm_scope` and `advantage_norm_scope` are "global"
    (exact all-reduced moments through the injected `reduce_sum`) or "local" (this rank only).
    With `reduce_sum=None` (one process) both are the same thing.

    Batching: `shuffle` "per_iteration" (one randperm per update reused by every epoch,
    RSL-RL), "per_epoch" (fresh permutation every epoch) or "none" (contiguous flat ranges);
    `remainder` "drop" (RSL-RL: the last `N*T mod M` flat samples never train).

    Gradient: `grad_sync` once per mini-batch, then clipping by `max_grad_norm`, either
    "separate" (actor and critic norms, RSL-RL) or "global" (one norm over all parameters).

    Learning rate: `schedule` "fixed" or "adaptive" (RSL-RL's KL rule with `desired_kl`,
    factor `lr_factor`, bounds `lr_bounds`). The KL (analytic, rollout-time vs current
    distribution, summed over actions, averaged over the mini-batch) rides in the gradient
    collective's `extra`, so every rank computes the same LR from the global mean KL without
    extra collectives.

    Learning-rate storage: `lr_on_device=True` keeps the LR in a float64 device tensor (the KL
    rule applied with `torch.where`, same values as the Python-float rule) that Adam reads as a
    tensor `lr`, so no mini-batch reads the device; metrics are read once at the end of
    `update()`. `False` keeps RSL-RL's Python float (one host read of the KL per mini-batch);
    `rsl_rl()` uses it so the preset stays bitwise RSL-RL.
    `lr_float32_sync=True` (`rsl_rl()`): with a `grad_sync` injected (more than one rank), the
    LR is rounded to float32 after every KL rule, as RSL-RL 5.4.2 multi-GPU gets it back from
    its float32 broadcast (1.5e-3 becomes 0.001500000013038516); one rank is unaffected.

    Capture: `capture="cuda_graph"` replays each feed-forward mini-batch step from two CUDA
    graphs (forward + loss + backward; LR rule + clipping + Adam), with `grad_sync` run eagerly
    between them on the static gradients. It needs a CUDA device, `lr_on_device`, a
    feed-forward actor and critic and equal mini-batches (`remainder="drop"`); otherwise (or if
    capture raises) the update runs eagerly, warns, and `PPO.capture_status["update"]` says why.
    `"auto"` (the default) captures when those hold and runs eagerly without a warning when
    they do not (on CPU, for recurrent networks, ...); `"none"` never captures (`rsl_rl()`); a
    bool reads as "auto" (True) or "none" (False), as FastSAC's setting.
    With `capture` not "none" and `capture_rollout=True` (the default), collection is captured
    too: `act` and `process_env_step` replay three graphs from static buffers, the normalizers'
    collective eager between them (CUDA, feed-forward, no RND, normalizers without `until`;
    otherwise eager, quietly; `PPO.capture_status["rollout"]` says which and why). The same
    computations as the eager path; actions are sampled in the graph from torch's graph-safe
    CUDA generator (same seed, so a run stays reproducible).

    Symmetry: `symmetry` (a `SymmetryConfig`) mirrors each mini-batch inside the update step
    with the `Mirror` given to `PPO(mirror=...)`: tensor ops on the rank's own batch, captured
    with the step, no collective. None (the default and `rsl_rl()`) leaves the update as it is.

    Large batch: `large_batch` (a `LargeBatch`) scales `num_mini_batches` and `desired_kl`
    with the env count when `PPO` is built with `num_envs` (and `world_size`); the learner's
    `config` is then the scaled one, with `large_batch=None`. None (the default) changes nothing.
    """

    actor: NetworkConfig = attrs.field(factory=NetworkConfig)
    critic: NetworkConfig = attrs.field(factory=NetworkConfig)
    policy: GaussianConfig = attrs.field(factory=GaussianConfig)
    actor_obs: tuple[str, ...] = attrs.field(
        default=("policy",), converter=tuple, validator=obs_groups
    )
    critic_obs: tuple[str, ...] = attrs.field(
        default=("critic",), converter=tuple, validator=obs_groups
    )

    num_epochs: int = attrs.field(default=5, validator=_pos)
    num_mini_batches: int = attrs.field(default=4, validator=_pos)
    clip_param: float = attrs.field(default=0.2, validator=attrs.validators.gt(0.0))
    gamma: float = attrs.field(default=0.99, validator=[_nonneg, attrs.validators.le(1.0)])
    lam: float = attrs.field(default=0.95, validator=[_nonneg, attrs.validators.le(1.0)])
    value_loss_coef: float = attrs.field(default=1.0, validator=_nonneg)
    entropy_coef: float = attrs.field(default=0.01, validator=_nonneg)
    use_clipped_value_loss: bool = True
    learning_rate: float = attrs.field(default=1e-3, validator=attrs.validators.gt(0.0))
    max_grad_norm: float | None = attrs.field(default=1.0)
    grad_clip: Literal["separate", "global"] = attrs.field(
        default="global", validator=attrs.validators.in_(("separate", "global"))
    )
    schedule: Literal["fixed", "adaptive"] = attrs.field(
        default="adaptive", validator=attrs.validators.in_(("fixed", "adaptive"))
    )
    desired_kl: float = attrs.field(default=0.01, validator=attrs.validators.gt(0.0))
    lr_factor: float = attrs.field(default=1.5, validator=attrs.validators.gt(1.0))
    lr_bounds: tuple[float, float] = attrs.field(default=(1e-5, 1e-2), converter=tuple)

    advantage_norm: bool = True
    advantage_norm_scope: Literal["global", "local"] = attrs.field(
        default="global", validator=attrs.validators.in_(("global", "local"))
    )
    advantage_norm_per_mini_batch: bool = False
    obs_norm_scope: Literal["global", "local"] = attrs.field(
        default="global", validator=attrs.validators.in_(("global", "local"))
    )
    obs_norm_mode: Literal["exact", "rsl_rl"] = attrs.field(
        default="exact", validator=attrs.validators.in_(("exact", "rsl_rl"))
    )
    shuffle: Literal["per_iteration", "per_epoch", "none"] = attrs.field(
        default="per_epoch", validator=attrs.validators.in_(("per_iteration", "per_epoch", "none"))
    )
    remainder: Literal["drop", "spread"] = attrs.field(
        default="drop", validator=attrs.validators.in_(("drop", "spread"))
    )
    gae_rsl_rl: bool = False
    bootstrap_time_outs: bool = True
    rnd: RNDConfig | None = None
    lr_on_device: bool = True
    lr_float32_sync: bool = False
    capture: CaptureSetting | bool = attrs.field(
        default="auto", converter=capture_setting, validator=attrs.validators.in_(CAPTURE_SETTINGS)
    )
    capture_rollout: bool = True
    symmetry: SymmetryConfig | None = attrs.field(default=None)
    large_batch: LargeBatch | None = None

    @lr_bounds.validator
    def _check_bounds(self, _attr: attrs.Attribute, value: tuple[float, float]) -> None:
        if len(value) != 2 or not 0.0 < value[0] <= value[1]:
            raise ValueError(f"lr_bounds must be (low, high) with 0 < low <= high, got {value!r}")

    @max_grad_norm.validator
    def _check_clip(self, _attr: attrs.Attribute, value: float | None) -> None:
        if value is not None and not value > 0.0:
            raise ValueError(f"max_grad_norm must be > 0 or None, got {value!r}")

    @symmetry.validator
    def _check_symmetry(self, _attr: attrs.Attribute, value: SymmetryConfig | None) -> None:
        if value is not None and (self.actor.recurrent or self.critic.recurrent):
            raise ValueError(
                "symmetry needs feed-forward actor and critic (RSL-RL refuses it for recurrent "
                "policies too); set symmetry=None or drop rnn_type"
            )

    @property
    def recurrent(self) -> bool:
        return self.actor.recurrent or self.critic.recurrent

    @classmethod
    def rsl_rl(cls, **overrides: object) -> PPOConfig:
        """RSL-RL 5.4.2 semantics (see RSL_RL_5_4_2.md): local statistics, RSL-RL normalizer
        arithmetic, randperm once per update, separate actor/critic clipping, adaptive KL with
        a Python-float learning rate (`lr_on_device=False`), rounded to float32 on more than
        one rank as RSL-RL's LR broadcast does (`lr_float32_sync=True`).

        Network sizes default to RSL-RL's MLPModel default (256, 256, 256); override with
        `actor=NetworkConfig(...)` etc.
        """
        net = NetworkConfig(hidden=(256, 256, 256))
        base = dict(
            actor=net,
            critic=net,
            grad_clip="separate",
            advantage_norm_scope="local",
            obs_norm_scope="local",
            obs_norm_mode="rsl_rl",
            shuffle="per_iteration",
            remainder="drop",
            gae_rsl_rl=True,
            lr_on_device=False,
            lr_float32_sync=True,
            capture="none",
        )
        base.update(overrides)
        return cls(**base)  # type: ignore[arg-type]
