"""The types of the distributed behaviour a learner is given (`None`: one process).

- `GradSync`: `grad_sync(params, extra) -> extra`, called once per optimizer step after the
  backward: makes every rank's gradients of `params` the global ones (and reduces `extra`, a
  flat tensor of metric sums riding in the same collective, or None). `unilab_dist.GradAllReduce`
  is one: a single fused all-reduce.
- `ReduceSum`: `reduce_sum(x) -> x` summed over ranks, same shape and dtype (the normalizers'
  moments, the global advantage statistics). `unilab_dist.sum_reducer()` is one. It may also
  have int attributes `rank` and `world_size` (`sum_reducer()`'s does): then the "exact"
  normalizers give every rank its own slot in the summed vector, which makes their cross-rank
  merge exact at any conditioning (see `EmpiricalNormalizer`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

__all__ = ["GradSync", "ReduceSum"]

GradSync = Callable[[Sequence[nn.Parameter], torch.Tensor | None], torch.Tensor | None]
ReduceSum = Callable[[torch.Tensor], torch.Tensor]
