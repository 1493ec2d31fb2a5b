"""Running observation normalizer with local, global (exact) and RSL-RL-compatible statistics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import nn

from .sync import ReduceSum

__all__ = ["EmpiricalNormalizer", "NormalizerUpdate", "update_normalizers"]


def _rank_slot(reduce_sum: ReduceSum | None) -> tuple[int, int]:
    """(this rank's slot, number of slots) of `reduce_sum`: its `rank`/`world_size`, or (0, 1)."""
    rank = getattr(reduce_sum, "rank", None)
    world = getattr(reduce_sum, "world_size", None)
    if rank is None or world is None:
        return 0, 1
    if not 0 <= rank < world:
        raise ValueError(f"reduce_sum has rank {rank!r} outside [0, world_size={world!r})")
    return int(rank), int(world)


def _batch_offset(s1: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """Mean minus the shift, `s1 / n` (0 where n == 0); `n` broadcasts against `s1`.

    Computed by this one function on the rank and after the sum, so that a slot holding one
    rank's moments gives back bitwise the same offset (its spread term then cancels exactly).
    """
    return s1 / n.clamp(min=1.0)


class EmpiricalNormalizer(nn.Module):
    """Normalizes inputs by running mean and population standard deviation.

    `forward(x) = (x - mean) / (std + eps)`; eps is added to the *std* as in RSL-RL. Shape of `x`:
    `(B, *shape)`; the statistics are over the batch axis only.

    Two arithmetic modes:

    - `"exact"` (default): float64 buffers `mean`, `var`, `std` (`forward` casts them to the
      input dtype), merged with Chan's parallel formula as `unilab_dist.RunningMoments` does
      (written out here: unilab_algos does not import unilab_dist). Each rank packs
      `[n, S1, M2, T2]`: `S1 = sum(x - c)` around the running mean `c` (the same on all
      ranks), `M2 = sum((x - m)^2)` around its own batch mean `m`, `T2 = S1 * (S1 / n)`. With
      `reduce_sum`, ONE call sums the packs; if `reduce_sum` has `rank` and `world_size`
      (`unilab_dist.sum_reducer()`'s has), each rank's pack has a slot of its own
      (`world_size * (1 + 3D)` values) and the spread between the ranks' batch means is taken
      around the global batch mean after the sum. The statistics then equal those of all
      ranks' batches concatenated (to float64 rounding) for any per-rank batch sizes and any
      |mean| / std, bit for bit the same on every rank (ranks start identical: the runner
      broadcasts buffers); locally (`reduce_sum=None`) too. A `reduce_sum` without `rank`
      sums all packs into one slot, whose spread `T2 - S1^2 / n` loses digits where
      |batch mean - c| >> std (the first update of a feature far from 0).
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

    def _pack_numel(self) -> int:
        """Length of `_moments`' packed vector: one `[n, S1, M2, T2]` per rank slot."""
        return _rank_slot(self.reduce_sum)[1] * (1 + 3 * self.mean.numel())

    def _moments(self, x: torch.Tensor) -> torch.Tensor:
        """This rank's packed float64 moments ("exact" mode), in its slot (see the class)."""
        k = self.mean.numel()
        d = x.to(torch.float64).reshape(x.shape[0], k) - self.mean.reshape(k)
        n = torch.full((1,), float(x.shape[0]), dtype=torch.float64, device=d.device)
        s1 = d.sum(0)
        offset = _batch_offset(s1, n)
        m2 = ((d - offset) ** 2).sum(0)
        pack = torch.cat([n, s1, m2, s1 * offset])
        rank, slots = _rank_slot(self.reduce_sum)
        if slots == 1:
            return pack
        packed = pack.new_zeros(slots, pack.numel())
        packed[rank] = pack
        return packed.reshape(-1)

    def _merge(self, packed: torch.Tensor) -> None:
        """Merge packed moments (already summed over ranks when global) into the statistics."""
        k = self.mean.numel()
        rows = packed.view(-1, 1 + 3 * k)
        n, s1, m2, t2 = (
            rows[:, :1],
            rows[:, 1 : 1 + k],
            rows[:, 1 + k : 1 + 2 * k],
            rows[:, 1 + 2 * k :],
        )
        offset = _batch_offset(s1, n)  # each slot's batch mean - c
        shared = (t2 - s1 * offset).clamp(min=0.0)  # spread of ranks that share a slot; 0 for one
        n_batch = n.sum()
        batch = _batch_offset(s1.sum(0), n_batch)  # the global batch mean - c
        spread = (n * (offset - batch) ** 2).sum(0)  # between the slots, around the batch mean
        m2_batch = (m2 + shared).sum(0) + spread
        # Chan: the running statistics (mean c, count, var) and the batch (n_batch, c + batch)
        old_count = self.count.to(torch.float64)
        total = (old_count + n_batch).clamp(min=1.0)
        frac = n_batch / total
        m2_new = old_count * self.var.reshape(k) + m2_batch + batch * batch * old_count * frac
        # No host sync: an empty global batch (n == 0) leaves the statistics unchanged.
        new_var = (m2_new / total).clamp(min=0.0).view(self.shape)
        self.var.copy_(torch.where(n_batch > 0, new_var, self.var))
        self.mean.add_((batch * frac).view(self.shape))  # batch == 0 when n == 0
        self.std.copy_(torch.sqrt(self.var))
        self.count.add_(n_batch.to(torch.long))

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


class NormalizerUpdate:
    """The update of several normalizers, split at its one collective.

    `local(xs)` updates the local and "rsl_rl" normalizers; `moments(xs)` packs the global
    "exact" ones' float64 moments, one vector per shared `reduce_sum` object (in order of first
    appearance); `reduce(packs)` sums each across ranks (ONE `reduce_sum` call per vector);
    `merge(totals)` merges the sums into the global normalizers. `xs` are the batches, one per
    normalizer of the constructor, in its order. `update_normalizers` runs the four phases
    eagerly; PPO's captured rollout runs `local` + `moments` and `merge` as two graph bodies with
    `reduce` eager between them. The members are fixed at construction (entries that are not an
    `EmpiricalNormalizer`, e.g. `nn.Identity` with normalization off, are ignored).
    """

    def __init__(self, norms: Sequence[nn.Module]) -> None:
        self.norms = list(norms)
        self.local_idx: list[int] = []
        groups: dict[int, list[int]] = {}
        for i, norm in enumerate(self.norms):
            if not isinstance(norm, EmpiricalNormalizer):
                continue
            if norm.mode == "exact" and norm.reduce_sum is not None:
                groups.setdefault(id(norm.reduce_sum), []).append(i)
            else:
                self.local_idx.append(i)
        self.global_idx = list(groups.values())

    @property
    def has_global(self) -> bool:
        """Whether any member merges across ranks (`reduce` then makes collectives)."""
        return bool(self.global_idx)

    def local(self, xs: Sequence[torch.Tensor]) -> None:
        for i in self.local_idx:
            self.norms[i]._update_batch(xs[i])

    def moments(self, xs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        return [torch.cat([self.norms[i]._moments(xs[i]) for i in idx]) for idx in self.global_idx]

    def reduce(self, packs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        return [
            self.norms[idx[0]].reduce_sum(pack)
            for idx, pack in zip(self.global_idx, packs, strict=True)
        ]

    def merge(self, totals: Sequence[torch.Tensor]) -> None:
        for idx, total in zip(self.global_idx, totals, strict=True):
            offset = 0
            for i in idx:
                size = self.norms[i]._pack_numel()
                self.norms[i]._merge(total[offset : offset + size])
                offset += size


@torch.no_grad()
def update_normalizers(batches: Sequence[tuple[nn.Module, torch.Tensor]]) -> None:
    """Update several normalizers, fusing the collectives of those that share a `reduce_sum`.

    `batches`: (normalizer, batch) pairs; entries whose module is not an `EmpiricalNormalizer`
    (normalization off: `nn.Identity`) are skipped, as are normalizers that take no update now
    (eval mode, `until` reached). Global "exact" normalizers with the same `reduce_sum` object
    pack their moments into one vector and make ONE `reduce_sum` call together, instead of one
    each; the result is the same sums, so the statistics match separate `update` calls (up to
    the summation order of the collective). Local and "rsl_rl" normalizers update as `update`
    does. Every rank must call this with the same normalizers in the same order. The phases are
    `NormalizerUpdate`'s.
    """
    live = [
        (norm, x)
        for norm, x in batches
        if isinstance(norm, EmpiricalNormalizer) and norm._wants_update(x)
    ]
    plan = NormalizerUpdate([norm for norm, _ in live])
    xs = [x for _, x in live]
    plan.local(xs)
    if plan.has_global:
        plan.merge(plan.reduce(plan.moments(xs)))
