"""`PPO`: the runner-facing on-policy learner (rollout bookkeeping + update).

Collective accounting of one `update()` (E epochs x M mini-batches, U = E*M):

- `grad_sync`: U calls (actor + critic [+ RND predictor] grads in one flat buffer; with the
  adaptive schedule the mini-batch KL rides in the same call as `extra`);
- `reduce_sum` (advantage normalization, scope "global"): 1 call per update (per rollout), or
  U calls with `advantage_norm_per_mini_batch`; 0 with scope "local" or normalization off.

So `collectives = U + 1` for the default preset, fixed or adaptive LR alike. RSL-RL 5.4.2 makes
`U` (fixed) or `3U` (adaptive: + KL all-reduce + LR broadcast) collectives per update.
Outside `update()`, each `process_env_step` makes one `reduce_sum` call per global observation
normalizer (actor, critic, RND state), and `compute_returns` one when advantages are
normalized per rollout (counted in `update()`'s figure, where it is reported).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from unilab_storage import (
    FeedForwardBatcher,
    RecurrentBatcher,
    RolloutStorage,
    compute_gae,
    normalize_advantages,
)

from ..common.models import GaussianActor, ValueCritic
from ..common.normalizer import ReduceSum
from .config import PPOConfig
from .loss import gaussian_kl, ppo_loss
from .networks import RND, ExportPolicy, ExportRecurrentPolicy, build_actor, build_critic, td_module

__all__ = ["PPO"]

GradSync = Callable[[Sequence[nn.Parameter], torch.Tensor | None], torch.Tensor | None]


def _obs_dim(obs_shapes: Mapping[str, tuple[int, ...]], groups: tuple[str, ...]) -> int:
    dim = 0
    for g in groups:
        if g not in obs_shapes:
            raise ValueError(f"observation group {g!r} not in obs_shapes {sorted(obs_shapes)}")
        shape = tuple(obs_shapes[g])
        if len(shape) != 1:
            raise ValueError(f"observation group {g!r} must be 1-D, got shape {shape}")
        dim += shape[0]
    return dim


class PPO:
    """Proximal Policy Optimization with injected distributed behaviour.

    Args:
        obs_shapes: per observation group, the per-env shape, e.g. `{"policy": (48,)}`.
        action_dim: A.
        config: `PPOConfig` (`PPOConfig.rsl_rl()` for RSL-RL 5.4.2 semantics).
        device: training device.
        grad_sync: averages grads across ranks (see common.md); None = one process.
        reduce_sum: sums a tensor across ranks; None = one process. Used by global observation
            normalizers and global advantage normalization.
        generator: torch.Generator for mini-batch permutations (None: the device's default RNG,
            as RSL-RL). Action sampling always uses the global RNG.

    Rollout TensorDict keys (storage, batch [T, N]): `("obs", g)` for every group used,
    `actions` [A], `log_prob`, `mean` [A], `std` [A], `values`, `rewards`, `dones` (bool),
    `("hidden", "actor"|"critic", "h"|"c")` [L, H] for recurrent nets; after
    `compute_returns`: `advantages`, `returns`.
    """

    def __init__(
        self,
        obs_shapes: Mapping[str, tuple[int, ...]],
        action_dim: int,
        config: PPOConfig,
        *,
        device: torch.device | str = "cpu",
        grad_sync: GradSync | None = None,
        reduce_sum: ReduceSum | None = None,
        generator: torch.Generator | None = None,
    ) -> None:
        if not isinstance(config, PPOConfig):
            raise TypeError(f"config must be a PPOConfig, got {type(config).__name__}")
        if not isinstance(action_dim, int) or action_dim <= 0:
            raise ValueError(f"action_dim must be a positive int, got {action_dim!r}")
        for name, fn in (("grad_sync", grad_sync), ("reduce_sum", reduce_sum)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{name} must be callable or None, got {type(fn).__name__}")
        self.cfg = cfg = config
        self.device = torch.device(device)
        self.action_dim = action_dim
        self.grad_sync = grad_sync
        self.reduce_sum = reduce_sum
        self.generator = generator
        self.obs_shapes = {k: tuple(v) for k, v in obs_shapes.items()}
        obs_reduce = reduce_sum if cfg.obs_norm_scope == "global" else None
        self._adv_reduce = reduce_sum if cfg.advantage_norm_scope == "global" else None
        self.actor: GaussianActor = build_actor(
            _obs_dim(obs_shapes, cfg.actor_obs),
            action_dim,
            cfg.actor,
            cfg.policy,
            norm_mode=cfg.obs_norm_mode,
            reduce_sum=obs_reduce,
        ).to(self.device)
        self.critic: ValueCritic = build_critic(
            _obs_dim(obs_shapes, cfg.critic_obs),
            cfg.critic,
            norm_mode=cfg.obs_norm_mode,
            reduce_sum=obs_reduce,
        ).to(self.device)
        self.actor_td = td_module(self.actor, cfg.actor_obs, "mean")
        self.critic_td = td_module(self.critic, cfg.critic_obs, "values")
        self.optimizer = torch.optim.Adam(
            chain(self.actor.parameters(), self.critic.parameters()), lr=cfg.learning_rate
        )
        self.rnd: RND | None = None
        self.rnd_optimizer: torch.optim.Optimizer | None = None
        if cfg.rnd is not None:
            dim = _obs_dim(obs_shapes, cfg.rnd.obs)
            self.rnd = RND(dim, cfg.rnd, obs_reduce).to(self.device)
            self.rnd_optimizer = torch.optim.Adam(
                self.rnd.predictor.parameters(), lr=cfg.rnd.learning_rate
            )
        self.learning_rate = float(cfg.learning_rate)
        self.num_updates = 0
        self.storage: RolloutStorage | None = None
        self._pending: TensorDict | None = None
        self._obs_groups = tuple(dict.fromkeys(cfg.actor_obs + cfg.critic_obs + self._rnd_obs()))

    # ------------------------------------------------------------------ setup
    def _rnd_obs(self) -> tuple[str, ...]:
        return self.cfg.rnd.obs if self.cfg.rnd is not None else ()

    def _params(self) -> list[nn.Parameter]:
        params = [*self.actor.parameters(), *self.critic.parameters()]
        if self.rnd is not None:
            params += list(self.rnd.predictor.parameters())
        return [p for p in params if p.requires_grad]

    def init_storage(self, num_envs: int, num_steps: int) -> RolloutStorage:
        """Allocate the [num_steps, num_envs] rollout storage (see class docstring for keys)."""
        n, a = num_envs, self.action_dim
        dev = self.device
        fields: dict[Any, torch.Tensor] = {
            ("obs", g): torch.zeros(n, *self.obs_shapes[g], device=dev) for g in self._obs_groups
        }
        fields.update(
            actions=torch.zeros(n, a, device=dev),
            log_prob=torch.zeros(n, device=dev),
            mean=torch.zeros(n, a, device=dev),
            std=torch.zeros(n, a, device=dev),
            values=torch.zeros(n, device=dev),
            rewards=torch.zeros(n, device=dev),
            dones=torch.zeros(n, dtype=torch.bool, device=dev),
        )
        for name, net in (("actor", self.actor), ("critic", self.critic)):
            if net.memory is not None:
                rnn = net.memory.rnn
                for s in ("h", "c")[: net.memory.num_states]:
                    fields[("hidden", name, s)] = torch.zeros(
                        n, rnn.num_layers, rnn.hidden_size, device=dev
                    )
        template = TensorDict(fields, batch_size=[n], device=dev)
        self.storage = RolloutStorage(num_steps, num_envs, template, device=dev)
        return self.storage

    # ---------------------------------------------------------------- rollout
    @torch.no_grad()
    def act(self, obs: TensorDictBase) -> torch.Tensor:
        """Sample actions [N, A] for `obs` (`("obs", g)` [N, D_g]) and stage the transition."""
        if self.storage is None:
            raise RuntimeError("PPO.act: call init_storage(num_envs, num_steps) first")
        n = self.storage.num_envs
        step = TensorDict({}, batch_size=[n], device=self.device)
        for name, net in (("actor", self.actor), ("critic", self.critic)):
            if net.memory is not None:  # the state entering this step (RSL-RL item 4)
                states = net.memory.state_tensors(n, self.device)
                for s, h in zip(("h", "c"), states, strict=False):
                    step.set(("hidden", name, s), h.transpose(0, 1))
        td = obs.select(*[("obs", g) for g in self._obs_groups])
        self.actor_td(td)
        self.critic_td(td)
        mean = td["mean"]
        dist = self.actor.distribution(mean)
        actions = dist.sample()
        for g in self._obs_groups:
            step.set(("obs", g), td["obs", g])
        step.set("actions", actions)
        step.set("log_prob", dist.log_prob(actions).sum(dim=-1))
        step.set("mean", mean)
        step.set("std", dist.stddev)
        step.set("values", td["values"])
        self._pending = step
        return actions

    @torch.no_grad()
    def process_env_step(self, step: TensorDictBase) -> None:
        """Record an environment step (common.md keys): update normalizers with the new obs,
        add the RND bonus and the time-out bootstrap `gamma * V(s_t) * truncated` to the
        reward, store the transition and reset the recurrent state of done envs."""
        if self._pending is None:
            raise RuntimeError("PPO.process_env_step: call act() before each env step")
        obs = step["obs"]
        cfg = self.cfg
        self.actor.update_normalizer(self._cat(obs, cfg.actor_obs))
        self.critic.update_normalizer(self._cat(obs, cfg.critic_obs))
        if self.rnd is not None:
            self.rnd.update_normalizer(self._cat(obs, cfg.rnd.obs))
        pending = self._pending
        rewards = step["reward"].to(torch.float32).clone()
        if self.rnd is not None:
            rewards += self.rnd.intrinsic_reward(self._cat(obs, cfg.rnd.obs))
        if cfg.bootstrap_time_outs and "truncated" in step.keys():  # noqa: SIM118 (TensorDict has no `in`)
            time_outs = step["truncated"].to(rewards.dtype)
            rewards += cfg.gamma * (pending["values"] * time_outs)
        dones = step["done"].bool()
        pending.set("rewards", rewards)
        pending.set("dones", dones)
        self.storage.add(pending)
        self._pending = None
        self.actor.reset(dones)
        self.critic.reset(dones)

    @staticmethod
    def _cat(obs: TensorDictBase, groups: tuple[str, ...]) -> torch.Tensor:
        if len(groups) == 1:
            return obs[groups[0]]
        return torch.cat([obs[g] for g in groups], dim=-1)

    @torch.no_grad()
    def compute_returns(self, last_obs: TensorDictBase) -> None:
        """GAE returns/advantages from the full storage and the critic's value of `last_obs`."""
        st = self.storage
        if st is None or not st.is_full:
            raise RuntimeError("PPO.compute_returns: the rollout storage is not full")
        memory = self.critic.memory
        saved = memory.hidden_state if memory is not None else None
        td = last_obs.select(*[("obs", g) for g in self.cfg.critic_obs])
        last_values = self.critic_td(td)["values"]
        if memory is not None:
            memory.set_state(saved)
        data = st.data
        adv, returns = compute_gae(
            data["rewards"],
            data["values"],
            data["dones"],
            last_values,
            self.cfg.gamma,
            self.cfg.lam,
            rsl_rl=self.cfg.gae_rsl_rl,
        )
        self._adv_collectives = 0
        if self.cfg.advantage_norm and not self.cfg.advantage_norm_per_mini_batch:
            adv = normalize_advantages(adv, reduce_sum=self._adv_reduce)
            self._adv_collectives = int(self._adv_reduce is not None)
        data.set("advantages", adv)
        data.set("returns", returns)

    # ----------------------------------------------------------------- update
    def _batches(self):
        cfg, data = self.cfg, self.storage.data
        e, m = cfg.num_epochs, cfg.num_mini_batches
        if cfg.recurrent:
            batcher = RecurrentBatcher(
                num_mini_batches=m,
                num_epochs=e,
                remainder=cfg.remainder,
                pad_keys=("obs",),
                hidden_keys=("hidden",),
            )
            for mb in batcher.batches(data, data["dones"]):
                yield mb["data"], mb["padded"], mb["masks"], mb["initial"]
        else:
            flat = data.flatten(0, 1)
            batcher = FeedForwardBatcher(
                num_mini_batches=m, num_epochs=e, shuffle=cfg.shuffle, remainder=cfg.remainder
            )
            for idx in batcher.indices(flat.batch_size[0], self.generator, self.device):
                mb = flat[idx]
                yield mb, mb, None, None

    @staticmethod
    def _hidden(initial: TensorDictBase | None, name: str, net) -> Any:
        if net.memory is None or initial is None:
            return None
        states = [
            initial["hidden", name, s].transpose(0, 1).contiguous()
            for s in ("h", "c")[: net.memory.num_states]
        ]
        return states[0] if len(states) == 1 else tuple(states)

    def _adapt_lr(self, kl: torch.Tensor) -> None:
        # RSL-RL's rule, python-float LR; every rank holds the same global KL, hence the same LR.
        d, f = self.cfg.desired_kl, self.cfg.lr_factor
        lo, hi = self.cfg.lr_bounds
        if kl > d * 2.0:
            self.learning_rate = max(lo, self.learning_rate / f)
        elif kl < d / 2.0 and kl > 0.0:
            self.learning_rate = min(hi, self.learning_rate * f)
        for group in self.optimizer.param_groups:
            group["lr"] = self.learning_rate

    def update(self) -> dict[str, float]:
        """E epochs x M mini-batches of PPO; returns mean losses and bookkeeping:
        `value`, `surrogate`, `entropy` (RSL-RL's definitions), `kl` (mean of the global KLs,
        adaptive schedule only), `rnd`, `learning_rate` (after the update), `collectives`
        (grad_sync + reduce_sum calls, see module docstring), `mini_batches`."""
        cfg = self.cfg
        if self.storage is None or "advantages" not in self.storage.data.keys():  # noqa: SIM118
            raise RuntimeError("PPO.update: call compute_returns() first")
        adaptive = cfg.schedule == "adaptive"
        params = self._params()
        collectives = getattr(self, "_adv_collectives", 0)
        acc = torch.zeros(5, dtype=torch.float64, device=self.device)
        count = 0
        std_now = None
        for mb, obs_src, masks, initial in self._batches():
            a_obs = self._cat(obs_src["obs"], cfg.actor_obs)
            c_obs = self._cat(obs_src["obs"], cfg.critic_obs)
            adv = mb["advantages"]
            if cfg.advantage_norm and cfg.advantage_norm_per_mini_batch:
                with torch.no_grad():
                    adv = normalize_advantages(adv, reduce_sum=self._adv_reduce)
                collectives += int(self._adv_reduce is not None)
            mean = self.actor.features(a_obs, masks, self._hidden(initial, "actor", self.actor))
            values = self.critic.features(
                c_obs, masks, self._hidden(initial, "critic", self.critic)
            ).squeeze(-1)
            dist = self.actor.distribution(mean)
            kl = None
            if adaptive:
                with torch.no_grad():
                    kl = gaussian_kl(mb["mean"], mb["std"], dist.mean, dist.stddev)
            out = ppo_loss(
                dist,
                mb["actions"],
                mb["log_prob"],
                adv,
                values,
                mb["values"],
                mb["returns"],
                clip_param=cfg.clip_param,
                value_loss_coef=cfg.value_loss_coef,
                entropy_coef=cfg.entropy_coef,
                use_clipped_value_loss=cfg.use_clipped_value_loss,
            )
            rnd_loss = None
            if self.rnd is not None:
                rnd_obs = obs_src["obs"]
                if masks is not None:  # recurrent: RND is feed-forward, use the unpadded obs
                    rnd_obs = mb["obs"]
                rnd_loss = self.rnd.loss(self._cat(rnd_obs, cfg.rnd.obs))
            self.optimizer.zero_grad()
            out["loss"].backward()
            if rnd_loss is not None:
                self.rnd_optimizer.zero_grad()
                rnd_loss.backward()
            if self.grad_sync is not None:
                extra = kl.reshape(1) if kl is not None else None
                synced = self.grad_sync(params, extra)
                collectives += 1
                if kl is not None:
                    kl = synced[0]
            if kl is not None:
                self._adapt_lr(kl)
            if cfg.max_grad_norm is not None:
                if cfg.grad_clip == "separate":
                    nn.utils.clip_grad_norm_(self.actor.parameters(), cfg.max_grad_norm)
                    nn.utils.clip_grad_norm_(self.critic.parameters(), cfg.max_grad_norm)
                else:
                    nn.utils.clip_grad_norm_(
                        [*self.actor.parameters(), *self.critic.parameters()], cfg.max_grad_norm
                    )
            self.optimizer.step()
            if self.rnd_optimizer is not None:
                self.rnd_optimizer.step()
            row = [out["value"], out["surrogate"], out["entropy"]]
            row.append(kl if kl is not None else torch.zeros((), device=self.device))
            row.append(rnd_loss if rnd_loss is not None else torch.zeros((), device=self.device))
            for i, v in enumerate(row):  # sequential float64 sums = RSL-RL's python-float sums
                acc[i] += v.detach().to(torch.float64)
            count += 1
            std_now = dist.stddev
        self.storage.clear()
        self.storage.data.del_("advantages")
        self.num_updates += 1
        vals = (acc / count).tolist()
        metrics = {"value": vals[0], "surrogate": vals[1], "entropy": vals[2]}
        if adaptive:
            metrics["kl"] = vals[3]
        if self.rnd is not None:
            metrics["rnd"] = vals[4]
        metrics["learning_rate"] = self.learning_rate
        metrics["collectives"] = collectives
        metrics["mini_batches"] = count
        if std_now is not None:
            metrics["action_std"] = float(std_now.detach().mean())
        return metrics

    # ---------------------------------------------------------- runner helpers
    def train_mode(self) -> None:
        self.actor.train()
        self.critic.train()
        if self.rnd is not None:
            self.rnd.train()
            self.rnd.target.eval()

    def eval_mode(self) -> None:
        self.actor.eval()
        self.critic.eval()
        if self.rnd is not None:
            self.rnd.eval()

    def replicated_modules(self) -> list[nn.Module]:
        """Modules whose parameters and buffers must match on every rank (broadcast by the runner)."""
        mods: list[nn.Module] = [self.actor, self.critic]
        if self.rnd is not None:
            mods.append(self.rnd)
        return mods

    def policy_module(self) -> nn.Module:
        """Deterministic policy `obs_policy [B, D] -> mean [B, A]` with the normalizer (ONNX-ready).

        Input: the actor groups concatenated in `config.actor_obs` order. Recurrent actors give
        `(obs, h[, c]) -> (mean, h[, c])`.
        """
        if self.actor.is_recurrent:
            return ExportRecurrentPolicy(self.actor)
        return ExportPolicy(self.actor)

    def reset_memory(self, dones: torch.Tensor | None = None) -> None:
        """Reset recurrent states (all when `dones` is None)."""
        self.actor.reset(dones)
        self.critic.reset(dones)

    def state_dict(self) -> dict[str, Any]:
        """Models (incl. normalizers), optimizer(s), learning rate and update counter."""
        sd: dict[str, Any] = {
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "learning_rate": self.learning_rate,
            "num_updates": self.num_updates,
        }
        if self.rnd is not None:
            sd["rnd"] = self.rnd.state_dict()
            sd["rnd_optimizer"] = self.rnd_optimizer.state_dict()
        return sd

    def load_state_dict(self, sd: Mapping[str, Any]) -> None:
        missing = {"actor", "critic", "optimizer", "learning_rate", "num_updates"} - set(sd)
        if self.rnd is not None:
            missing |= {"rnd", "rnd_optimizer"} - set(sd)
        if missing:
            raise ValueError(f"PPO.load_state_dict: missing entries {sorted(missing)}")
        self.actor.load_state_dict(sd["actor"])
        self.critic.load_state_dict(sd["critic"])
        self.optimizer.load_state_dict(sd["optimizer"])
        self.learning_rate = float(sd["learning_rate"])
        for group in self.optimizer.param_groups:
            group["lr"] = self.learning_rate
        self.num_updates = int(sd["num_updates"])
        if self.rnd is not None:
            self.rnd.load_state_dict(sd["rnd"])
            self.rnd_optimizer.load_state_dict(sd["rnd_optimizer"])
