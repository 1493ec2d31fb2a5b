"""Validation helpers shared by the storages: clear errors for bad configuration and input."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

__all__ = ["LeafSpec", "check_leaves", "gather", "leaf_specs", "positive_int", "resolve_device"]

LeafSpec = tuple[tuple[int, ...], torch.dtype]


def positive_int(value: object, name: str, minimum: int = 1) -> int:
    """`value` as an int >= `minimum`, or a ValueError/TypeError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def resolve_device(device: torch.device | str | None, td: TensorDictBase) -> torch.device:
    """The explicit `device`, else the TensorDict's device, else its first leaf's, else CPU.

    A bare "cuda" is pinned to the current CUDA device so later equality checks are exact.
    """
    if device is None:
        device = td.device
    if device is None:
        leaves = list(td.values(include_nested=True, leaves_only=True))
        device = leaves[0].device if leaves else torch.device("cpu")
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return device


def leaf_specs(template: TensorDictBase, lead: int, what: str) -> dict[NestedKey, LeafSpec]:
    """Per-leaf (shape without the leading dim, dtype) of a template whose leaves are [lead, ...]."""
    if not isinstance(template, TensorDictBase):
        raise TypeError(f"{what} template must be a TensorDict, got {type(template).__name__}")
    specs: dict[NestedKey, LeafSpec] = {}
    for key, leaf in template.items(include_nested=True, leaves_only=True):
        if not isinstance(leaf, torch.Tensor):
            raise TypeError(f"{what} template entry {key!r} is not a tensor")
        if leaf.dim() == 0 or leaf.shape[0] != lead:
            raise ValueError(
                f"{what} template entry {key!r} has shape {tuple(leaf.shape)}; "
                f"its first dimension must be the number of envs {lead}"
            )
        specs[key] = (tuple(leaf.shape[1:]), leaf.dtype)
    if not specs:
        raise ValueError(f"{what} template has no tensor entries")
    return specs


def check_leaves(
    td: TensorDictBase,
    specs: Mapping[NestedKey, LeafSpec],
    lead: int,
    device: torch.device,
    what: str,
) -> None:
    """Raise a ValueError/TypeError naming the key if `td` does not match `specs` exactly."""
    if not isinstance(td, TensorDictBase):
        raise TypeError(f"{what} expects a TensorDict, got {type(td).__name__}")
    keys = set(td.keys(include_nested=True, leaves_only=True))
    missing = [k for k in specs if k not in keys]
    extra = sorted(str(k) for k in keys - set(specs))
    if missing:
        raise ValueError(f"{what}: missing keys {missing}")
    if extra:
        raise ValueError(f"{what}: unexpected keys {extra} (not in the template)")
    for key, (shape, dtype) in specs.items():
        leaf = td.get(key)
        if tuple(leaf.shape) != (lead, *shape):
            raise ValueError(
                f"{what}: {key!r} has shape {tuple(leaf.shape)}, expected {(lead, *shape)}"
            )
        if leaf.dtype != dtype:
            raise TypeError(f"{what}: {key!r} has dtype {leaf.dtype}, expected {dtype}")
        if leaf.device != device:
            raise ValueError(f"{what}: {key!r} is on {leaf.device}, expected {device}")


def gather(td: TensorDictBase, index: torch.Tensor) -> TensorDictBase:
    """Rows `index` (int64 [B]) of a TensorDict with batch size [M]: a new TensorDict [B].

    `index_select` per leaf: faster than advanced indexing on CPU and CUDA.
    """
    return td.apply(lambda x: x.index_select(0, index), batch_size=[index.shape[0]])
