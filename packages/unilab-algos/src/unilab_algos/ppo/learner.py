"""`PPO`: the runner-facing on-policy learner (rollout bookkeeping + update).

Collective accounting of one `update()` (E epochs x M mini-batches, U = E*M):

- `grad_sync`: U calls (actor + critic [+ RND predictor] grads in one flat buffer; with the
  adaptive schedule the mini-batch KL rides in the same call as `extra`);
- `reduce_sum` (advantage normalization, scope "global"): 1 call per update (per rollout), or
  U calls with `advantage_norm_per_mini_batch`; 0 with scope "local" or normalization off.

So `collectives = U + 1` for the default preset, fixed or adaptive LR alike. RSL-RL 5.4.2 makes
`U` (fixed) or `3U` (adaptive: + KL all-reduce + LR broadcast) collectives per update.
Outside `update()`, each `process_env_step` makes one `reduce_sum` call for all global
observation normalizers together (actor, critic, RND state: their moments packed into one
vector), and `compute_returns` one when advantages are normalized per rollout (counted in
`update()`'s figure, where it is reported).
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain
from typing import Any

import attrs
import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from unilab_storage import RolloutStorage, compute_gae, normalize_advantages

from ..common.cuda_graphs import CaptureMode, CaptureStatus, CudaGraphs, GraphBackend
from ..common.models import GaussianActor, ValueCritic
from ..common.normalizer import update_normalizers
from ..common.ranges import profiled
from ..common.sync import GradSync, ReduceSum
from ._rollout import CapturedRollout
from ._step import (
    ACC_METRICS,
    PPOState,
    act,
    cat_groups,
    normalizers_with_until,
    rollout_normalizers,
    step_rewards,
)
from ._update import UpdateDriver
from .config import PPOConfig
from .large_batch import scale_for_envs
from .networks import (
    RND,
    ExportPolicy,
    ExportRecurrentPolicy,
    build_actor,
    build_critic,
    obs_dim,
    td_module,
)
from .symmetry import Mirror

__all__ = ["WARMUP", "PPO"]

WARMUP = 2
"""Eager (side-stream) calls of each captured body before its capture."""


class PPO:
    """Proximal Policy Optimization with injected distributed behaviour.

    Args:
        obs_shapes: per observation group, the per-env shape, e.g. `{"policy": (48,)}`.
        action_dim: A.
        config: `PPOConfig` (`PPOConfig.rsl_rl()` for RSL-RL 5.4.2 semantics).
        device: training device.
        grad_sync: averages grads across ranks (see unilab_dist.GradAllReduce); None = one process.
        reduce_sum: sums a tensor across ranks; None = one process. Used by global observation
            normalizers and global advantage normalization.
        generator: torch.Generator for mini-batch permutations (None: the device's default RNG,
            as RSL-RL). Action sampling always uses the global RNG.
        graph_backend: the CUDA-graph machinery of the captured paths (default CUDA's;
            `unilab_algos.common.RerunBackend` runs the captured paths without graphs).
        mirror: the left/right maps (`unilab_algos.ppo.symmetry.Mirror`) that
            `config.symmetry` needs: one per observation group the actor and critic read, and
            the actions'. The robot and task decide them (unilab-envs derives them from a
            task's observation terms); required with `config.symmetry`, unused without.
        num_envs, world_size: this rank's env count and the rank count, which
            `config.large_batch` needs (the learner then runs `scale_for_envs`' config, and
            `self.config` is that one).

    Rollout TensorDict keys (storage, batch [T, N]): `("obs", g)` for every group used,
    `actions` [A], `log_prob`, `mean` [A], `std` [A], `values`, `rewards`, `dones` (bool),
    `("hidden", "actor"|"critic", "h"|"c")` [L, H] for recurrent nets; after
    `compute_returns`: `advantages`, `returns`.

    Attributes: `learning_rate` (float property; on the device-LR path reading it syncs),
    `capture_status` (`{"update": CaptureStatus, "rollout": CaptureStatus}`, see `PPOConfig`),
    `state` (the `PPOState` the step functions run on: it holds the networks and optimizers,
    once; `actor`, `critic` and `rnd` read them from it), `optimizers()`, `update_driver`
    (the `UpdateDriver` that runs `update()`'s mini-batches, eager or captured).
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
        graph_backend: GraphBackend | None = None,
        mirror: Mirror | None = None,
        num_envs: int | None = None,
        world_size: int = 1,
    ) -> None:
        if not isinstance(config, PPOConfig):
            raise TypeError(f"config must be a PPOConfig, got {type(config).__name__}")
        if config.large_batch is not None:
            if num_envs is None:
                raise ValueError(
                    "PPOConfig.large_batch scales the mini-batches with the env count: build "
                    "PPO with num_envs= (and world_size=), or set large_batch=None"
                )
            scaled = scale_for_envs(
                config, config.large_batch, num_envs=num_envs, world_size=world_size
            )
            config = attrs.evolve(scaled, large_batch=None)
        if not isinstance(action_dim, int) or action_dim <= 0:
            raise ValueError(f"action_dim must be a positive int, got {action_dim!r}")
        for name, fn in (("grad_sync", grad_sync), ("reduce_sum", reduce_sum)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{name} must be callable or None, got {type(fn).__name__}")
        self.config = cfg = config
        self.device = torch.device(device)
        self.action_dim = action_dim
        self.reduce_sum = reduce_sum
        self.generator = generator
        self.graph_backend = graph_backend
        self.obs_shapes = {k: tuple(v) for k, v in obs_shapes.items()}
        obs_reduce = reduce_sum if cfg.obs_norm_scope == "global" else None
        self.adv_reduce = reduce_sum if cfg.advantage_norm_scope == "global" else None
        actor = build_actor(
            obs_dim(obs_shapes, cfg.actor_obs),
            action_dim,
            cfg.actor,
            cfg.policy,
            norm_mode=cfg.obs_norm_mode,
            reduce_sum=obs_reduce,
        ).to(self.device)
        critic = build_critic(
            obs_dim(obs_shapes, cfg.critic_obs),
            cfg.critic,
            norm_mode=cfg.obs_norm_mode,
            reduce_sum=obs_reduce,
        ).to(self.device)
        update_status = self._capture_check()
        opt_kw: dict[str, Any] = {}
        if cfg.lr_on_device:  # fused Adam: one kernel for all parameters, reads the LR tensor
            capturable = update_status.active and self.device.type == "cuda"
            opt_kw = {"fused": True, "capturable": capturable}
        lr: torch.Tensor | None = None  # float64 rule state (device path)
        lr_opt: torch.Tensor | None = None  # float32 copy that Adam reads
        if cfg.lr_on_device:
            lr = torch.tensor(cfg.learning_rate, dtype=torch.float64, device=self.device)
            lr_opt = lr.to(torch.float32)
        optimizer = torch.optim.Adam(
            chain(actor.parameters(), critic.parameters()),
            lr=lr_opt if lr_opt is not None else cfg.learning_rate,
            **opt_kw,
        )
        rnd: RND | None = None
        rnd_optimizer: torch.optim.Optimizer | None = None
        if cfg.rnd is not None:
            rnd = RND(obs_dim(obs_shapes, cfg.rnd.obs), cfg.rnd, obs_reduce).to(self.device)
            rnd_optimizer = torch.optim.Adam(
                rnd.predictor.parameters(), lr=cfg.rnd.learning_rate, **opt_kw
            )
        for opt in (optimizer, rnd_optimizer):
            if opt is not None and opt_kw.get("capturable"):  # warm-up and fallback run it
                opt._warned_capturable_if_run_uncaptured = True  # eagerly on purpose
        self.state = PPOState(
            config=cfg,
            device=self.device,
            actor=actor,
            critic=critic,
            actor_td=td_module(actor, cfg.actor_obs, "mean"),
            critic_td=td_module(critic, cfg.critic_obs, "values"),
            optimizer=optimizer,
            rnd=rnd,
            rnd_optimizer=rnd_optimizer,
            grad_sync=grad_sync,
            mirror=_checked_mirror(cfg, mirror, self.obs_shapes, action_dim),
            lr=lr,
            lr_opt=lr_opt,
            lr_float=float(cfg.learning_rate),
            acc=torch.zeros(len(ACC_METRICS), dtype=torch.float64, device=self.device),
        )
        self.num_updates = 0
        self.storage: RolloutStorage | None = None
        self._pending: TensorDict | None = None
        self._pending_graphed = False  # whether the staged transition is the captured rollout's
        self._obs_groups = tuple(dict.fromkeys(cfg.actor_obs + cfg.critic_obs + self._rnd_obs()))
        self._adv_collectives = 0
        self.update_driver = UpdateDriver(
            self.state,
            self._new_graphs("PPO update", update_status),
            self._obs_groups,
            self.adv_reduce,
        )
        self._rollout_graphs = self._new_graphs("PPO rollout", self._rollout_check())
        self._rollout: CapturedRollout | None = None  # built by init_storage

    # ------------------------------------------------------------------ setup
    def _new_graphs(self, label: str, status: CaptureStatus) -> CudaGraphs:
        hint = "train with PPOConfig.capture='none'"
        if label == "PPO rollout":
            hint = "train with PPOConfig.capture_rollout=False"
        return CudaGraphs(
            label, status, self.device, warmup=WARMUP, backend=self.graph_backend, hint=hint
        )

    def _device_reasons(self) -> list[str]:
        needs_cuda = self.graph_backend is None or self.graph_backend.needs_cuda
        if needs_cuda and self.device.type != "cuda":
            return [f"CUDA graphs need a CUDA device, got {self.device}"]
        return []

    def _capture_check(self) -> CaptureStatus:
        """The update's status: off, pending (captured at the next update) or eager (why)."""
        cfg = self.config
        reasons = self._device_reasons()
        if not cfg.lr_on_device:
            reasons.append("lr_on_device=False reads the KL on the host every mini-batch")
        if cfg.recurrent:
            reasons.append("recurrent mini-batches vary in shape")
        if cfg.remainder != "drop":
            reasons.append(f"remainder={cfg.remainder!r} gives unequal mini-batches")
        return CaptureStatus.from_setting(cfg.capture, reasons, "PPO")

    def _rollout_check(self) -> CaptureStatus:
        """The rollout's status: off, pending or eager (why); see `_rollout.py`."""
        cfg = self.config
        reasons = self._device_reasons()
        if cfg.recurrent:
            reasons.append("recurrent networks carry hidden state")
        if cfg.rnd is not None:
            reasons.append("RND's intrinsic reward")
        if normalizers_with_until(self.state):
            reasons.append("a normalizer with `until` checks its count on the host")
        return CaptureStatus.check(cfg.capture != "none" and cfg.capture_rollout, reasons)

    @property
    def actor(self) -> GaussianActor:
        """The policy network (normalizer included): `state.actor`."""
        return self.state.actor

    @property
    def critic(self) -> ValueCritic:
        """The value network (normalizer included): `state.critic`."""
        return self.state.critic

    @property
    def rnd(self) -> RND | None:
        """Random network distillation (`config.rnd`), or None: `state.rnd`."""
        return self.state.rnd

    def optimizers(self) -> list[torch.optim.Optimizer]:
        """The optimizers (Adam of actor + critic, then RND's predictor's if any)."""
        st = self.state
        return [st.optimizer] + ([st.rnd_optimizer] if st.rnd_optimizer is not None else [])

    @property
    def grad_sync(self) -> GradSync | None:
        """The injected gradient all-reduce (the one `PPOState.grad_sync`)."""
        return self.state.grad_sync

    @grad_sync.setter
    def grad_sync(self, fn: GradSync | None) -> None:
        self.state.grad_sync = fn

    @property
    def capture_status(self) -> dict[str, CaptureStatus]:
        """Where the CUDA-graph paths stand: `{"update": ..., "rollout": ...}` (read-only)."""
        return {"update": self.update_driver.graphs.status, "rollout": self._rollout_graphs.status}

    @property
    def learning_rate(self) -> float:
        """Current learning rate (reads the device tensor on the device path: one host sync)."""
        st = self.state
        return float(st.lr) if st.lr is not None else st.lr_float

    def _set_lr(self, value: float) -> None:
        st = self.state
        if st.lr is not None:
            st.lr.fill_(value)
            st.lr_opt.copy_(st.lr)
            lr: float | torch.Tensor = st.lr_opt
        else:
            st.lr_float = float(value)
            lr = st.lr_float
        for group in st.optimizer.param_groups:
            group["lr"] = lr

    def _rnd_obs(self) -> tuple[str, ...]:
        return self.config.rnd.obs if self.config.rnd is not None else ()

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
        if self._rollout_graphs.status.active:  # new static buffers for this storage
            self._rollout_graphs = self._new_graphs(
                "PPO rollout", CaptureStatus(CaptureMode.PENDING)
            )
            self._rollout = CapturedRollout(
                self.state, self._rollout_graphs, self._obs_groups, self.obs_shapes, self.storage
            )
        return self.storage

    # ---------------------------------------------------------------- rollout
    @torch.no_grad()
    def act(self, obs: TensorDictBase) -> torch.Tensor:
        """Sample actions [N, A] for `obs` (`("obs", g)` [N, D_g]) and stage the transition."""
        if self.storage is None:
            raise RuntimeError("PPO.act: call init_storage(num_envs, num_steps) first")
        if self._rollout is not None and self._rollout.accepts(obs):
            self._pending = self._rollout.act(obs)
            self._pending_graphed = True
            return self._pending["actions"].clone()
        n = self.storage.num_envs
        step = TensorDict({}, batch_size=[n], device=self.device)
        for name, net in (("actor", self.actor), ("critic", self.critic)):
            if net.memory is not None:  # the state entering this step (RSL-RL item 4)
                states = net.memory.state_tensors(n, self.device)
                for s, h in zip(("h", "c"), states, strict=False):
                    step.set(("hidden", name, s), h.transpose(0, 1))
        td = obs.select(*[("obs", g) for g in self._obs_groups])
        out = act(self.state, td)
        for g in self._obs_groups:
            step.set(("obs", g), td["obs", g])
        for k, v in out.items():
            step.set(k, v)
        self._pending = step
        self._pending_graphed = False
        return out["actions"]

    @torch.no_grad()
    def process_env_step(self, step: TensorDictBase) -> None:
        """Record an environment step (the env step keys of docs/envs.md): update normalizers
        with the new obs, add the RND bonus and the time-out bootstrap
        `gamma * V(s_t) * truncated` to the reward, store the transition and reset the
        recurrent state of done envs."""
        if self._pending is None:
            raise RuntimeError("PPO.process_env_step: call act() before each env step")
        if self._pending_graphed:  # feed-forward: no recurrent state to reset
            self._rollout.process(step)
            self._pending = None
            return
        obs = step["obs"]
        # one collective for all global normalizers
        update_normalizers([(n, cat_groups(obs, g)) for n, g in rollout_normalizers(self.state)])
        pending = self._pending
        truncated = step["truncated"] if "truncated" in step.keys() else None  # noqa: SIM118
        rewards = step_rewards(self.state, step["reward"], pending["values"], truncated, obs)
        dones = step["done"].bool()
        pending.set("rewards", rewards)
        pending.set("dones", dones)
        self.storage.add(pending)
        self._pending = None
        self.actor.reset(dones)
        self.critic.reset(dones)

    @torch.no_grad()
    def compute_returns(self, last_obs: TensorDictBase) -> None:
        """GAE returns/advantages from the full storage and the critic's value of `last_obs`."""
        st = self.storage
        if st is None or not st.is_full:
            raise RuntimeError("PPO.compute_returns: the rollout storage is not full")
        memory = self.critic.memory
        saved = memory.hidden_state if memory is not None else None
        td = last_obs.select(*[("obs", g) for g in self.config.critic_obs])
        last_values = self.state.critic_td(td)["values"]
        if memory is not None:
            memory.set_state(saved)
        data = st.data
        adv, returns = compute_gae(
            data["rewards"],
            data["values"],
            data["dones"],
            last_values,
            self.config.gamma,
            self.config.lam,
            rsl_rl=self.config.gae_rsl_rl,
        )
        self._adv_collectives = 0
        if self.config.advantage_norm and not self.config.advantage_norm_per_mini_batch:
            adv = normalize_advantages(adv, reduce_sum=self.adv_reduce)
            self._adv_collectives = int(self.adv_reduce is not None)
        data.set("advantages", adv)
        data.set("returns", returns)

    # ----------------------------------------------------------------- update
    @profiled("unilab/update")
    def update(self) -> dict[str, float]:
        """E epochs x M mini-batches of PPO; returns mean losses and bookkeeping:
        `value`, `surrogate`, `entropy` (RSL-RL's definitions), `kl` (mean of the global KLs,
        adaptive schedule only), `rnd`, `symmetry` (the mirror loss, with `config.symmetry`), `learning_rate` (after the update), `action_std` (mean
        std of the policy after the update), `collectives` (grad_sync + reduce_sum calls, see
        module docstring), `mini_batches`.

        On the device-LR path nothing reads the device until the single read of all metrics at
        the end (the RSL-RL preset reads the KL once per mini-batch, as RSL-RL does).
        """
        cfg = self.config
        if self.storage is None or "advantages" not in self.storage.data.keys():  # noqa: SIM118
            raise RuntimeError("PPO.update: call compute_returns() first")
        st = self.state
        st.acc.zero_()
        count, collectives = self.update_driver.run(self.storage.data, self.generator)
        collectives += self._adv_collectives
        self.storage.clear()
        self.storage.data.del_("advantages")
        self.num_updates += 1
        names = [*ACC_METRICS, "action_std"]
        parts = [st.acc / count, st.actor.std().detach().mean().reshape(1).to(torch.float64)]
        if st.lr is not None:
            names.append("learning_rate")
            parts.append(st.lr.reshape(1))
        read = dict(zip(names, torch.cat(parts).tolist(), strict=True))  # the one host read
        metrics = {k: read[k] for k in ("value", "surrogate", "entropy")}
        if cfg.schedule == "adaptive":
            metrics["kl"] = read["kl"]
        if st.rnd is not None:
            metrics["rnd"] = read["rnd"]
        if cfg.symmetry is not None:
            metrics["symmetry"] = read["symmetry"]
        metrics["learning_rate"] = read.get("learning_rate", st.lr_float)
        metrics["collectives"] = collectives
        metrics["mini_batches"] = count
        metrics["action_std"] = read["action_std"]
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
        """Models (incl. normalizers), optimizer(s), learning rate (a float) and update counter.

        Optimizer param-group LRs are stored as floats, so checkpoints load on either LR path.
        """
        sd: dict[str, Any] = {
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "optimizer": _portable_optimizer_state(self.state.optimizer),
            "learning_rate": self.learning_rate,
            "num_updates": self.num_updates,
        }
        if self.rnd is not None:
            sd["rnd"] = self.rnd.state_dict()
            sd["rnd_optimizer"] = _portable_optimizer_state(self.state.rnd_optimizer)
        return sd

    def load_state_dict(self, sd: Mapping[str, Any]) -> None:
        missing = {"actor", "critic", "optimizer", "learning_rate", "num_updates"} - set(sd)
        if self.rnd is not None:
            missing |= {"rnd", "rnd_optimizer"} - set(sd)
        if missing:
            raise ValueError(f"PPO.load_state_dict: missing entries {sorted(missing)}")
        self.actor.load_state_dict(sd["actor"])
        self.critic.load_state_dict(sd["critic"])
        _load_optimizer(self.state.optimizer, sd["optimizer"])
        self._set_lr(float(sd["learning_rate"]))
        self.num_updates = int(sd["num_updates"])
        if self.rnd is not None:
            self.rnd.load_state_dict(sd["rnd"])
            _load_optimizer(self.state.rnd_optimizer, sd["rnd_optimizer"])
        self.update_driver.graphs.reset()  # the optimizer state tensors were replaced: capture again


def _checked_mirror(
    cfg: PPOConfig,
    mirror: Mirror | None,
    obs_shapes: Mapping[str, tuple[int, ...]],
    action_dim: int,
) -> Mirror | None:
    """`mirror` when `cfg.symmetry` needs it and it fits the groups and actions, else an error
    naming what is missing; None without symmetry."""
    if cfg.symmetry is None:
        return None
    if not isinstance(mirror, Mirror):
        raise ValueError(
            "PPOConfig.symmetry needs the mirror maps: build PPO with mirror=Mirror(obs=..., "
            "action=...) (unilab-envs derives them from a task: env.mirror_maps()), or set "
            f"symmetry=None; got mirror={mirror!r}"
        )
    widths = {g: int(obs_shapes[g][-1]) for g in dict.fromkeys(cfg.actor_obs + cfg.critic_obs)}
    widths["actions"] = action_dim
    have = {g: len(mirror.obs[g]) for g in widths if g in mirror.obs}
    have["actions"] = len(mirror.action)
    wrong = {g: (have.get(g), w) for g, w in widths.items() if have.get(g) != w}
    if wrong:
        text = ", ".join(f"{g} (mirror width {h}, data width {w})" for g, (h, w) in wrong.items())
        raise ValueError(f"the mirror maps do not fit: {text}")
    return mirror


def _load_optimizer(opt: torch.optim.Optimizer, state: dict[str, Any]) -> None:
    """Load `state` into `opt` but keep this learner's own execution flags.

    `capturable`, `fused` and `foreach` say how this process runs the optimizer step (a
    checkpoint written by an eager learner must still load into one that captures CUDA graphs),
    not what the training state is, so they are not taken from the checkpoint.
    """
    flags = ("capturable", "fused", "foreach", "differentiable")
    keep = [{k: g[k] for k in flags if k in g} for g in opt.param_groups]
    opt.load_state_dict(state)
    for group, own in zip(opt.param_groups, keep, strict=True):
        group.update(own)


def _portable_optimizer_state(opt: torch.optim.Optimizer) -> dict[str, Any]:
    """`opt.state_dict()` with tensor learning rates turned into floats (no aliasing of the
    live LR tensor in the checkpoint)."""
    sd = opt.state_dict()
    groups = []
    for g in sd["param_groups"]:
        g = dict(g)
        if isinstance(g.get("lr"), torch.Tensor):
            g["lr"] = float(g["lr"])
        groups.append(g)
    return {"state": sd["state"], "param_groups": groups}
