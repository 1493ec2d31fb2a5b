"""Replica-consistency check: are parameters (and optimizer state) the same on every rank?

Each tensor is summarized by three float64 checksums (sum, sum of squares, a position-weighted
sum that catches permutations: position i weighs 1 + (i * K mod 2^32) / 2^32 with K odd, so
the weights lie in [1, 2) and no two positions below 2^32 share one; a swap of two different
values always changes its exact value). One all-gather of a structure fingerprint, then one all-gather
of the checksums; every rank compares all ranks against rank 0 and raises the same
`ReplicaMismatchError`, so no rank is left waiting in a later collective.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence

import torch
import torch.distributed as dist

from ._broadcast import Stateful, named_state_tensors
from ._collectives import all_gather_tensor
from ._context import is_distributed

__all__ = ["ReplicaMismatchError", "check_replicas"]


class ReplicaMismatchError(RuntimeError):
    """Ranks hold different parameters/buffers/optimizer state; the message names which."""


def _optimizer_tensors(
    optimizers: Sequence[torch.optim.Optimizer],
) -> list[tuple[str, torch.Tensor]]:
    out = []
    for i, opt in enumerate(optimizers):
        state = opt.state_dict()["state"]
        for pid in sorted(state):
            for key in sorted(state[pid]):
                value = state[pid][key]
                if isinstance(value, torch.Tensor):
                    out.append((f"optimizer[{i}].state[{pid}].{key}", value))
    return out


_CHECKSUMS = ("sum", "sum of squares", "position-weighted sum")
# odd (so i -> i*K mod 2^32 is a bijection), about 2^31 / golden ratio (neighbours far apart)
_WEIGHT_MULTIPLIER = 1_327_217_885


def _position_weights(numel: int, device: torch.device) -> torch.Tensor:
    """float64 weights in [1, 2), pairwise distinct for the first 2^32 positions."""
    i = torch.arange(numel, device=device, dtype=torch.int64) & 0xFFFFFFFF
    hashed = (i * _WEIGHT_MULTIPLIER) & 0xFFFFFFFF  # i*K < 2^63: no int64 overflow
    return 1.0 + hashed.to(torch.float64) / 2.0**32


def _checksums(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    x = t.detach().reshape(-1).to(device=device, dtype=torch.float64)
    if x.numel() == 0:
        return torch.zeros(len(_CHECKSUMS), dtype=torch.float64, device=device)
    w = _position_weights(x.numel(), device)
    return torch.stack([x.sum(), (x * x).sum(), (x * w).sum()])


def check_replicas(
    modules: Stateful | Sequence[Stateful] | Mapping[str, Stateful],
    optimizers: Sequence[torch.optim.Optimizer] | None = None,
    *,
    group: dist.ProcessGroup | None = None,
    rtol: float = 0.0,
    atol: float = 0.0,
) -> int:
    """Raise `ReplicaMismatchError` unless every rank holds the same state as rank 0.

    Compares every parameter and buffer of `modules` (and TensorDict leaves) and, if given, every
    tensor in the optimizers' state. Default tolerance 0: replicas of a correct data-parallel
    run are bitwise identical. Returns the number of tensors checked. Two collectives; no-op
    (still counting tensors) without a process group. Must be called on every rank.
    """
    named = named_state_tensors(modules)
    if optimizers is not None:
        named += _optimizer_tensors(list(optimizers))
    if not is_distributed(group):
        return len(named)
    device = named[0][1].device if named else torch.device("cpu")
    sig = "|".join(f"{n}:{tuple(t.shape)}:{t.dtype}" for n, t in named).encode()
    fingerprint = torch.tensor([len(named), zlib.crc32(sig)], dtype=torch.int64, device=device)
    fps = all_gather_tensor(fingerprint, group)
    bad = [r for r in range(fps.shape[0]) if not torch.equal(fps[r], fps[0])]
    if bad:
        raise ReplicaMismatchError(
            f"rank {bad[0]} has a different structure than rank 0 "
            f"({int(fps[bad[0], 0])} vs {int(fps[0, 0])} tensors, or different names/shapes/dtypes)"
        )
    if not named:
        return 0
    local = torch.stack([_checksums(t, device) for _, t in named])
    sums = all_gather_tensor(local, group)  # (world, T, 3)
    ref = sums[0]
    problems = []
    for r in range(1, sums.shape[0]):
        close = torch.isclose(sums[r], ref, rtol=rtol, atol=atol, equal_nan=True)
        for i in (~close.all(dim=1)).nonzero().flatten().tolist():
            k = int((~close[i]).nonzero()[0])  # the first checksum that differs
            problems.append((r, named[i][0], k, sums[r, i, k].item(), ref[i, k].item()))
    if problems:
        r, name, k, mine, theirs = problems[0]
        more = f" (and {len(problems) - 1} more mismatches)" if len(problems) > 1 else ""
        raise ReplicaMismatchError(
            f"rank {r} differs from rank 0 in tensor {name!r} "
            f"(checksum {_CHECKSUMS[k]} {mine!r} vs {theirs!r}){more}"
        )
    return len(named)
