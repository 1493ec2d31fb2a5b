"""PPO's hot-path step as plain functions over an explicit state (`PPOState`).

The update of one mini-batch is `forward_backward` -> `sync_grads` (the collective) ->
`apply_update`; one env step of collection is `act` -> (env) -> `observe_normalizers` +
`step_rewards`. The update driver (`_update.py`) runs the update's functions as CUDA-graph
bodies (eagerly where nothing is captured); the learner's eager rollout calls the rollout's
directly and its captured rollout (`_rollout.py`) on static buffers inside graph bodies. Nothing here reads the device on the device-LR path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import torch
from tensordict import TensorDictBase
from torch import nn

from ..common.models import GaussianActor, ValueCritic
from ..common.normalizer import EmpiricalNormalizer
from ..common.sync import GradSync
from .config import PPOConfig
from .loss import gaussian_kl, ppo_loss
from .networks import RND
from .schedule import adaptive_lr, adaptive_lr_tensor
from .symmetry import Mirror, augment, mirror_mse, repeat_rollout

__all__ = [
    "ACC_METRICS",
    "PPOState",
    "act",
    "adapt_lr",
    "apply_update",
    "cat_groups",
    "forward_backward",
    "rollout_normalizers",
    "step_rewards",
    "symmetry_loss",
    "sync_grads",
    "time_out_bootstrap",
    "trainable_params",
]

ACC_METRICS = ("value", "surrogate", "entropy", "kl", "rnd", "symmetry")
"""The sums in `PPOState.acc`, in order."""


@attrs.define(eq=False, kw_only=True)
class PPOState:
    """What the step functions read and write: networks, optimizers, the learning rate and the
    metric accumulator of one learner. `lr` (float64) and `lr_opt` (its float32 copy that Adam
    reads) are device tensors on the device-LR path, else None and `lr_float` holds the LR."""

    config: PPOConfig
    device: torch.device
    actor: GaussianActor
    critic: ValueCritic
    actor_td: nn.Module
    critic_td: nn.Module
    optimizer: torch.optim.Optimizer
    rnd: RND | None = None
    rnd_optimizer: torch.optim.Optimizer | None = None
    grad_sync: GradSync | None = None
    mirror: Mirror | None = None
    """The mirror maps of `config.symmetry` (None without symmetry)."""
    lr: torch.Tensor | None = None
    lr_opt: torch.Tensor | None = None
    lr_float: float = 0.0
    acc: torch.Tensor = attrs.field(
        factory=lambda: torch.zeros(len(ACC_METRICS), dtype=torch.float64)
    )
    """Sums over the update's mini-batches of the `ACC_METRICS` (float64)."""


def trainable_params(st: PPOState) -> list[nn.Parameter]:
    """The parameters an update trains and `grad_sync` averages: actor, critic, RND predictor."""
    params = [*st.actor.parameters(), *st.critic.parameters()]
    if st.rnd is not None:
        params += list(st.rnd.predictor.parameters())
    return [p for p in params if p.requires_grad]


def cat_groups(obs: Mapping[str, torch.Tensor] | TensorDictBase, groups: Sequence[str]):
    """The observation groups `groups` of `obs` concatenated along the last axis."""
    if len(groups) == 1:
        return obs[groups[0]]
    return torch.cat([obs[g] for g in groups], dim=-1)


def hidden_state(initial: TensorDictBase | None, name: str, net: nn.Module) -> Any:
    """The recurrent state of `net` stored at a trajectory start (`None` if feed-forward)."""
    if net.memory is None or initial is None:
        return None
    states = [
        initial["hidden", name, s].transpose(0, 1).contiguous()
        for s in ("h", "c")[: net.memory.num_states]
    ]
    return states[0] if len(states) == 1 else tuple(states)


# ------------------------------------------------------------------------------ update
def forward_backward(
    st: PPOState,
    mb: TensorDictBase,
    obs_src: TensorDictBase,
    masks: torch.Tensor | None,
    initial: TensorDictBase | None,
    adv: torch.Tensor,
    *,
    materialize_grads: Sequence[nn.Parameter] = (),
) -> tuple[torch.Tensor | None, torch.Tensor]:
    """Loss and backward of one mini-batch into `.grad`. Returns the local KL (0-d, adaptive
    schedule only) and the detached losses `[value, surrogate, entropy, rnd, symmetry]`
    (float32).

    `obs_src` holds the (padded, for recurrent nets) observations; `materialize_grads`: give
    these parameters a zero `.grad` where backward left none (a captured step needs every
    gradient tensor to exist: `grad_sync` treats a missing gradient as zero). With
    `config.symmetry` the batch is mirrored here (RSL-RL 5.4.2's `Symmetry`; tensor ops only,
    on this rank's batch)."""
    cfg = st.config
    sym = cfg.symmetry
    obs = obs_src["obs"]
    batch = {k: mb[k] for k in ("actions", "log_prob", "values", "returns")}
    batch["advantages"] = adv
    n = None  # the original samples of an augmented batch (the first n)
    if sym is not None and sym.data_augmentation:
        n = adv.shape[0]
        groups = dict.fromkeys(cfg.actor_obs + cfg.critic_obs)
        obs, batch["actions"] = augment(st.mirror, {g: obs[g] for g in groups}, mb["actions"])
        for k in ("log_prob", "values", "returns", "advantages"):
            batch[k] = repeat_rollout(batch[k])
    a_obs = cat_groups(obs, cfg.actor_obs)
    c_obs = cat_groups(obs, cfg.critic_obs)
    mean = st.actor.features(a_obs, masks, hidden_state(initial, "actor", st.actor))
    values = st.critic.features(c_obs, masks, hidden_state(initial, "critic", st.critic))
    values = values.squeeze(-1)
    dist = st.actor.distribution(mean)
    kl = None
    if cfg.schedule == "adaptive":
        with torch.no_grad():
            kl = gaussian_kl(mb["mean"], mb["std"], dist.mean[:n], dist.stddev[:n])
    out = ppo_loss(
        dist,
        batch["actions"],
        batch["log_prob"],
        batch["advantages"],
        values,
        batch["values"],
        batch["returns"],
        clip_param=cfg.clip_param,
        value_loss_coef=cfg.value_loss_coef,
        entropy_coef=cfg.entropy_coef,
        use_clipped_value_loss=cfg.use_clipped_value_loss,
        entropy_samples=n,
    )
    loss = out["loss"]
    sym_loss = None
    if sym is not None:
        sym_loss = symmetry_loss(st, mean, obs_src["obs"], n)
        if sym.mirror_loss:
            loss = loss + sym.mirror_loss_coef * sym_loss
    rnd_loss = None
    if st.rnd is not None:
        rnd_obs = obs_src["obs"] if masks is None else mb["obs"]  # RND is feed-forward
        rnd_loss = st.rnd.loss(cat_groups(rnd_obs, cfg.rnd.obs))
    st.optimizer.zero_grad()
    loss.backward()
    if rnd_loss is not None:
        st.rnd_optimizer.zero_grad()
        rnd_loss.backward()
    for p in materialize_grads:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    zero = torch.zeros((), device=st.device)
    rnd_term = rnd_loss if rnd_loss is not None else zero
    sym_term = sym_loss if sym_loss is not None else zero
    losses = torch.stack([out["value"], out["surrogate"], out["entropy"], rnd_term, sym_term])
    return kl, losses.detach()


def symmetry_loss(
    st: PPOState, mean: torch.Tensor, obs: Mapping[str, torch.Tensor], n: int | None
) -> torch.Tensor:
    """RSL-RL's mirror loss of the actor: `mean` is the actor's output on the augmented batch
    (the original `n` samples first) or, with `n` None, on the original batch only, whose
    observations `obs` are then mirrored for one more actor pass. Detached unless
    `config.symmetry.mirror_loss` (then it only logs)."""
    cfg = st.config
    train = cfg.symmetry.mirror_loss
    with torch.set_grad_enabled(train and torch.is_grad_enabled()):
        if n is not None:
            loss = mirror_mse(st.mirror, mean[n:], mean[:n])
        else:
            mirrored = st.mirror.observations({g: obs[g] for g in cfg.actor_obs})
            loss = mirror_mse(
                st.mirror, st.actor.features(cat_groups(mirrored, cfg.actor_obs)), mean
            )
    return loss if train else loss.detach()


def sync_grads(
    st: PPOState, params: list[nn.Parameter], kl: torch.Tensor | None
) -> tuple[torch.Tensor | None, int]:
    """One `grad_sync` call (the KL in `extra`); returns the global KL and the call count."""
    if st.grad_sync is None:
        return kl, 0
    synced = st.grad_sync(params, kl.reshape(1) if kl is not None else None)
    return (synced[0] if kl is not None else None), 1


def adapt_lr(st: PPOState, kl: torch.Tensor) -> None:
    """The adaptive KL rule on the global KL (every rank computes the same LR: no broadcast)."""
    cfg = st.config
    kw = dict(desired_kl=cfg.desired_kl, factor=cfg.lr_factor, bounds=cfg.lr_bounds)
    # RSL-RL multi-GPU broadcasts the new LR as a float32 tensor: the same rounding here
    f32 = cfg.lr_float32_sync and st.grad_sync is not None
    if st.lr is None:  # RSL-RL: Python float, one host read of the KL
        lr = adaptive_lr(st.lr_float, kl, **kw)
        st.lr_float = torch.tensor(lr, dtype=torch.float32).item() if f32 else lr
        for group in st.optimizer.param_groups:
            group["lr"] = st.lr_float
    else:  # on device, no sync; Adam reads st.lr_opt (its param-group lr)
        lr_t = adaptive_lr_tensor(st.lr, kl, **kw)
        st.lr.copy_(lr_t.float() if f32 else lr_t)
        st.lr_opt.copy_(st.lr)


def apply_update(st: PPOState, kl: torch.Tensor | None, losses: torch.Tensor) -> None:
    """LR rule, clipping, optimizer step(s) and metric accumulation (no host sync on the
    device-LR path; CUDA-graph capturable)."""
    cfg = st.config
    if kl is not None:
        adapt_lr(st, kl)
    if cfg.max_grad_norm is not None:
        if cfg.grad_clip == "separate":
            nn.utils.clip_grad_norm_(st.actor.parameters(), cfg.max_grad_norm)
            nn.utils.clip_grad_norm_(st.critic.parameters(), cfg.max_grad_norm)
        else:
            nn.utils.clip_grad_norm_(
                [*st.actor.parameters(), *st.critic.parameters()], cfg.max_grad_norm
            )
    st.optimizer.step()
    if st.rnd_optimizer is not None:
        st.rnd_optimizer.step()
    kl_term = kl.reshape(1) if kl is not None else losses.new_zeros(1)
    # float64 sums of the float32 losses = RSL-RL's Python-float sums
    st.acc += torch.cat([losses[:3], kl_term, losses[3:]]).to(torch.float64)


# ------------------------------------------------------------------------------ rollout
@torch.no_grad()
def act(st: PPOState, td: TensorDictBase) -> dict[str, torch.Tensor]:
    """Both networks on `td` (`("obs", g)` entries; `mean` and `values` are added to it), then
    a sampled action: `actions` [N, A], `log_prob` [N], `mean`, `std` [N, A], `values` [N].

    The draw is `randn * std + mean`, what `Normal.sample()` computes (bit for bit), without its
    host-side check of the std (which a CUDA graph cannot hold)."""
    st.actor_td(td)
    st.critic_td(td)
    mean = td["mean"]
    dist = st.actor.distribution(mean)
    std = dist.stddev
    actions = torch.randn_like(mean).mul_(std).add_(mean)
    return {
        "actions": actions,
        "log_prob": dist.log_prob(actions).sum(dim=-1),
        "mean": mean,
        "std": std,
        "values": td["values"],
    }


def rollout_normalizers(st: PPOState) -> list[tuple[nn.Module, tuple[str, ...]]]:
    """The observation normalizers updated at each env step, with the groups each one reads
    (actor, critic, RND state): the members of the step's one normalizer collective."""
    cfg = st.config
    out: list[tuple[nn.Module, tuple[str, ...]]] = [
        (st.actor.obs_normalizer, cfg.actor_obs),
        (st.critic.obs_normalizer, cfg.critic_obs),
    ]
    if st.rnd is not None:
        out.append((st.rnd.state_normalizer, cfg.rnd.obs))
    return out


def normalizers_with_until(st: PPOState) -> bool:
    """Whether a step normalizer stops at a count (`until`: decided on the host each step)."""
    return any(
        isinstance(n, EmpiricalNormalizer) and n.until is not None
        for n, _ in rollout_normalizers(st)
    )


def time_out_bootstrap(
    cfg: PPOConfig, rewards: torch.Tensor, values: torch.Tensor, truncated: torch.Tensor | None
) -> torch.Tensor:
    """`rewards + gamma * V(s_t) * truncated` (in place), when configured and reported."""
    if cfg.bootstrap_time_outs and truncated is not None:
        rewards += cfg.gamma * (values * truncated.to(rewards.dtype))
    return rewards


def step_rewards(
    st: PPOState,
    reward: torch.Tensor,
    values: torch.Tensor,
    truncated: torch.Tensor | None,
    obs: Mapping[str, torch.Tensor] | TensorDictBase,
) -> torch.Tensor:
    """The stored reward of one env step: the env's (float32), plus RND's intrinsic reward of
    the new observations, plus the time-out bootstrap."""
    rewards = reward.to(torch.float32).clone()
    if st.rnd is not None:
        rewards += st.rnd.intrinsic_reward(cat_groups(obs, st.config.rnd.obs))
    return time_out_bootstrap(st.config, rewards, values, truncated)
