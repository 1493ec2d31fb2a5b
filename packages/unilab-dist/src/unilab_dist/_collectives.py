"""Tensor and scalar reductions, object broadcast, and the one place collectives are issued.

Every function is the identity without a process group or at world size 1. Each collective
that really runs is recorded in `accounting` and a timed-out collective raises
`CollectiveTimeoutError` naming the operation and phase instead of a bare backend error.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import torch
import torch.distributed as dist

from ._accounting import accounting
from ._context import is_distributed

__all__ = [
    "CollectiveTimeoutError",
    "all_gather_tensor",
    "all_reduce",
    "broadcast_object",
    "reduce_scalars",
    "sum_reducer",
]

T = TypeVar("T")
_OPS = ("mean", "sum", "max", "min")


class CollectiveTimeoutError(RuntimeError):
    """A collective did not complete within the process group's timeout (a rank never joined)."""


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def run_collective(name: str, nbytes: int, fn: Callable[[], T]) -> T:
    """Issue one collective: account for it (and time it inside `accounting.timing`), and turn
    a timeout into CollectiveTimeoutError."""
    accounting.record(nbytes)
    device = accounting.timed_device
    if device is None or _capturing(device):
        return _issue(name, nbytes, fn)
    _wait_for(device)
    start = time.perf_counter()
    out = _issue(name, nbytes, fn)
    _wait_for(device)
    accounting.record_seconds(time.perf_counter() - start)
    return out


def _capturing(device: torch.device) -> bool:
    return device.type == "cuda" and torch.cuda.is_current_stream_capturing()


def _wait_for(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _issue(name: str, nbytes: int, fn: Callable[[], T]) -> T:
    try:
        return fn()
    except RuntimeError as e:  # gloo/NCCL report timeouts as RuntimeError subclasses
        text = str(e).lower()
        if "timed out" in text or "timeout" in text:
            raise CollectiveTimeoutError(
                f"{name} ({nbytes} bytes, phase {accounting.current_phase!r}) timed out: "
                f"a rank did not join the collective ({type(e).__name__}: {e})"
            ) from e
        raise


def comm_device(group: dist.ProcessGroup | None = None) -> torch.device:
    """The device tensors must live on for the group's backend (current CUDA device for NCCL)."""
    if "nccl" in str(dist.get_backend(group)):
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _reduce_op(op: str) -> dist.ReduceOp:
    return {
        "sum": dist.ReduceOp.SUM,
        "mean": dist.ReduceOp.SUM,
        "max": dist.ReduceOp.MAX,
        "min": dist.ReduceOp.MIN,
    }[op]


def _check_op(op: str) -> None:
    if op not in _OPS:
        raise ValueError(f"op must be one of {_OPS}, got {op!r}")


def all_reduce_(
    t: torch.Tensor, op: str = "sum", group: dist.ProcessGroup | None = None, name: str = ""
) -> torch.Tensor:
    """In-place all-reduce of a contiguous tensor (mean divides after summing). Returns `t`."""
    _check_op(op)
    if not is_distributed(group):
        return t
    run_collective(
        name or f"all_reduce[{op}]", _nbytes(t), lambda: dist.all_reduce(t, _reduce_op(op), group)
    )
    if op == "mean":
        t.div_(dist.get_world_size(group))
    return t


def all_reduce(
    tensor: torch.Tensor, op: str = "mean", group: dist.ProcessGroup | None = None
) -> torch.Tensor:
    """Reduce `tensor` across ranks with `op` ("mean", "sum", "max" or "min"); return a new tensor.

    Same shape, dtype and device as `tensor`; the input is not modified. "mean" needs a
    floating-point tensor. One collective; the identity (a copy) without a process group.
    """
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"all_reduce takes a torch.Tensor, got {type(tensor).__name__}")
    _check_op(op)
    if op == "mean" and not (tensor.is_floating_point() or tensor.is_complex()):
        raise TypeError(f"op 'mean' needs a floating-point tensor, got {tensor.dtype}")
    out = tensor.detach().clone(memory_format=torch.contiguous_format)
    if not is_distributed(group):
        return out
    if out.dtype == torch.bool:
        if op in ("sum", "mean"):
            raise TypeError("op 'sum'/'mean' of a bool tensor is ambiguous; cast it first")
        as_int = all_reduce_(out.to(torch.uint8), op, group)
        return as_int.to(torch.bool)
    dev = comm_device(group)
    if out.device != dev:
        return all_reduce_(out.to(dev), op, group).to(tensor.device)
    return all_reduce_(out, op, group)


class SumReducer:
    """The `reduce_sum` callable of `sum_reducer`: sums a tensor across the ranks of `group`.

    `rank` and `world_size` (this rank's index in the group and the group's size; 0 and 1
    without a process group, read at each access) let a caller give every rank its own slot
    in the summed tensor, so the sum carries every rank's values apart (UniLab's observation
    normalizers merge per-rank moments that way, exactly, in the same one collective).
    """

    def __init__(self, group: dist.ProcessGroup | None = None) -> None:
        self.group = group

    def __call__(self, tensor: torch.Tensor) -> torch.Tensor:
        if not is_distributed(self.group):
            return tensor
        return all_reduce(tensor, "sum", self.group)

    @property
    def rank(self) -> int:
        return dist.get_rank(self.group) if is_distributed(self.group) else 0

    @property
    def world_size(self) -> int:
        return dist.get_world_size(self.group) if is_distributed(self.group) else 1


def sum_reducer(group: dist.ProcessGroup | None = None) -> SumReducer:
    """A `reduce_sum` callable for learners and storages: sums a tensor across ranks.

    Returns a new tensor of the same shape/dtype. Without a process group (or at world size 1,
    decided at call time) it returns its input unchanged. The callable also has `rank` and
    `world_size` attributes (see `SumReducer`).
    """
    return SumReducer(group)


def reduce_scalars(
    values: Mapping[str, float | int | torch.Tensor],
    op: str = "mean",
    group: dist.ProcessGroup | None = None,
) -> dict[str, float]:
    """Reduce many Python (or 0-d tensor) scalars in ONE float64 collective.

    Returns {key: reduced float} in the input's key order. Every rank must pass the same keys
    (sorted order is not required but the order must agree). Identity without a process group.
    """
    _check_op(op)
    keys = list(values)
    raw = []
    for k in keys:
        v = values[k]
        if isinstance(v, torch.Tensor):
            if v.numel() != 1:
                raise ValueError(f"reduce_scalars: value {k!r} has {v.numel()} elements, not 1")
            v = v.item()
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"reduce_scalars: value {k!r} is {type(v).__name__}, not a number")
        raw.append(float(v))
    if not is_distributed(group) or not keys:
        return dict(zip(keys, raw, strict=True))
    buf = torch.tensor(raw, dtype=torch.float64, device=comm_device(group))
    all_reduce_(buf, op, group, name=f"reduce_scalars[{op}]")
    return dict(zip(keys, buf.tolist(), strict=True))


def all_gather_tensor(tensor: torch.Tensor, group: dist.ProcessGroup | None = None) -> torch.Tensor:
    """Stack every rank's same-shaped `tensor`: returns shape (world_size, *tensor.shape).

    One collective. Without a process group returns `tensor.unsqueeze(0)` (a copy).
    """
    if not is_distributed(group):
        return tensor.detach().unsqueeze(0).clone()
    dev = comm_device(group)
    src = tensor.detach().to(dev).contiguous()
    world = dist.get_world_size(group)
    out = torch.empty((world, *src.shape), dtype=src.dtype, device=dev)
    parts = list(out.unbind(0))
    run_collective("all_gather", _nbytes(src), lambda: dist.all_gather(parts, src, group))
    return out.to(tensor.device)


def broadcast_(
    t: torch.Tensor, src: int = 0, group: dist.ProcessGroup | None = None, name: str = ""
) -> torch.Tensor:
    """In-place broadcast of a contiguous tensor on the group's comm device. Returns `t`."""
    if not is_distributed(group):
        return t
    run_collective(name or "broadcast", _nbytes(t), lambda: dist.broadcast(t, src, group))
    return t


def broadcast_object(obj: Any, src: int = 0, group: dist.ProcessGroup | None = None) -> Any:
    """Send a small picklable object from global rank `src` to every rank; return it.

    For Python state such as a curriculum level or a schedule. Two collectives (length, then
    the pickled bytes); other ranks' `obj` is ignored. Identity without a process group.
    """
    if not is_distributed(group):
        return obj
    dev = comm_device(group)
    is_src = dist.get_rank() == src
    payload = pickle.dumps(obj) if is_src else b""
    length = torch.tensor([len(payload)], dtype=torch.int64, device=dev)
    broadcast_(length, src, group, name="broadcast_object[len]")
    n = int(length.item())
    if is_src:
        data = torch.frombuffer(bytearray(payload), dtype=torch.uint8).to(dev)
    else:
        data = torch.empty(n, dtype=torch.uint8, device=dev)
    broadcast_(data, src, group, name="broadcast_object[data]")
    if is_src:
        return obj
    return pickle.loads(bytes(data.cpu().tolist()))  # our own ranks' bytes
