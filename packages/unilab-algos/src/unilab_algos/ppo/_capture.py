"""PPO's update from static buffers, as two CUDA-graph bodies (`PPOConfig.capture`).

Feed-forward networks and equal mini-batches only (the learner checks). Per mini-batch:

- the mini-batch is gathered straight into static buffers (`index_select(out=...)`), and its
  advantages normalized there when per mini-batch (eager: its collective stays outside);
- body A: `forward_backward` into static `.grad` tensors, the local KL and detached losses;
- `grad_sync` eagerly on the static grads; the global KL is copied into B's static input;
- body B: `apply_update` (LR rule, clipping, fused capturable Adam, metric accumulation).

Warm-up, capture, replay and the fallback to eager are `common.cuda_graphs.CudaGraphs`'.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict
from torch import nn

from unilab_storage import FeedForwardBatcher, normalize_advantages

from ..common.cuda_graphs import CudaGraphs
from ._step import PPOState, apply_update, forward_backward, sync_grads

__all__ = ["STATIC_KEYS", "CapturedUpdate"]

STATIC_KEYS = ("actions", "log_prob", "advantages", "values", "returns", "mean", "std")
"""Storage entries a mini-batch step reads (besides the observation groups)."""


class CapturedUpdate:
    """Static buffers and the two bodies of one learner's update (module docstring).

    Args:
        state: the learner's `PPOState`.
        graphs: the (empty) body set to register A and B in.
        obs_groups: the observation groups the step reads.
        params: the parameters `grad_sync` averages.
        adv_reduce: `reduce_sum` of a global per-mini-batch advantage normalization, or None.
    """

    def __init__(
        self,
        state: PPOState,
        graphs: CudaGraphs,
        obs_groups: tuple[str, ...],
        params: list[nn.Parameter],
        adv_reduce: Any,
    ) -> None:
        self.state = state
        self.graphs = graphs
        self.params = params
        self.adv_reduce = adv_reduce
        self.keys: list[Any] = [("obs", g) for g in obs_groups] + list(STATIC_KEYS)
        self.static: TensorDict | None = None
        self.kl_in: torch.Tensor | None = None
        self.losses: torch.Tensor | None = None  # A's output, B's input
        self.body_a = graphs.body(self._forward_backward, "forward/backward")
        self.body_b = graphs.body(self._apply, "apply")

    def _forward_backward(self) -> tuple[torch.Tensor | None, torch.Tensor]:
        st = self.static
        return forward_backward(
            self.state, st, st, None, None, st["advantages"], materialize_grads=self.params
        )

    def _apply(self) -> None:
        has_kl = self.state.config.schedule == "adaptive"
        apply_update(self.state, self.kl_in if has_kl else None, self.losses)

    def run(self, flat: TensorDict, generator: torch.Generator | None) -> tuple[int, int]:
        """All mini-batches of one update on the flattened storage `flat`; returns
        (mini-batches, collectives)."""
        cfg = self.state.config
        batcher = FeedForwardBatcher(
            num_mini_batches=cfg.num_mini_batches,
            num_epochs=cfg.num_epochs,
            shuffle=cfg.shuffle,
            remainder=cfg.remainder,
        )
        count = collectives = 0
        for idx in batcher.indices(flat.batch_size[0], generator, self.state.device):
            if self.static is None:
                self._allocate(flat, idx.numel())
            for k in self.keys:
                torch.index_select(flat[k], 0, idx, out=self.static[k])
            collectives += self._normalize_advantages()
            kl, self.losses = self.body_a()
            kl, n = sync_grads(self.state, self.params, kl)
            if kl is not None:
                self.kl_in.copy_(kl)
            self.body_b()
            collectives += n
            count += 1
        return count, collectives

    def _allocate(self, flat: TensorDict, size: int) -> None:
        dev = self.state.device
        self.static = TensorDict(
            {
                k: torch.empty((size, *flat[k].shape[1:]), dtype=flat[k].dtype, device=dev)
                for k in self.keys
            },
            batch_size=[size],
            device=dev,
        )
        self.kl_in = torch.zeros((), device=dev)

    def _normalize_advantages(self) -> int:
        cfg = self.state.config
        if not (cfg.advantage_norm and cfg.advantage_norm_per_mini_batch):
            return 0
        adv = self.static["advantages"]
        with torch.no_grad():
            adv.copy_(normalize_advantages(adv, reduce_sum=self.adv_reduce))
        return int(self.adv_reduce is not None)
