"""Broadcast of module / TensorDict state from one rank through flat buffers (one per dtype).

Used at start and after loading a checkpoint so every rank holds rank 0's parameters AND buffers
(normalizer statistics, target networks). No pickling: tensors of one (dtype, device) are packed
into one flat buffer, broadcast in one collective and copied back in place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch
import torch.distributed as dist

from ._collectives import broadcast_, comm_device
from ._context import is_distributed
from ._tensordict import is_tensordict, tensordict_leaves

__all__ = ["broadcast_module_state", "broadcast_tensors", "named_state_tensors"]

Stateful = torch.nn.Module | Any  # a Module or a TensorDict


def named_state_tensors(
    items: Stateful | Sequence[Stateful] | Mapping[str, Stateful],
) -> list[tuple[str, torch.Tensor]]:
    """(name, tensor) for every parameter and buffer of modules and every TensorDict leaf.

    `items`: one module/TensorDict, a sequence of them (named by index, "0.weight"), or a
    mapping name -> module/TensorDict ("actor.0.weight"). A tensor shared by two modules is
    listed once, under its first name.
    """
    if isinstance(items, torch.nn.Module) or is_tensordict(items):
        named: Iterable[tuple[str, Stateful]] = [("", items)]
    elif isinstance(items, Mapping):
        named = [(f"{k}.", v) for k, v in items.items()]
    elif isinstance(items, Sequence) and not isinstance(items, str):
        named = [(f"{i}.", v) for i, v in enumerate(items)]
    else:
        raise TypeError(
            f"expected modules or TensorDicts (or a list/dict of them), got {type(items).__name__}"
        )
    seen: set[int] = set()
    out: list[tuple[str, torch.Tensor]] = []
    for prefix, obj in named:
        if isinstance(obj, torch.nn.Module):
            pairs = list(obj.named_parameters(prefix=prefix.rstrip(".")))
            pairs += list(obj.named_buffers(prefix=prefix.rstrip(".")))
        elif is_tensordict(obj):
            pairs = tensordict_leaves(obj, prefix)
        else:
            raise TypeError(
                f"{prefix.rstrip('.') or 'item'} is {type(obj).__name__}, "
                "not a torch.nn.Module or TensorDict"
            )
        for name, t in pairs:
            if id(t) not in seen:
                seen.add(id(t))
                out.append((name, t))
    return out


def broadcast_tensors(
    tensors: Sequence[torch.Tensor], src: int = 0, group: dist.ProcessGroup | None = None
) -> None:
    """Overwrite `tensors` in place with global rank `src`'s values; one collective per dtype.

    Every rank must pass tensors of the same shapes and dtypes in the same order.
    """
    if not is_distributed(group) or not tensors:
        return
    dev = comm_device(group)
    groups: dict[torch.dtype, list[torch.Tensor]] = {}
    for t in tensors:
        groups.setdefault(t.dtype, []).append(t)
    with torch.no_grad():
        for dtype, ts in groups.items():
            wire = torch.uint8 if dtype == torch.bool else dtype  # gloo has no bool
            flat = torch.cat([t.detach().reshape(-1).to(dev, wire) for t in ts])
            broadcast_(flat, src, group, name=f"broadcast_state[{dtype}]")
            for t, part in zip(ts, flat.split([t.numel() for t in ts]), strict=True):
                t.copy_(part.view(t.shape).to(t.device, dtype))


def broadcast_module_state(
    modules_or_tensordicts: Stateful | Sequence[Stateful] | Mapping[str, Stateful],
    src: int = 0,
    group: dist.ProcessGroup | None = None,
) -> None:
    """Make parameters and buffers of modules (and TensorDict leaves) equal to rank `src`'s.

    In place; one broadcast per dtype present. Call on every rank with the same structure.
    Identity without a process group.
    """
    named = named_state_tensors(modules_or_tensordicts)
    broadcast_tensors([t for _, t in named], src, group)
