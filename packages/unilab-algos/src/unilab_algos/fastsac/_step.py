"""One FastSAC update step (losses, gradients, optimizer steps) as plain functions over an
explicit state (`FastSACState`).

The step is split in two halves so that the gradient all-reduce stays *outside* any captured
region: `forward_backward` (losses and gradients written into static `.grad` tensors) and
`apply_step` (clipping, AdamW steps, Polyak averaging). The learner runs them eagerly, or as
bodies of a `common.cuda_graphs.CudaGraphs` set, one pair per kind of step (critic only;
critic + actor + temperature), so a captured update is
`replay(fb) -> grad_sync(...) -> replay(apply)`: two graph launches plus the collective.
"""

from __future__ import annotations

import contextlib

import attrs
import torch

from .config import FastSACConfig
from .loss import (
    actor_loss,
    categorical_projection,
    distributional_critic_loss,
    polyak_update,
    scalar_critic_loss,
    soft_scalar_target,
    temperature_loss,
)
from .networks import QEnsemble, SquashedGaussianActor, Temperature

__all__ = ["BATCH_KEYS", "METRICS", "FastSACState", "apply_step", "forward_backward"]

BATCH_KEYS = (
    "obs_a",
    "obs_c",
    "actions",
    "reward",
    "discount",
    "next_obs_a",
    "next_obs_c",
    "noise_next",
    "noise_cur",
)
"""Flat tensors of one update: normalized actor/critic obs `(B, D)`, actions `(B, A)`, n-step
reward and bootstrap factor `(B,)`, next obs, and standard-normal noise `(B, A)` for the next
action (target) and the current action (actor loss)."""

METRICS = (
    "critic_loss",
    "q_mean",
    "target_q_mean",
    "actor_loss",
    "alpha_loss",
    "entropy",
)
"""Entries of the metrics vector a step returns; the last three are 0 on critic-only steps."""


@attrs.define(eq=False, kw_only=True)
class FastSACState:
    """What the step functions read and write: the networks, optimizers and static gradient
    tensors of one learner.

    `critic_params` / `actor_params` (actor, then `log_alpha` when autotuned) /
    `target_params` list the parameters in the order of the step's gradients; `grads[w]` are
    the static `.grad` tensors a step writes: the critic's (`w=False`), or critic + actor
    [+ alpha] (`w=True`)."""

    config: FastSACConfig
    device: torch.device
    actor: SquashedGaussianActor
    critic: QEnsemble
    critic_target: QEnsemble
    temperature: Temperature
    critic_optimizer: torch.optim.Optimizer
    actor_optimizer: torch.optim.Optimizer
    alpha_optimizer: torch.optim.Optimizer
    critic_params: list[torch.nn.Parameter]
    actor_params: list[torch.nn.Parameter]
    target_params: list[torch.nn.Parameter]
    grads: dict[bool, list[torch.Tensor]]
    target_entropy: float

    def autocast(self) -> contextlib.AbstractContextManager:
        """bf16 autocast when `config.bf16` (cache disabled: required inside CUDA graphs)."""
        return torch.autocast(
            self.device.type, dtype=torch.bfloat16, enabled=self.config.bf16, cache_enabled=False
        )

    def sync_params(self, with_actor: bool) -> list[torch.nn.Parameter]:
        """The parameters whose gradients a step of this kind all-reduces."""
        return self.critic_params + self.actor_params if with_actor else self.critic_params


def forward_backward(
    st: FastSACState, b: dict[str, torch.Tensor], with_actor: bool
) -> torch.Tensor:
    """Losses of one step on batch `b`; writes gradients into the state's static grads.

    Every loss is computed with the parameters from before this step (the actor loss reads the
    critic before its own update): this is what lets critic, actor and temperature gradients
    travel in one collective. Returns the metrics vector `(len(METRICS),)` float32.
    """
    cfg = st.config
    actor, critic, target = st.actor, st.critic, st.critic_target
    log_alpha = st.temperature.log_alpha
    with st.autocast():
        with torch.no_grad():
            alpha = log_alpha.exp().detach()
            next_a, next_logp = actor.sample(b["next_obs_a"], b["noise_next"])
            next_logp = next_logp.float()
            if critic.distributional:
                next_probs = target(b["next_obs_c"], next_a).float().softmax(-1)
                soft_reward = b["reward"] - b["discount"] * alpha * next_logp
                target_dist = categorical_projection(
                    next_probs, soft_reward, b["discount"], critic.support
                )
                target_q = (target_dist * critic.support).sum(-1).mean()
            else:
                next_q = target.value(b["next_obs_c"], next_a).float()
                target_v = soft_scalar_target(b["reward"], b["discount"], next_q, next_logp, alpha)
                target_q = target_v.mean()
        out = critic(b["obs_c"], b["actions"])
        if critic.distributional:
            c_loss = distributional_critic_loss(out, target_dist)
            q_mean = (out.detach().float().softmax(-1) * critic.support).sum(-1).mean()
        else:
            q = out.squeeze(-1).float()
            c_loss = scalar_critic_loss(q, target_v)
            q_mean = q.detach().mean()
        grads = list(torch.autograd.grad(c_loss, st.critic_params))
        zero = torch.zeros((), device=c_loss.device)
        a_loss = t_loss = entropy = zero
        if with_actor:
            act, logp = actor.sample(b["obs_a"], b["noise_cur"])
            logp = logp.float()
            q_pi = critic.value(b["obs_c"], act).float().mean(0)
            a_loss = actor_loss(logp, q_pi, alpha)
            entropy = -logp.detach().mean()
            total = a_loss
            if cfg.autotune:
                t_loss = temperature_loss(log_alpha, logp, st.target_entropy)
                total = total + t_loss
            grads += torch.autograd.grad(total, st.actor_params)
    torch._foreach_copy_(st.grads[with_actor], grads)
    return torch.stack([c_loss, q_mean, target_q, a_loss, t_loss, entropy]).detach().float()


def apply_step(st: FastSACState, with_actor: bool) -> None:
    """Clip (optional), step the optimizers of this kind of step, then Polyak the targets."""
    cfg = st.config
    if cfg.max_grad_norm > 0:
        torch.nn.utils.clip_grad_norm_(st.critic.parameters(), cfg.max_grad_norm)
        if with_actor:
            torch.nn.utils.clip_grad_norm_(st.actor.parameters(), cfg.max_grad_norm)
    st.critic_optimizer.step()
    if with_actor:
        st.actor_optimizer.step()
        if cfg.autotune:
            st.alpha_optimizer.step()
    polyak_update(st.target_params, st.critic_params, cfg.tau)
