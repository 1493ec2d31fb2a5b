"""Running observation normalizer with local, global (exact) and RSL-RL-compatible statistics."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import torch
from torch import nn

__all__ = ["EmpiricalNormalizer", "ReduceSum", "update_normalizers"]

ReduceSum = Callable[[torch.Tensor], torch.Tensor]
"""Sums a tensor across ranks and returns it (same shape and dtype); `None` means one process."""


class EmpiricalNormalizer(nn.Module):
    """Normalizes inputs by running mean and population standard deviation.

    `forward(x) = (x - mean) / (std + eps)`; eps is added to the *std* as in RSL-RL. Shape of `x`:
    `(B, *shape)`; the statistics are over the batch axis only.

    Two arithmetic modes:

    - `"exact"` (default): the batch moments are taken around the current running mean in
      float64 (`n`, `S1 = sum(x - mean)`, `S2 = sum((x - mean)^2)`), made global with ONE call of
      `reduce_sum` on the packed float64 vector `[n, S1, S2]` when `reduce_sum` is given, and
      merged in float64:
      `mean' = mean + S1 / n'`, `var' = (count * var + S2 - S1^2 / n') / n'`, `n' = count + n`.
      This is exact for unequal per-rank batch sizes, and every rank holds bit-identical
      statistics (all ranks start identical because the runner broadcasts buffers). Buffers
      `mean`, `var`, `std` are float64; `forward` casts them to the input dtype.
    - `"rsl_rl"`: reproduces `rsl_rl.modules.EmpiricalNormalization` (5.4.2) bit for bit:
      float32 buffers and its batched update
      `mean += r*(mu_b - mean)`, `var += r*(var_b - var + (mu_b - mean_old)*(mu_b - mean_new))`,
      `r = n / count`. Local only (`reduce_sum` must be None).

    Updates happen only in training mode and only while `count < until` (if `until` is set).

    Args:
        shape: feature shape (without the batch axis), an int or a tuple.
        eps: added to the std in `forward`.
        reduce_sum: cross-rank sum (see `ReduceSum`), or None for local statistics.
        until: stop updating once `count >= until` samples have been seen (global count when
            `reduce_sum` is given).
        mode: `"exact"` or `"rsl_rl"`.
    """

    def __init__(
        self,
        shape: int | tuple[int, ...],
        *,
        eps: float = 1e-2,
        reduce_sum: ReduceSum | None = None,
        until: int | None = None,
        mode: Literal["exact", "rsl_rl"] = "exact",
    ) -> None:
        super().__init__()
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if not shape or any((not isinstance(s, int)) or s <= 0 for s in shape):
            raise ValueError(f"shape must be positive ints, got {shape!r}")
        if not eps >= 0.0:
            raise ValueError(f"eps must be >= 0, got {eps!r}")
        if until is not None and until <= 0:
            raise ValueError(f"until must be positive or None, got {until!r}")
        if mode not in ("exact", "rsl_rl"):
            raise ValueError(f"mode must be 'exact' or 'rsl_rl', got {mode!r}")
        if mode == "rsl_rl" and reduce_sum is not None:
            raise ValueError("mode='rsl_rl' keeps local statistics; reduce_sum must be None")
        if reduce_sum is not None and not callable(reduce_sum):
            raise TypeError(f"reduce_sum must be callable or None, got {type(reduce_sum)!r}")
        self.shape = shape
        self.eps = float(eps)
        self.until = until
        self.mode = mode
        self.reduce_sum = reduce_sum
        dtype = torch.float64 if mode == "exact" else torch.float32
        self.register_buffer("mean", torch.zeros(shape, dtype=dtype))
        self.register_buffer("var", torch.ones(shape, dtype=dtype))
        self.register_buffer("std", torch.ones(shape, dtype=dtype))
        self.register_buffer("count", torch.tensor(0, dtype=torch.long))

    @property
    def is_global(self) -> bool:
        """True when the statistics are reduced across ranks."""
        return self.reduce_sum is not None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Normalize `x` of shape `(..., *shape)`; returns the same shape and dtype."""
        return (x - self.mean.to(x.dtype)) / (self.std.to(x.dtype) + self.eps)

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        """Undo `forward`: `y * (std + eps) + mean`."""
        return y * (self.std.to(y.dtype) + self.eps) + self.mean.to(y.dtype)

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Merge the batch `x` of shape `(B, *shape)` into the running statistics.

        A no-op in eval mode or once `count >= until`. With `reduce_sum`, every rank must call
        it the same number of times (it performs one collective per call); `B` may differ
        between ranks and may be 0 on some ranks. `update_normalizers` updates several
        normalizers that share one `reduce_sum` with a single collective.
        """
        if self._wants_update(x):
            self._update_batch(x)

    def _update_batch(self, x: torch.Tensor) -> None:
        if self.mode == "rsl_rl":
            self._update_rsl_rl(x)
            return
        packed = self._moments(x)
        self._merge(self.reduce_sum(packed) if self.reduce_sum is not None else packed)

    def _wants_update(self, x: torch.Tensor) -> bool:
        if x.shape[1:] != self.shape:
            raise ValueError(f"expected a batch of shape (B, *{self.shape}), got {tuple(x.shape)}")
        if not self.training:
            return False
        return self.until is None or int(self.count) < self.until

    def _update_rsl_rl(self, x: torch.Tensor) -> None:
        # Same expression order as rsl_rl.modules.normalization.EmpiricalNormalization.update.
        count_x = x.shape[0]
        self.count += count_x
        rate = count_x / self.count
        var_x = torch.var(x, dim=0, unbiased=False)
        mean_x = torch.mean(x, dim=0)
        delta_mean = mean_x - self.mean
        self.mean += rate * delta_mean
        self.var += rate * (var_x - self.var + delta_mean * (mean_x - self.mean))
        self.std.copy_(torch.sqrt(self.var))

    def _moments(self, x: torch.Tensor) -> torch.Tensor:
        """This rank's packed float64 `[n, S1, S2]` around the current mean ("exact" mode)."""
        d = x.to(torch.float64) - self.mean
        n_local = torch.full((1,), float(x.shape[0]), dtype=torch.float64, device=d.device)
        return torch.cat([n_local, d.sum(0).flatten(), (d * d).sum(0).flatten()])

    def _merge(self, packed: torch.Tensor) -> None:
        """Merge packed moments (already summed over ranks when global) into the statistics."""
        k = self.mean.numel()
        n = packed[0]
        s1 = packed[1 : 1 + k].view(self.shape)
        s2 = packed[1 + k :].view(self.shape)
        old_count = self.count.to(torch.float64)
        # No host sync: an empty global batch (n == 0) leaves the statistics unchanged.
        total = (old_count + n).clamp(min=1.0)
        nonempty = n > 0
        new_var = ((old_count * self.var + s2 - s1 * s1 / total) / total).clamp(min=0.0)
        self.var.copy_(torch.where(nonempty, new_var, self.var))
        self.mean.add_(s1 / total)  # s1 == 0 when n == 0
        self.std.copy_(torch.sqrt(self.var))
        self.count.add_(n.to(torch.long))

    def detached_copy(self) -> EmpiricalNormalizer:
        """A copy with the same statistics, no `reduce_sum`, in eval mode (for export/teachers)."""
        out = EmpiricalNormalizer(self.shape, eps=self.eps, until=self.until, mode=self.mode)
        out.load_state_dict(self.state_dict())
        return out.to(self.mean.device).eval()

    def extra_repr(self) -> str:
        return (
            f"shape={self.shape}, eps={self.eps}, mode={self.mode!r}, global={self.is_global}, "
            f"until={self.until}"
        )


@torch.no_grad()
def update_normalizers(batches: Sequence[tuple[nn.Module, torch.Tensor]]) -> None:
    """Update several normalizers, fusing the collectives of those that share a `reduce_sum`.

    `batches`: (normalizer, batch) pairs; entries whose module is not an `EmpiricalNormalizer`
    (normalization off: `nn.Identity`) are skipped. Global "exact" normalizers with the same
    `reduce_sum` object pack their moments into one vector and make ONE `reduce_sum` call
    together, instead of one each; the result is the same sums, so the statistics match
    separate `update` calls (up to the summation order of the collective). Local and "rsl_rl"
    normalizers update as `update` does. Every rank must call this with the same normalizers
    in the same order.
    """
    fused: dict[int, list[tuple[EmpiricalNormalizer, torch.Tensor]]] = {}
    for norm, x in batches:
        if not isinstance(norm, EmpiricalNormalizer) or not norm._wants_update(x):
            continue
        if norm.mode == "exact" and norm.reduce_sum is not None:
            fused.setdefault(id(norm.reduce_sum), []).append((norm, x))
        else:
            norm._update_batch(x)
    for members in fused.values():
        packs = [norm._moments(x) for norm, x in members]
        total = members[0][0].reduce_sum(torch.cat(packs))
        offset = 0
        for (norm, _), pack in zip(members, packs, strict=True):
            norm._merge(total[offset : offset + pack.numel()])
            offset += pack.numel()
