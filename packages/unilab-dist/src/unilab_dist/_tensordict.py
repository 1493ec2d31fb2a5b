"""TensorDict support, behind the `tensordict` extra (the only module that imports tensordict).

tensordict is imported lazily: `is_tensordict` looks only at modules already imported (an object
cannot be a TensorDict if tensordict was never imported), and `require_tensordict` raises an
ImportError naming the extra when it is missing.
"""

from __future__ import annotations

import sys
from typing import Any

import torch

__all__ = ["is_tensordict", "require_tensordict", "tensordict_leaves"]

_HINT = 'TensorDict support needs tensordict: pip install "unilab-dist[tensordict]"'


def require_tensordict() -> Any:
    """Import and return the `tensordict` module, or raise ImportError naming the extra."""
    try:
        import tensordict
    except ImportError as e:
        raise ImportError(_HINT) from e
    return tensordict


def is_tensordict(obj: object) -> bool:
    """True if `obj` is a TensorDict (without importing tensordict)."""
    module = sys.modules.get("tensordict")
    if module is None:
        return False
    base = getattr(module, "TensorDictBase", None)
    return base is not None and isinstance(obj, base)


def tensordict_leaves(td: Any, prefix: str = "") -> list[tuple[str, torch.Tensor]]:
    """(dotted key, tensor) for every leaf of `td`, nested keys included, in sorted key order.

    Sorting makes the order identical on every rank whatever the insertion order was.
    """
    require_tensordict()
    items = []
    for key in td.keys(include_nested=True, leaves_only=True):
        name = ".".join(key) if isinstance(key, tuple) else key
        value = td.get(key)
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"TensorDict leaf {name!r} is {type(value).__name__}, not a tensor")
        items.append((prefix + name, value))
    items.sort(key=lambda kv: kv[0])
    return items
