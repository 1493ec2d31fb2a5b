"""CUDA-graph replay of PPO's per-mini-batch step (`PPOConfig.capture="cuda_graph"`).

Feed-forward networks and equal mini-batches only (checked by `PPO._capture_check`). Two graphs
share one memory pool and are always replayed in the same order:

- A: forward + loss + backward from static input buffers into static `.grad` tensors, plus the
  local KL and the detached losses;
- B: LR rule (device tensor) + gradient clipping + fused capturable Adam (+ the RND Adam) +
  metric accumulation into `PPO._acc`.

Between them `grad_sync` runs eagerly on the static grads (its NCCL collective stays outside the
capture), and the KL it returns is copied into B's static KL input. Each mini-batch is gathered
straight into the static buffers with `index_select(out=...)`. The first `WARMUP` mini-batches
of the first captured update run eagerly on a side stream from the same static buffers (they are
real training steps that also create the optimizer state); the graphs are captured on the next
mini-batch and replayed from then on. If capture raises, the learner falls back to eager for
good and `PPO.capture_status` holds the reason.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDict
from torch import nn

from unilab_storage import FeedForwardBatcher, normalize_advantages

from ..common.cuda_graphs import side_stream

if TYPE_CHECKING:
    from .learner import PPO

__all__ = ["WARMUP", "CapturedStep"]

WARMUP = 2
"""Eager (side-stream) mini-batches before the capture."""

_KEYS = ("actions", "log_prob", "advantages", "values", "returns", "mean", "std")


class CapturedStep:
    """Static buffers and the two graphs of one `PPO` learner (see the module docstring)."""

    def __init__(self, ppo: PPO) -> None:
        self.ppo = ppo
        self.keys: list[Any] = [("obs", g) for g in ppo._obs_groups] + list(_KEYS)
        self.static: TensorDict | None = None
        self.kl_in: torch.Tensor | None = None
        self.kl_out: torch.Tensor | None = None
        self.losses_out: torch.Tensor | None = None
        self.graph_a: Any = None
        self.graph_b: Any = None
        self.eager_steps = 0

    # ----------------------------------------------------------------- driver
    def run_update(self, params: list[nn.Parameter]) -> tuple[int, int]:
        """All mini-batches of one update; returns (mini-batches, collectives)."""
        ppo, cfg = self.ppo, self.ppo.cfg
        flat = ppo.storage.data.flatten(0, 1)
        batcher = FeedForwardBatcher(
            num_mini_batches=cfg.num_mini_batches,
            num_epochs=cfg.num_epochs,
            shuffle=cfg.shuffle,
            remainder=cfg.remainder,
        )
        count = collectives = 0
        for idx in batcher.indices(flat.batch_size[0], ppo.generator, ppo.device):
            if self.static is None:
                self._allocate(flat, idx.numel())
            for k in self.keys:
                torch.index_select(flat[k], 0, idx, out=self.static[k])
            collectives += self._normalize_advantages() + self._step(params)
            count += 1
        return count, collectives

    def _allocate(self, flat: TensorDict, size: int) -> None:
        dev = self.ppo.device
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
        ppo = self.ppo
        if not (ppo.cfg.advantage_norm and ppo.cfg.advantage_norm_per_mini_batch):
            return 0
        adv = self.static["advantages"]
        with torch.no_grad():
            adv.copy_(normalize_advantages(adv, reduce_sum=ppo._adv_reduce))
        return int(ppo._adv_reduce is not None)

    def _eager(self, params: list[nn.Parameter]) -> int:
        ppo, st = self.ppo, self.static
        kl, losses = ppo._forward_backward(st, st, None, None, st["advantages"])
        kl, n = ppo._sync_grads(params, kl)
        ppo._apply(kl, losses)
        return n

    def _step(self, params: list[nn.Parameter]) -> int:
        ppo = self.ppo
        if ppo.capture_status != "pending" and self.graph_a is None:
            return self._eager(params)  # capture failed earlier in this update
        if self.graph_a is not None:
            return self._replay(params)
        if self.eager_steps < WARMUP:
            for opt in (ppo.optimizer, ppo.rnd_optimizer):
                if opt is not None:  # capturable Adam run eagerly on purpose: no warning
                    opt._warned_capturable_if_run_uncaptured = True
            with side_stream(ppo.device):
                n = self._eager(params)
            self.eager_steps += 1
            return n
        try:
            self._capture(params)
        except Exception as err:  # any capture failure: eager for good, with the reason
            self.graph_a = self.graph_b = None
            ppo.capture_status = f"eager: capture failed ({type(err).__name__}: {err})"
            warnings.warn(f"PPO CUDA-graph {ppo.capture_status}", stacklevel=2)
            for opt in (ppo.optimizer, ppo.rnd_optimizer):
                if opt is not None:
                    opt.zero_grad(set_to_none=True)
            return self._eager(params)
        ppo.capture_status = "captured"
        return self._replay(params)

    def _capture(self, params: list[nn.Parameter]) -> None:
        ppo, st = self.ppo, self.static
        for opt in (ppo.optimizer, ppo.rnd_optimizer):
            if opt is not None:  # grads are (re)allocated inside the graph pool
                opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize(ppo.device)
        pool = torch.cuda.graph_pool_handle()
        graph_a = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph_a, pool=pool):
            kl, losses = ppo._forward_backward(st, st, None, None, st["advantages"])
            for p in params:  # grad_sync semantics: a missing grad is a zero grad
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
        graph_b = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph_b, pool=pool):
            ppo._apply(self.kl_in if kl is not None else None, losses)
        self.kl_out, self.losses_out = kl, losses
        self.graph_a, self.graph_b = graph_a, graph_b

    def _replay(self, params: list[nn.Parameter]) -> int:
        self.graph_a.replay()
        kl, n = self.ppo._sync_grads(params, self.kl_out)
        if kl is not None:
            self.kl_in.copy_(kl)
        self.graph_b.replay()
        return n
