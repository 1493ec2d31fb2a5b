"""The FastSAC learner: replay shard, networks, optimizers and the (captured) update loop."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from unilab_storage import ReplayShard, split_global

from ..common.cuda_graphs import CaptureStatus, CudaGraphs, GraphBackend
from ..common.normalizer import EmpiricalNormalizer, update_normalizers
from ..common.ranges import profiled
from ..common.sync import GradSync, ReduceSum
from ._step import BATCH_KEYS, METRICS, FastSACState, apply_step, forward_backward
from .config import FastSACConfig
from .networks import (
    DeterministicPolicy,
    GroupNormalizers,
    QEnsemble,
    SquashedGaussianActor,
    Temperature,
)

__all__ = ["FastSAC"]


class FastSAC:
    """Soft actor-critic for thousands of parallel environments (Holosoma's FastSAC).

    One instance per rank. The runner calls, per environment step:
    `actions = act(obs)`, `step = env.step(actions)`, `observe(obs, actions, step)`,
    `update()`. Distribution is injected: `grad_sync` (see `unilab_dist.GradAllReduce`) averages
    gradients, `reduce_sum` (see `unilab_dist.sum_reducer`) makes the observation normalizers
    global; both `None` in one process.

    Args:
        obs_shapes: observation group -> per-env shape (1-D); must contain the groups of the
            config's `actor_obs` and `critic_obs` (they may share groups).
        action_dim: number of action dimensions; actions are in `[-1, 1]`.
        config: `FastSACConfig`.
        num_envs: environments of *this rank* (the `N` of `observe`'s TensorDicts).
        world_size: ranks sharing the global batch and replay capacity.
        device: training device.
        grad_sync, reduce_sum: injected collectives, or None for one process.
        graph_backend: the CUDA-graph machinery of the captured update (default CUDA's;
            `unilab_algos.common.RerunBackend` runs the captured path without graphs).

    The networks, optimizers and static gradients live once, in `state` (a `FastSACState`,
    what the step functions take); `actor`, `critic` and `critic_target` read them from it,
    `optimizers()` lists the three AdamW.

    Multi-rank semantics: each rank samples `batch_size / world_size` transitions from its own
    replay shard; critic gradients are averaged on every critic update and critic + actor +
    temperature gradients in one collective on actor updates, so every optimizer sees the
    global mean gradient; target critics are updated locally from identical online critics and
    so stay identical (given identical starting state, which the runner's broadcast of
    `replicated_modules()` provides).
    """

    def __init__(
        self,
        obs_shapes: dict[str, tuple[int, ...]],
        action_dim: int,
        config: FastSACConfig | None = None,
        *,
        num_envs: int,
        world_size: int = 1,
        device: torch.device | str = "cpu",
        grad_sync: GradSync | None = None,
        reduce_sum: ReduceSum | None = None,
        graph_backend: GraphBackend | None = None,
    ) -> None:
        cfg = FastSACConfig() if config is None else config
        if not isinstance(cfg, FastSACConfig):
            raise TypeError(f"config must be a FastSACConfig, got {type(cfg).__name__}")
        for name, value in (("action_dim", action_dim), ("num_envs", num_envs)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if grad_sync is not None and not callable(grad_sync):
            raise TypeError(f"grad_sync must be callable or None, got {type(grad_sync)!r}")
        if reduce_sum is not None and not callable(reduce_sum):
            raise TypeError(f"reduce_sum must be callable or None, got {type(reduce_sum)!r}")
        self.config = cfg
        self.device = torch.device(device)
        self.num_envs = num_envs
        self.world_size = world_size
        self.action_dim = action_dim
        self.grad_sync = grad_sync
        self.groups = _unique([*cfg.actor_obs, *cfg.critic_obs])
        self.obs_dims = {g: _flat_dim(obs_shapes, g) for g in self.groups}
        self.batch_size = split_global(cfg.batch_size, world_size, "batch_size")
        if cfg.replay_capacity is None:
            capacity = cfg.transitions_per_env * num_envs
        else:
            capacity = split_global(cfg.replay_capacity, world_size, "replay_capacity")
        self.normalizers = self._build_normalizers(reduce_sum)
        self.state = self._build_state(-cfg.target_entropy_ratio * action_dim)
        self.replay = ReplayShard(
            capacity, self._template(), self.device, n_step=cfg.n_step, gamma=cfg.gamma
        )
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(int(torch.randint(0, 2**62, (1,)).item()))
        self.env_steps = 0
        self.critic_updates = 0
        self.actor_updates = 0
        self._graphs = CudaGraphs(
            "FastSAC update",
            self._capture_check(graph_backend),
            self.device,
            warmup=cfg.capture_warmup,
            shared_pool=False,  # the two kinds of step interleave: no fixed replay order
            backend=graph_backend,
            hint='train with FastSACConfig(capture="none")',
        )
        self._inputs: dict[str, torch.Tensor] = {}  # the static batch of the captured step
        self._bodies = {
            with_actor: (
                self._graphs.body(
                    lambda w=with_actor: forward_backward(self.state, self._inputs, w),
                    f"forward/backward ({'actor' if with_actor else 'critic'} step)",
                ),
                self._graphs.body(
                    lambda w=with_actor: apply_step(self.state, w),
                    f"apply ({'actor' if with_actor else 'critic'} step)",
                ),
            )
            for with_actor in (False, True)
        }

    # ----------------------------------------------------------------- construction
    def _build_normalizers(self, reduce_sum: ReduceSum | None) -> nn.ModuleDict:
        cfg, dev = self.config, self.device
        norms: dict[str, nn.Module] = {}
        for g in self.groups:
            if not cfg.normalize_obs:
                norms[g] = nn.Identity()
            else:
                reducer = reduce_sum if cfg.obs_norm_scope == "global" else None
                norms[g] = EmpiricalNormalizer(
                    self.obs_dims[g], eps=cfg.normalizer_eps, reduce_sum=reducer
                ).to(dev)
        return nn.ModuleDict(norms)

    def _build_state(self, target_entropy: float) -> FastSACState:
        """Networks, optimizers and static gradient tensors: the one `FastSACState`."""
        cfg, dev = self.config, self.device
        actor = SquashedGaussianActor(
            sum(self.obs_dims[g] for g in cfg.actor_obs),
            self.action_dim,
            cfg.actor_hidden,
            layer_norm=cfg.layer_norm,
            log_std_min=cfg.log_std_min,
            log_std_max=cfg.log_std_max,
        ).to(dev)
        critic = QEnsemble(
            sum(self.obs_dims[g] for g in cfg.critic_obs),
            self.action_dim,
            cfg.critic_hidden,
            num_q=cfg.num_q,
            num_atoms=cfg.num_atoms if cfg.distributional else 1,
            v_min=cfg.v_min,
            v_max=cfg.v_max,
            layer_norm=cfg.layer_norm,
        ).to(dev)
        critic_target = copy.deepcopy(critic).requires_grad_(False)
        temperature = Temperature(cfg.alpha_init).to(dev)
        critic_params = list(critic.parameters())
        actor_params = list(actor.parameters())
        if cfg.autotune:
            actor_params.append(temperature.log_alpha)
        # Static gradient tensors: written in place by every step (and by CUDA graphs).
        for p in critic_params + actor_params:
            p.grad = torch.zeros_like(p)
        flags = self._optimizer_flags()
        if not flags["fused"]:
            flags = {"foreach": True}

        def adamw(params: list[nn.Parameter], lr: float, wd: float) -> torch.optim.AdamW:
            return torch.optim.AdamW(
                params, lr=lr, betas=cfg.betas, eps=cfg.adam_eps, weight_decay=wd, **flags
            )

        return FastSACState(
            config=cfg,
            device=dev,
            actor=actor,
            critic=critic,
            critic_target=critic_target,
            temperature=temperature,
            critic_optimizer=adamw(critic_params, cfg.critic_lr, cfg.weight_decay),
            actor_optimizer=adamw(list(actor.parameters()), cfg.actor_lr, cfg.weight_decay),
            alpha_optimizer=adamw([temperature.log_alpha], cfg.alpha_lr, cfg.alpha_weight_decay),
            critic_params=critic_params,
            actor_params=actor_params,
            target_params=list(critic_target.parameters()),
            grads={
                False: [p.grad for p in critic_params],
                True: [p.grad for p in critic_params + actor_params],
            },
            target_entropy=target_entropy,
        )

    def _optimizer_flags(self) -> dict[str, bool]:
        cuda = self.device.type == "cuda"
        return {"fused": cuda, "capturable": cuda and self.config.capture != "none"}

    def _template(self) -> TensorDict:
        n, dev = self.num_envs, self.device
        obs = {g: torch.zeros(n, d, device=dev) for g, d in self.obs_dims.items()}
        return TensorDict(
            {
                "obs": obs,
                "actions": torch.zeros(n, self.action_dim, device=dev),
                "reward": torch.zeros(n, device=dev),
                "terminated": torch.zeros(n, dtype=torch.bool, device=dev),
                "truncated": torch.zeros(n, dtype=torch.bool, device=dev),
                "next_obs": {g: t.clone() for g, t in obs.items()},
            },
            batch_size=[n],
            device=dev,
        )

    # ----------------------------------------------------------------- runner API
    @property
    def actor(self) -> SquashedGaussianActor:
        """The policy network: `state.actor`."""
        return self.state.actor

    @property
    def critic(self) -> QEnsemble:
        """The online Q ensemble: `state.critic`."""
        return self.state.critic

    @property
    def critic_target(self) -> QEnsemble:
        """The target Q ensemble (Polyak-averaged): `state.critic_target`."""
        return self.state.critic_target

    def optimizers(self) -> list[torch.optim.Optimizer]:
        """The critic's, the actor's and the temperature's AdamW, in that order."""
        st = self.state
        return [st.critic_optimizer, st.actor_optimizer, st.alpha_optimizer]

    def train_mode(self) -> None:
        """Modules in training mode (the learner's state as built; the runner calls it)."""
        for module in self.replicated_modules():
            module.train()

    def eval_mode(self) -> None:
        """Modules in eval mode, for play: the normalizers stop updating."""
        for module in self.replicated_modules():
            module.eval()

    def replicated_modules(self) -> list[nn.Module]:
        """Modules whose parameters and buffers must be identical on all ranks."""
        st = self.state
        mods: list[nn.Module] = [st.actor, st.critic, st.critic_target, st.temperature]
        return mods + [m for m in self.normalizers.values() if not isinstance(m, nn.Identity)]

    def policy_module(self) -> nn.Module:
        """Raw actor observation `(B, D)` -> deterministic action `(B, A)`, normalizer included.

        Shares parameters with the learner; deep-copy it before exporting while training.
        """
        groups = self.config.actor_obs
        if len(groups) == 1:
            return DeterministicPolicy(self.normalizers[groups[0]], self.actor)
        split = GroupNormalizers(
            [self.normalizers[g] for g in groups], [self.obs_dims[g] for g in groups]
        )
        return DeterministicPolicy(split, self.actor)

    @property
    def alpha(self) -> float:
        """Current entropy temperature (host sync)."""
        return float(self.state.temperature.log_alpha.detach().exp())

    @torch.no_grad()
    def act(self, obs: TensorDictBase, deterministic: bool = False) -> torch.Tensor:
        """Actions `(N, A)` in `[-1, 1]` for the TensorDict `obs` (`("obs", g)` or `g` keys).

        Stochastic actions use the global torch RNG of the device.
        """
        x = self._input(self.config.actor_obs, lambda g: _group(obs, g).to(self.device))
        with self.state.autocast():
            if deterministic:
                a = self.actor(x)
            else:
                noise = torch.randn(x.shape[0], self.action_dim, device=self.device)
                a, _ = self.actor.sample(x, noise)
        return a.float()

    @torch.no_grad()
    def observe(self, obs: TensorDictBase, actions: torch.Tensor, step: TensorDictBase) -> None:
        """Store the transition `obs --actions--> step` and update the observation normalizers.

        `step` is the environment's step TensorDict (see the env contract): `("obs", g)`,
        `("final_obs", g)` (next observation before an auto-reset; used as the transition's
        next observation), `"reward"`, `"terminated"`, `"truncated"`. With global
        normalization this performs one `reduce_sum` for all normalized groups together.
        """
        if actions.shape != (self.num_envs, self.action_dim):
            raise ValueError(
                f"actions must have shape {(self.num_envs, self.action_dim)}, "
                f"got {tuple(actions.shape)}"
            )
        keys = set(step.keys(include_nested=True))
        cur, nxt = {}, {}
        for g in self.groups:
            cur[g] = _group(obs, g)
            final = ("final_obs", g) if ("final_obs", g) in keys else ("obs", g)
            if final not in keys:
                raise KeyError(f"step TensorDict lacks ('final_obs', {g!r}) and ('obs', {g!r})")
            nxt[g] = step.get(final)
        transition = TensorDict(
            {
                "obs": cur,
                "actions": actions,
                "reward": step.get("reward"),
                "terminated": step.get("terminated").bool(),
                "truncated": step.get("truncated").bool(),
                "next_obs": nxt,
            },
            batch_size=[self.num_envs],
        )
        self.replay.add(transition.to(self.device))
        # one collective for all global normalizers (their moments packed together)
        update_normalizers([(self.normalizers[g], cur[g].to(self.device)) for g in self.groups])
        self.env_steps += 1

    @property
    def ready(self) -> bool:
        """True once `learning_starts` env steps were observed and the shard holds data."""
        return self.env_steps >= max(self.config.learning_starts, 1) and len(self.replay) > 0

    @profiled("unilab/update")
    def update(self, num_updates: int | None = None) -> dict[str, float]:
        """Run `num_updates` (default `config.num_updates`) critic updates, the actor and the
        temperature on every `policy_frequency`-th one. Returns global mean metrics (see
        `METRICS`), `alpha`, `updates`, `actor_updates` and `collectives` (grad all-reduces this
        call). Before `ready`, does nothing and returns `{"updates": 0.0, "collectives": 0.0}`.
        """
        u = self.config.num_updates if num_updates is None else num_updates
        if isinstance(u, bool) or not isinstance(u, int) or u <= 0:
            raise ValueError(f"num_updates must be a positive int, got {num_updates!r}")
        if not self.ready:
            return {"updates": 0.0, "collectives": 0.0}
        batch = self.replay.sample(u * self.batch_size, self.generator).reshape(u, self.batch_size)
        noise = torch.randn(
            (2, u, self.batch_size, self.action_dim), generator=self.generator, device=self.device
        )
        batch.set(("noise", "next"), noise[0])
        batch.set(("noise", "current"), noise[1])
        return self.update_from_batch(batch)

    def update_from_batch(self, batch: TensorDictBase) -> dict[str, float]:
        """Run `U` updates on an explicit batch TensorDict `[U, B]` (raw, unnormalized obs).

        Keys: `("obs", g)`, `"actions"`, `"reward"`, `"discount"`, `("next_obs", g)` for the
        actor and critic groups, and standard-normal `("noise", "next")`, `("noise", "current")`
        `(U, B, A)`. `update()` builds this from the replay shard; tests and custom runners can
        call it directly.
        """
        if batch.batch_dims != 2:
            raise ValueError(f"batch must have batch size [U, B], got {tuple(batch.batch_size)}")
        flat = self._prepare(batch)
        u = batch.batch_size[0]
        acc: torch.Tensor | None = None
        n_actor = 0
        collectives = 0
        for i in range(u):
            with_actor = (self.critic_updates + 1) % self.config.policy_frequency == 0
            b = {k: v[i] for k, v in flat.items()}
            last = i == u - 1

            def sync(m: torch.Tensor, with_actor=with_actor, last=last, acc=acc) -> torch.Tensor:
                # Metrics ride in the last gradient all-reduce: global means at no extra cost.
                total = m if acc is None else acc + m
                if self.grad_sync is not None:
                    out = self.grad_sync(
                        self.state.sync_params(with_actor), total if last else None
                    )
                    self._check_static_grads(with_actor)
                    if last:
                        total = out
                return total

            acc = self._step(b, with_actor, sync)
            collectives += int(self.grad_sync is not None)
            self.critic_updates += 1
            if with_actor:
                self.actor_updates += 1
                n_actor += 1
        values = acc.tolist()  # the one host sync of an update() call
        out = {name: values[j] / u for j, name in enumerate(METRICS[:3])}
        for j, name in enumerate(METRICS[3:], start=3):
            out[name] = values[j] / n_actor if n_actor else 0.0
        out.update(
            alpha=self.alpha,
            updates=float(u),
            actor_updates=float(n_actor),
            collectives=float(collectives),
        )
        return out

    # ----------------------------------------------------------------- internals
    def _check_static_grads(self, with_actor: bool) -> None:
        st = self.state
        for p, g in zip(st.sync_params(with_actor), st.grads[with_actor], strict=True):
            if p.grad is not g:  # a grad_sync that replaced .grad: restore the static tensor
                g.copy_(p.grad)
                p.grad = g

    def _prepare(self, batch: TensorDictBase) -> dict[str, torch.Tensor]:
        """Normalize the observations of the whole `[U, B]` batch once; flat tensors by role."""
        cfg = self.config
        batch = batch.to(self.device)

        def norm(key: str, groups: tuple[str, ...]) -> torch.Tensor:
            return self._input(groups, lambda g: batch.get((key, g)).float())

        return {
            "obs_a": norm("obs", cfg.actor_obs),
            "obs_c": norm("obs", cfg.critic_obs),
            "actions": batch.get("actions").float(),
            "reward": batch.get("reward").float(),
            "discount": batch.get("discount").float(),
            "next_obs_a": norm("next_obs", cfg.actor_obs),
            "next_obs_c": norm("next_obs", cfg.critic_obs),
            "noise_next": batch.get(("noise", "next")).float(),
            "noise_cur": batch.get(("noise", "current")).float(),
        }

    def _input(self, groups: tuple[str, ...], raw: Callable[[str], torch.Tensor]) -> torch.Tensor:
        """A network's input: each group's raw observations (`raw(g)`) normalized by its
        normalizer, concatenated in `groups` order (one group: that tensor itself)."""
        xs = [self.normalizers[g](raw(g)) for g in groups]
        return xs[0] if len(xs) == 1 else torch.cat(xs, dim=-1)

    def _capture_check(self, backend: GraphBackend | None) -> CaptureStatus:
        reasons = []
        needs_cuda = backend is None or backend.needs_cuda
        if needs_cuda and self.device.type != "cuda":
            reasons.append(f"CUDA graphs need a CUDA device, got {self.device}")
        return CaptureStatus.from_setting(self.config.capture, reasons, "FastSAC")

    @property
    def capture_status(self) -> dict[str, CaptureStatus]:
        """Where the CUDA-graph path stands, as PPO's: `{"update": CaptureStatus}` (read-only;
        `pending` during the eager warm-up calls of each step half)."""
        return {"update": self._graphs.status}

    def _step(
        self,
        b: dict[str, torch.Tensor],
        with_actor: bool,
        sync: Callable[[torch.Tensor], torch.Tensor],
    ) -> torch.Tensor:
        """One update: forward/backward, `sync` (collective + metrics), optimizer steps."""
        fb, apply = self._bodies[with_actor]
        if not self._graphs.status.active:
            metrics = sync(forward_backward(self.state, b, with_actor))
            apply_step(self.state, with_actor)
            return metrics
        if not self._inputs:
            self._inputs = {k: torch.empty_like(b[k]) for k in BATCH_KEYS}
        torch._foreach_copy_([self._inputs[k] for k in BATCH_KEYS], [b[k] for k in BATCH_KEYS])
        metrics = sync(fb().clone())  # the graph's output tensor is reused by the next replay
        apply()
        return metrics

    # ----------------------------------------------------------------- state
    def state_dict(self, include_replay: bool = False) -> dict[str, Any]:
        """Everything needed to resume: networks, targets, temperature, optimizers,
        normalizers, counters, the sampling generator, the config and (optionally) the replay
        shard's data."""
        st = self.state
        state: dict[str, Any] = {
            "actor": st.actor.state_dict(),
            "critic": st.critic.state_dict(),
            "critic_target": st.critic_target.state_dict(),
            "temperature": st.temperature.state_dict(),
            "actor_optimizer": st.actor_optimizer.state_dict(),
            "critic_optimizer": st.critic_optimizer.state_dict(),
            "alpha_optimizer": st.alpha_optimizer.state_dict(),
            "normalizers": self.normalizers.state_dict(),
            "counters": {
                "env_steps": self.env_steps,
                "critic_updates": self.critic_updates,
                "actor_updates": self.actor_updates,
            },
            "generator": self.generator.get_state(),
            "config": attrs.asdict(self.config),
        }
        if include_replay:
            state["replay"] = self.replay.state_dict(include_data=True)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a `state_dict()`. Replay data is restored when present. Captured graphs are
        dropped (the optimizers' state tensors are new) and captured again after a warm-up."""
        missing = [k for k in _STATE_KEYS if k not in state]
        if missing:
            raise KeyError(f"FastSAC state lacks {missing}")
        st = self.state
        st.actor.load_state_dict(state["actor"])
        st.critic.load_state_dict(state["critic"])
        st.critic_target.load_state_dict(state["critic_target"])
        st.temperature.load_state_dict(state["temperature"])
        self.normalizers.load_state_dict(state["normalizers"])
        flags = self._optimizer_flags()
        for name in ("actor_optimizer", "critic_optimizer", "alpha_optimizer"):
            sd = copy.deepcopy(state[name])
            for group in sd["param_groups"]:  # keep this device's kernels, not the saver's
                group["capturable"] = flags["capturable"]
                group["fused"] = flags["fused"] or None
                group["foreach"] = None if flags["fused"] else True
            getattr(st, name).load_state_dict(sd)
        counters = state["counters"]
        self.env_steps = int(counters["env_steps"])
        self.critic_updates = int(counters["critic_updates"])
        self.actor_updates = int(counters["actor_updates"])
        # a CPU ByteTensor, also for a CUDA generator (a checkpoint moved to the device is not)
        self.generator.set_state(state["generator"].cpu())
        if "replay" in state:
            self.replay.load_state_dict(state["replay"])
        self._graphs.reset()

    def parameters(self) -> Iterator[nn.Parameter]:
        """All trainable parameters (actor, critic, log-temperature)."""
        yield from self.state.critic_params
        yield from self.state.actor.parameters()
        yield self.state.temperature.log_alpha


_STATE_KEYS = (
    "actor",
    "critic",
    "critic_target",
    "temperature",
    "actor_optimizer",
    "critic_optimizer",
    "alpha_optimizer",
    "normalizers",
    "counters",
    "generator",
)


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _flat_dim(obs_shapes: dict[str, tuple[int, ...]], group: str) -> int:
    if group not in obs_shapes:
        raise KeyError(f"observation group {group!r} not in obs_shapes {sorted(obs_shapes)}")
    shape = tuple(obs_shapes[group])
    if len(shape) != 1 or shape[0] <= 0:
        raise ValueError(f"observation group {group!r} must be 1-D, got shape {shape}")
    return shape[0]


def _group(obs: TensorDictBase, group: str) -> torch.Tensor:
    """`obs[("obs", group)]` for an env TensorDict, or `obs[group]` for a plain group dict."""
    keys = set(obs.keys(include_nested=True))
    if ("obs", group) in keys:
        return obs.get(("obs", group))
    if group in keys:
        return obs.get(group)
    raise KeyError(f"observation TensorDict lacks ('obs', {group!r})")
