"""Running moments (count, mean, M2 in float64) with an exact merge across ranks.

Chan et al.'s parallel update: merging (n_a, mean_a, M2_a) and (n_b, mean_b, M2_b) gives
    n = n_a + n_b,  delta = mean_b - mean_a,
    mean = mean_a + delta * n_b / n,
    M2 = M2_a + M2_b + delta^2 * n_a * n_b / n,
which equals the moments of the concatenated data (up to float64 rounding), whatever the
per-rank counts are. Across ranks all per-rank triples are gathered in ONE collective and merged
in rank order, so every rank computes bitwise the same result.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from ._collectives import all_gather_tensor
from ._context import is_distributed

__all__ = ["RunningMoments"]


class RunningMoments:
    """Count, mean and M2 (sum of squared deviations) of a stream of vectors, in float64.

    Shapes: `mean` and `m2` are (*shape), `count` is a float64 0-d tensor (number of samples).
    `shape=()` keeps the moments of a scalar stream (advantages, returns), updated with 1-D
    batches (B,). `update(x)` folds a batch `x` of shape (B, *shape) in; with a process group, the batches of
    all ranks are merged first (`group` argument), so the moments stay identical on all ranks
    and equal those of every rank's data concatenated.
    """

    def __init__(self, shape: tuple[int, ...] | int, device: torch.device | str = "cpu") -> None:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if any((not isinstance(s, int)) or s < 1 for s in shape):
            raise ValueError(f"shape must hold positive ints, got {shape}")
        self.shape = shape
        self.count = torch.zeros((), dtype=torch.float64, device=device)
        self.mean = torch.zeros(shape, dtype=torch.float64, device=device)
        self.m2 = torch.zeros(shape, dtype=torch.float64, device=device)

    @property
    def var(self) -> torch.Tensor:
        """Population variance M2 / count (zeros while count == 0), float64 (*shape)."""
        return self.m2 / self.count.clamp(min=1.0)

    @property
    def std(self) -> torch.Tensor:
        """sqrt(var), float64 (*shape)."""
        return self.var.sqrt()

    @classmethod
    def from_batch(cls, x: torch.Tensor) -> RunningMoments:
        """The moments of the rows of `x` (B, *shape); B may be 0; a 1-D `x` gives shape ()."""
        if not isinstance(x, torch.Tensor) or x.dim() < 1:
            raise ValueError(
                f"x must be a tensor of shape (B, *shape) with dim >= 1, got "
                f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}"
            )
        out = cls(tuple(x.shape[1:]), device=x.device)
        if x.shape[0] == 0:
            return out
        xd = x.detach().to(torch.float64)
        out.count = torch.tensor(float(x.shape[0]), dtype=torch.float64, device=x.device)
        out.mean = xd.mean(0)
        out.m2 = ((xd - out.mean) ** 2).sum(0)
        return out

    def merge(self, other: RunningMoments) -> RunningMoments:
        """A new `RunningMoments` holding the moments of both (Chan's parallel update)."""
        if other.shape != self.shape:
            raise ValueError(f"cannot merge moments of shape {other.shape} into {self.shape}")
        out = RunningMoments(self.shape, device=self.mean.device)
        n = self.count + other.count
        if n.item() == 0:
            return out
        delta = other.mean.to(self.mean.device) - self.mean
        frac = other.count / n
        out.count = n
        out.mean = self.mean + delta * frac
        out.m2 = self.m2 + other.m2.to(self.m2.device) + delta**2 * self.count * frac
        return out

    def all_merge(self, group: dist.ProcessGroup | None = None) -> RunningMoments:
        """The merge of every rank's moments (one all-gather of 1 + 2*D float64 values).

        Merged in rank order, so all ranks get bitwise the same result. Identity (a copy)
        without a process group.
        """
        packed = torch.cat([self.count.reshape(1), self.mean.reshape(-1), self.m2.reshape(-1)])
        if not is_distributed(group):
            return self.merge(RunningMoments(self.shape, device=self.mean.device))
        gathered = all_gather_tensor(packed, group)
        d = self.mean.numel()
        out = RunningMoments(self.shape, device=self.mean.device)
        for row in gathered:
            part = RunningMoments(self.shape, device=self.mean.device)
            part.count = row[0].clone()
            part.mean = row[1 : 1 + d].reshape(self.shape).clone()
            part.m2 = row[1 + d :].reshape(self.shape).clone()
            out = out.merge(part)
        return out

    def update(self, x: torch.Tensor, group: dist.ProcessGroup | None = None) -> None:
        """Fold the batch `x` (B, *shape) of this rank, and those of all ranks, into self."""
        if tuple(x.shape[1:]) != self.shape:
            raise ValueError(f"batch of shape {tuple(x.shape)} does not match (B, *{self.shape})")
        merged = self.merge(RunningMoments.from_batch(x).all_merge(group))
        self.count, self.mean, self.m2 = merged.count, merged.mean, merged.m2

    def state_dict(self) -> dict[str, torch.Tensor]:
        """{"count", "mean", "m2"} tensors (float64) for checkpoints."""
        return {"count": self.count.clone(), "mean": self.mean.clone(), "m2": self.m2.clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore from `state_dict()` output."""
        mean = state["mean"].to(self.mean.device, torch.float64)
        if tuple(mean.shape) != self.shape:
            raise ValueError(f"state of shape {tuple(mean.shape)} does not match {self.shape}")
        self.count = state["count"].to(self.count.device, torch.float64).reshape(())
        self.mean = mean.clone()
        self.m2 = state["m2"].to(self.m2.device, torch.float64).clone()
