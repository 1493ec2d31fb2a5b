"""PPO's update: the one driver of E epochs x M mini-batches, eager or captured.

Per mini-batch, from the one batcher (`UpdateDriver.batches`):

- the mini-batch: feed-forward, an index set of the flattened rollout gathered into fresh
  tensors (eager) or straight into static buffers (captured: `index_select(out=...)`);
  recurrent, the trajectory batch of `RecurrentBatcher` (padded observations, masks, the
  hidden states at trajectory starts); its advantages normalized when per mini-batch (the
  collective stays outside the bodies);
- body A: `forward_backward` (gradients into `.grad`, the local KL and detached losses);
- `grad_sync` on the gradients; the global KL is body B's input;
- body B: `apply_update` (LR rule, clipping, optimizer steps, metric accumulation).

The bodies are registered in a `common.cuda_graphs.CudaGraphs` set: when it is active (warm-up,
capture, replay, fallback are its job) they run from the static buffers; when it is not (CPU,
`capture="none"`, recurrent nets, unequal mini-batches: see `PPO`'s capture check) the same
bodies run eagerly on the mini-batch itself. Whether an update is captured is decided once, at
its start.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from unilab_storage import FeedForwardBatcher, RecurrentBatcher, normalize_advantages

from ..common.cuda_graphs import CudaGraphs
from ..common.ranges import profiler_range
from ..common.sync import ReduceSum
from ._step import PPOState, apply_update, forward_backward, sync_grads, trainable_params

__all__ = ["STATIC_KEYS", "MiniBatch", "UpdateDriver"]

STATIC_KEYS = ("actions", "log_prob", "advantages", "values", "returns", "mean", "std")
"""Storage entries a mini-batch step reads (besides the observation groups)."""


@attrs.define(eq=False)
class MiniBatch:
    """One mini-batch of the update. `data`: the transitions `[B]` (recurrent: `[T, B']`);
    `obs`: where the step reads `("obs", g)` (recurrent: padded trajectories); `masks` and
    `initial` (hidden states at trajectory starts) for recurrent nets, else None;
    `advantages`: normalized when per mini-batch."""

    data: TensorDictBase
    obs: TensorDictBase
    masks: torch.Tensor | None = None
    initial: TensorDictBase | None = None
    advantages: torch.Tensor | None = None  # set by `UpdateDriver.set_advantages`


class UpdateDriver:
    """The update loop of one PPO learner and its two bodies (module docstring).

    Args:
        state: the learner's `PPOState`.
        graphs: the (empty) body set to register A and B in; its status says whether an update
            runs captured.
        obs_groups: the observation groups the step reads.
        adv_reduce: `reduce_sum` of a global per-mini-batch advantage normalization, or None.
    """

    def __init__(
        self,
        state: PPOState,
        graphs: CudaGraphs,
        obs_groups: Sequence[str],
        adv_reduce: ReduceSum | None,
    ) -> None:
        self.state = state
        self.graphs = graphs
        self.adv_reduce = adv_reduce
        self.keys: list[Any] = [("obs", g) for g in obs_groups] + list(STATIC_KEYS)
        self.static: MiniBatch | None = None  # captured: the buffers bodies read
        self.current: MiniBatch | None = None  # the mini-batch body A reads
        self.params: list[nn.Parameter] = []  # what grad_sync averages (read per update)
        self.captured = False  # whether the running update uses the static buffers
        self.kl: torch.Tensor | None = None  # body B's input: the global KL
        self.kl_in: torch.Tensor | None = None  # its static buffer when captured
        self.losses: torch.Tensor | None = None  # A's output, B's input
        self.body_a = graphs.body(self.forward_backward, "forward/backward")
        self.body_b = graphs.body(self.apply, "apply")

    # ---------------------------------------------------------------- bodies
    def forward_backward(self) -> tuple[torch.Tensor | None, torch.Tensor]:
        mb = self.current
        # a captured step needs every gradient tensor to exist (grad_sync reads them all)
        materialize = self.params if self.captured else ()
        return forward_backward(
            self.state,
            mb.data,
            mb.obs,
            mb.masks,
            mb.initial,
            mb.advantages,
            materialize_grads=materialize,
        )

    def apply(self) -> None:
        apply_update(self.state, self.kl, self.losses)

    # ---------------------------------------------------------------- driver
    def indices(
        self, num_samples: int, generator: torch.Generator | None
    ) -> Iterator[torch.Tensor]:
        """The flat sample indices of each feed-forward mini-batch, epoch by epoch."""
        cfg = self.state.config
        batcher = FeedForwardBatcher(
            num_mini_batches=cfg.num_mini_batches,
            num_epochs=cfg.num_epochs,
            shuffle=cfg.shuffle,
            remainder=cfg.remainder,
        )
        return batcher.indices(num_samples, generator, self.state.device)

    def batches(
        self, data: TensorDictBase, generator: torch.Generator | None
    ) -> Iterator[MiniBatch]:
        """The update's mini-batches of the rollout `data` [T, N], in order (`advantages` not
        yet set: `set_advantages`). Captured, each one is the static buffers, refilled."""
        cfg = self.state.config
        if cfg.recurrent:
            batcher = RecurrentBatcher(
                num_mini_batches=cfg.num_mini_batches,
                num_epochs=cfg.num_epochs,
                remainder=cfg.remainder,
                pad_keys=("obs",),
                hidden_keys=("hidden",),
            )
            for mb in batcher.batches(data, data["dones"]):
                yield MiniBatch(mb["data"], mb["padded"], mb["masks"], mb["initial"])
            return
        flat = data.flatten(0, 1)
        for idx in self.indices(flat.batch_size[0], generator):
            if not self.captured:
                mb = flat[idx]
                yield MiniBatch(mb, mb)
                continue
            if self.static is None:
                self.static = self.allocate(flat, idx.numel())
            for k in self.keys:
                torch.index_select(flat[k], 0, idx, out=self.static.data[k])
            yield self.static

    def run(self, data: TensorDictBase, generator: torch.Generator | None) -> tuple[int, int]:
        """All mini-batches of one update on the rollout `data` [T, N]; returns
        (mini-batches, collectives)."""
        self.captured = self.graphs.status.active
        self.params = trainable_params(self.state)
        count = collectives = 0
        for mb in self.batches(data, generator):
            collectives += self.set_advantages(mb)
            self.current = mb
            with profiler_range("unilab/forward_backward"):
                kl, self.losses = self.body_a()
            with profiler_range("unilab/grad_sync"):
                kl, n = sync_grads(self.state, self.params, kl)
            if kl is not None and self.captured:  # the graph of body B reads kl_in
                self.kl_in.copy_(kl)
                kl = self.kl_in
            self.kl = kl
            with profiler_range("unilab/apply"):
                self.body_b()
            collectives += n
            count += 1
        self.current = None
        return count, collectives

    def allocate(self, flat: TensorDict, size: int) -> MiniBatch:
        """Static buffers of a captured mini-batch of `size` samples (and the KL input)."""
        dev = self.state.device
        static = TensorDict(
            {
                k: torch.empty((size, *flat[k].shape[1:]), dtype=flat[k].dtype, device=dev)
                for k in self.keys
            },
            batch_size=[size],
            device=dev,
        )
        self.kl_in = torch.zeros((), device=dev)
        return MiniBatch(static, static)

    def set_advantages(self, mb: MiniBatch) -> int:
        """`mb.advantages`: the stored ones, normalized when per mini-batch (in the static
        buffer when captured); returns the collectives it made."""
        cfg = self.state.config
        adv = mb.data["advantages"]
        if not (cfg.advantage_norm and cfg.advantage_norm_per_mini_batch):
            mb.advantages = adv
            return 0
        with torch.no_grad():
            normalized = normalize_advantages(adv, reduce_sum=self.adv_reduce)
        if self.captured:  # the bodies read the static buffer
            adv.copy_(normalized)
            normalized = adv
        mb.advantages = normalized
        return int(self.adv_reduce is not None)
