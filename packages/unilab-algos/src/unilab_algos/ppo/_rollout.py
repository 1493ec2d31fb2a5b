"""PPO's rollout step from static buffers, as three CUDA-graph bodies (`capture_rollout`).

Eager, one env step of collection costs about 130 small kernels (two MLP forwards, sampling,
two normalizer merges in float64, the time-out bootstrap), each a Python call and a launch:
a millisecond of host time per step at 4096 envs, enough to leave the GPU idle whenever a
rank's host runs slower, and every rank waits for the slowest at each step's normalizer
collective. Here the step runs from static buffers, in a fixed order:

- `act`: the observations are copied into static inputs; body A is `_step.act` (both
  networks with their normalizers, the action draw, log-probabilities);
- `process`: the new observations, reward, `done` and `truncated` are copied into static
  inputs; body B updates the local normalizers and packs the global ones' float64 moments
  (`NormalizerUpdate.local` + `moments`); their `reduce` (the collective) runs eagerly; body C
  merges the sums (`NormalizerUpdate.merge`) and computes the stored reward (`step_rewards`,
  time-out bootstrap included) and dones. The storage copy stays eager (its cursor moves).

These are the eager path's functions on static tensors, so the statistics and the stored
transition are the same (bitwise where the bodies are re-run instead of replayed:
`RerunBackend`). Used for feed-forward networks without RND, normalizers without `until`, in
train mode (the learner checks; any other call takes the eager path). Warm-up, capture, replay
and the fallback to eager are `common.cuda_graphs.CudaGraphs`'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from unilab_storage import RolloutStorage

from ..common.cuda_graphs import CudaGraphs
from ..common.normalizer import EmpiricalNormalizer, NormalizerUpdate
from ._step import PPOState, act, cat_groups, rollout_normalizers, step_rewards

__all__ = ["CapturedRollout"]


class CapturedRollout:
    """Static buffers and the three rollout bodies of one learner (module docstring).

    Args:
        state: the learner's `PPOState`.
        graphs: the (empty) body set to register the bodies in.
        obs_groups: the observation groups stored (actor's and critic's).
        obs_shapes: per-env shape of each group.
        storage: the learner's rollout storage (its `num_envs` fixes the batch).
    """

    def __init__(
        self,
        state: PPOState,
        graphs: CudaGraphs,
        obs_groups: tuple[str, ...],
        obs_shapes: Mapping[str, tuple[int, ...]],
        storage: RolloutStorage,
    ) -> None:
        self.state = state
        self.graphs = graphs
        self.obs_groups = obs_groups
        self.obs_shapes = obs_shapes
        self.storage = storage
        self.act_body = graphs.body(self._act, "act")
        self.moments_body = graphs.body(self._moments, "normalizer moments")
        self.merge_body = graphs.body(self._merge, "normalizer merge + reward")
        self.obs_in: dict[str, torch.Tensor] = {}  # act's observations
        self.step_in: dict[str, torch.Tensor] = {}  # process's inputs
        self.total_in: list[torch.Tensor] = []  # the summed moments, body C's input
        self.has_truncated: bool | None = None  # whether the env step has `truncated`
        self.norms: list[tuple[Any, tuple[str, ...]]] = []
        self.plan: NormalizerUpdate | None = None
        self.pending: TensorDict | None = None  # the staged transition (static tensors)
        self._pending_src: dict[str, torch.Tensor] | None = None

    @property
    def bootstrap(self) -> bool:
        """The time-out bootstrap: configured and the env reports `truncated` (first step)."""
        return bool(self.state.config.bootstrap_time_outs and self.has_truncated)

    def accepts(self, obs: TensorDictBase) -> bool:
        """Whether this `act` call can run from the static buffers."""
        st = self.state
        if not (self.graphs.status.active and st.actor.training and st.critic.training):
            return False
        for g in self.obs_groups:
            x = obs.get(("obs", g), None)
            if x is None:
                return False
            ref = self.obs_in.get(g)
            expected = (self.storage.num_envs, *self.obs_shapes[g]) if ref is None else ref.shape
            if x.shape != expected:
                return False
        return True

    # ---------------------------------------------------------------- bodies
    def _act(self) -> dict[str, torch.Tensor]:
        fields: dict[Any, torch.Tensor] = {("obs", g): x for g, x in self.obs_in.items()}
        return act(self.state, TensorDict(fields, batch_size=[self.storage.num_envs]))

    def _batches(self) -> list[torch.Tensor | None]:
        obs = {g: self.step_in[f"obs.{g}"] for g in self.obs_groups}
        return [
            cat_groups(obs, groups) if isinstance(norm, EmpiricalNormalizer) else None
            for norm, groups in self.norms
        ]

    def _moments(self) -> list[torch.Tensor]:
        xs = self._batches()
        self.plan.local(xs)
        return self.plan.moments(xs)

    def _merge(self) -> tuple[torch.Tensor, torch.Tensor]:
        self.plan.merge(self.total_in)
        obs = {g: self.step_in[f"obs.{g}"] for g in self.obs_groups}
        truncated = self.step_in["truncated"] if self.bootstrap else None
        values = self.pending["values"]
        rewards = step_rewards(self.state, self.step_in["reward"], values, truncated, obs)
        return rewards, self.step_in["done"]

    # ---------------------------------------------------------------- driver
    def act(self, obs: TensorDictBase) -> TensorDict:
        """Body A on `obs`: the pending transition (static tensors until the next call)."""
        if not self.obs_in:
            self.obs_in = {g: torch.empty_like(obs["obs", g]) for g in self.obs_groups}
        for g, buf in self.obs_in.items():
            buf.copy_(obs["obs", g])
        out = self.act_body()
        if out is not self._pending_src:  # a new output (warm-up); a graph's is reused
            self._pending_src = out
            fields: dict[Any, torch.Tensor] = {("obs", g): x for g, x in self.obs_in.items()}
            fields.update(out)
            n = self.storage.num_envs
            self.pending = TensorDict(fields, batch_size=[n], device=self.state.device)
        return self.pending

    def process(self, step: TensorDictBase) -> None:
        """Bodies B and C on `step`, the collective between them, then the storage copy."""
        obs = step["obs"]
        if not self.step_in:
            self._allocate(step)
        elif ("truncated" in step.keys()) != self.has_truncated:  # noqa: SIM118
            raise RuntimeError(
                "PPO.process_env_step: the env step's keys changed ('truncated' came or went)"
            )
        for g in self.obs_groups:
            self.step_in[f"obs.{g}"].copy_(obs[g])
        self.step_in["reward"].copy_(step["reward"])
        self.step_in["done"].copy_(step["done"])
        if self.bootstrap:
            self.step_in["truncated"].copy_(step["truncated"])
        packs = self.moments_body()
        if self.plan.has_global:
            totals = self.plan.reduce(packs)
            if not self.total_in:
                self.total_in = [torch.empty_like(t) for t in totals]
            for buf, t in zip(self.total_in, totals, strict=True):
                buf.copy_(t)
        rewards, dones = self.merge_body()
        pending = self.pending
        pending.set("rewards", rewards)
        pending.set("dones", dones)
        self.storage.add(pending)

    def _allocate(self, step: TensorDictBase) -> None:
        obs = step["obs"]
        n = self.storage.num_envs
        dev = self.state.device
        self.has_truncated = "truncated" in step.keys()  # noqa: SIM118
        self.step_in = {f"obs.{g}": torch.empty_like(obs[g]) for g in self.obs_groups}
        self.step_in["reward"] = torch.zeros(n, dtype=torch.float32, device=dev)
        self.step_in["done"] = torch.zeros(n, dtype=torch.bool, device=dev)
        if self.bootstrap:
            self.step_in["truncated"] = torch.zeros(n, dtype=torch.float32, device=dev)
        # read here, at the first step, so that a `reduce_sum` rewired after construction counts
        self.norms = rollout_normalizers(self.state)
        self.plan = NormalizerUpdate([norm for norm, _ in self.norms])
