"""CUDA-graph replay of PPO's rollout step: `act` and `process_env_step` (`capture_rollout`).

Eager, one env step of collection costs about 130 small kernels (two MLP forwards, sampling,
two normalizer merges in float64, the time-out bootstrap), each a Python call and a launch:
a millisecond of host time per step at 4096 envs, enough to leave the GPU idle whenever a
rank's host runs slower, and every rank waits for the slowest at each step's normalizer
collective. Here the step runs from static buffers as three graphs, replayed in a fixed order:

- `act`: the observations are copied into static inputs; graph A runs both networks (with
  their normalizers), samples the actions and computes log-probabilities;
- `process_env_step`: the new observations, reward, `done` and `truncated` are copied into
  static inputs; graph B updates the local normalizers and packs the global ones' float64
  moments; their one `reduce_sum` (the collective, eager, as in `update_normalizers`) sums the
  pack across ranks; graph C merges the sums into the global normalizers and computes the stored
  reward (time-out bootstrap included) and dones. The storage copy stays eager (its cursor moves).

The bodies call the eager path's own functions (networks, normalizer moments and merges) on
static tensors; the action draw is `randn * std + mean`, what `Normal.sample()` computes, without
its host-side check of the std. So the statistics and the stored transition are the same
(bitwise on CPU, where `capture=False` runs the same bodies without graphs: the test of the
buffer logic). The first `WARMUP` calls of each body run
eagerly on a side stream (real steps), the next one is captured, replayed from then on. Used
only for feed-forward networks without RND, normalizers without `until`, in train mode; any
other call takes the eager path. If a capture raises, collection falls back to eager for good
and `PPO.rollout_capture_status` holds the reason.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDict, TensorDictBase

from ..common.cuda_graphs import side_stream
from ..common.normalizer import EmpiricalNormalizer

if TYPE_CHECKING:
    from .learner import PPO

__all__ = ["WARMUP", "CapturedRollout"]

WARMUP = 2
"""Eager (side-stream) calls of each body before its capture."""


class _Graphed:
    """`fn()` (static tensors in, tensors out) run eagerly, then captured and replayed."""

    def __init__(self, fn: Callable[[], Any], device: torch.device, capture: bool, pool: Any):
        self.fn, self.device, self.capture, self.pool = fn, device, capture, pool
        self.calls = 0
        self.graph: Any = None
        self.out: Any = None

    def __call__(self) -> Any:
        if self.graph is not None:
            self.graph.replay()
            return self.out
        if not self.capture:
            return self.fn()
        if self.calls < WARMUP:
            self.calls += 1
            return self._warmup()
        self.graph, self.out = self._capture()
        self.graph.replay()  # capturing records the kernels; this runs them
        return self.out

    def _warmup(self) -> Any:
        with side_stream(self.device):
            return self.fn()

    def _capture(self) -> tuple[Any, Any]:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            out = self.fn()
        return graph, out


class CapturedRollout:
    """Static buffers and the three rollout graphs of one `PPO` learner (module docstring)."""

    def __init__(self, ppo: PPO, *, capture: bool = True) -> None:
        self.ppo = ppo
        self.capture = capture
        pool = torch.cuda.graph_pool_handle() if capture else None
        dev = ppo.device
        self.act_fn = _Graphed(self._act_body, dev, capture, pool)
        self.moments_fn = _Graphed(self._moments_body, dev, capture, pool)
        self.merge_fn = _Graphed(self._merge_body, dev, capture, pool)
        self.failed = False
        self.obs_in: dict[str, torch.Tensor] = {}  # act's observations
        self.step_in: dict[str, torch.Tensor] = {}  # process_env_step's inputs
        self.total_in: torch.Tensor | None = None  # the summed moments, graph C's input
        self.has_truncated: bool | None = None  # whether the env step has `truncated`
        self._pending: TensorDict | None = None
        self._pending_src: dict[str, torch.Tensor] | None = None
        # (normalizer, observation groups) updated locally / merged globally (set at first step)
        self._local: list[tuple[EmpiricalNormalizer, tuple[str, ...]]] = []
        self._global: list[tuple[EmpiricalNormalizer, tuple[str, ...]]] = []

    @property
    def bootstrap(self) -> bool:
        """The time-out bootstrap: configured and the env reports `truncated` (first step)."""
        return bool(self.ppo.cfg.bootstrap_time_outs and self.has_truncated)

    @property
    def pending(self) -> TensorDict | None:
        """The staged transition of the last `act` (static tensors)."""
        return self._pending

    # ---------------------------------------------------------------- checks
    def accepts(self, obs: TensorDictBase) -> bool:
        """Whether this `act` call can run from the static buffers."""
        ppo = self.ppo
        if self.failed or not (ppo.actor.training and ppo.critic.training):
            return False
        for g in ppo._obs_groups:
            x = obs.get(("obs", g), None)
            if x is None:
                return False
            ref = self.obs_in.get(g)
            if ref is None:
                if x.shape != (ppo.storage.num_envs, *ppo.obs_shapes[g]):
                    return False
            elif x.shape != ref.shape:
                return False
        return True

    # ---------------------------------------------------------------- bodies
    def _act_body(self) -> dict[str, torch.Tensor]:
        ppo = self.ppo
        td = TensorDict(
            {("obs", g): x for g, x in self.obs_in.items()}, batch_size=[ppo.storage.num_envs]
        )
        ppo.actor_td(td)
        ppo.critic_td(td)
        mean = td["mean"]
        dist = ppo.actor.distribution(mean)
        std = dist.stddev
        # dist.sample() is torch.normal(mean, std), which checks std >= 0 on the host (not
        # capturable); the same draw and arithmetic without the check:
        actions = torch.randn_like(mean).mul_(std).add_(mean)
        return {
            "actions": actions,
            "log_prob": dist.log_prob(actions).sum(dim=-1),
            "mean": mean,
            "std": std,
            "values": td["values"],
        }

    def _obs_of(self, groups: tuple[str, ...]) -> torch.Tensor:
        return self.ppo._cat({g: self.step_in[f"obs.{g}"] for g in groups}, groups)

    def _moments_body(self) -> torch.Tensor | None:
        for norm, groups in self._local:
            norm._update_batch(self._obs_of(groups))
        if not self._global:
            return None
        return torch.cat([norm._moments(self._obs_of(groups)) for norm, groups in self._global])

    def _merge_body(self) -> tuple[torch.Tensor, torch.Tensor]:
        ppo = self.ppo
        offset = 0
        for norm, _groups in self._global:
            size = norm._pack_numel()
            norm._merge(self.total_in[offset : offset + size])
            offset += size
        rewards = self.step_in["reward"].clone()
        if self.bootstrap:
            rewards += ppo.cfg.gamma * (self._pending["values"] * self.step_in["truncated"])
        return rewards, self.step_in["done"]

    # ---------------------------------------------------------------- driver
    def act(self, obs: TensorDictBase) -> TensorDict:
        """Graph A on `obs`: the pending transition (static tensors until the next call)."""
        ppo = self.ppo
        n = ppo.storage.num_envs
        if not self.obs_in:
            self.obs_in = {g: torch.empty_like(obs["obs", g]) for g in ppo._obs_groups}
        for g, buf in self.obs_in.items():
            buf.copy_(obs["obs", g])
        out = self._run(self.act_fn)
        if out is not self._pending_src:  # a new output (warm-up); the graph's are reused
            self._pending_src = out
            fields: dict[Any, torch.Tensor] = {("obs", g): x for g, x in self.obs_in.items()}
            fields.update(out)
            self._pending = TensorDict(fields, batch_size=[n], device=ppo.device)
        return self._pending

    def process(self, step: TensorDictBase) -> None:
        """Graphs B and C on `step`, the collective between them, then the storage copy."""
        ppo = self.ppo
        obs = step["obs"]
        if not self.step_in:
            self._allocate(step)
        elif ("truncated" in step.keys()) != self.has_truncated:  # noqa: SIM118
            raise RuntimeError(
                "PPO.process_env_step: the env step's keys changed ('truncated' came or went)"
            )
        for g in ppo._obs_groups:
            self.step_in[f"obs.{g}"].copy_(obs[g])
        self.step_in["reward"].copy_(step["reward"])
        self.step_in["done"].copy_(step["done"])
        if self.bootstrap:
            self.step_in["truncated"].copy_(step["truncated"])
        packed = self._run(self.moments_fn)
        if packed is not None:
            total = self._global[0][0].reduce_sum(packed)
            if self.total_in is None:
                self.total_in = torch.empty_like(total)
            self.total_in.copy_(total)
        rewards, dones = self._run(self.merge_fn)
        pending = self._pending
        pending.set("rewards", rewards)
        pending.set("dones", dones)
        ppo.storage.add(pending)
        if self.merge_fn.graph is not None and ppo.rollout_capture_status == "pending":
            ppo.rollout_capture_status = "captured"

    def _allocate(self, step: TensorDictBase) -> None:
        ppo = self.ppo
        obs = step["obs"]
        n = ppo.storage.num_envs
        dev = ppo.device
        self.has_truncated = "truncated" in step.keys()  # noqa: SIM118
        self.step_in = {f"obs.{g}": torch.empty_like(obs[g]) for g in ppo._obs_groups}
        self.step_in["reward"] = torch.zeros(n, dtype=torch.float32, device=dev)
        self.step_in["done"] = torch.zeros(n, dtype=torch.bool, device=dev)
        if self.bootstrap:
            self.step_in["truncated"] = torch.zeros(n, dtype=torch.float32, device=dev)
        # which normalizers merge globally (one fused collective, as `update_normalizers`);
        # read here, at the first step, so that a `reduce_sum` rewired after construction counts
        cfg = ppo.cfg
        self._local, self._global = [], []
        for norm, groups in (
            (ppo.actor.obs_normalizer, cfg.actor_obs),
            (ppo.critic.obs_normalizer, cfg.critic_obs),
        ):
            if not isinstance(norm, EmpiricalNormalizer):  # normalization off
                continue
            if norm.mode == "exact" and norm.reduce_sum is not None:
                self._global.append((norm, groups))
            else:
                self._local.append((norm, groups))
        if len({id(norm.reduce_sum) for norm, _ in self._global}) > 1:
            raise RuntimeError("PPO rollout capture: global normalizers with different reduce_sum")

    def _run(self, fn: _Graphed) -> Any:
        try:
            return fn()
        except Exception as err:
            if not self.capture or fn.graph is not None or fn.calls < WARMUP:
                raise  # an eager error: the same as on the eager path
            self.failed = True  # the next act() takes the eager path
            status = f"eager: capture failed ({type(err).__name__}: {err})"
            self.ppo.rollout_capture_status = status
            warnings.warn(f"PPO rollout CUDA-graph {status}", stacklevel=4)
            for other in (self.act_fn, self.moments_fn, self.merge_fn):
                other.capture = False
                other.graph = None
            try:
                return fn()  # finish this step eagerly from the static buffers
            except Exception as again:
                raise RuntimeError(
                    f"PPO rollout capture failed ({type(err).__name__}: {err}) and the eager "
                    f"step after it failed too ({type(again).__name__}: {again}); train with "
                    "PPOConfig.capture_rollout=False"
                ) from err
