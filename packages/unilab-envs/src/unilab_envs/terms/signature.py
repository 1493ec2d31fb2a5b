"""Checks a term function's signature when the task is built, so a wrong one is refused with
the term's name and what was expected, never a warp code-generation traceback."""

from __future__ import annotations

import contextlib
from typing import Any

import warp as wp

from unilab_envs.terms.config import TermFunction
from unilab_envs.terms.state import EnvState

# kind -> (leading argument types, return type, the signature as users read it)
SIGNATURES: dict[str, tuple[tuple[Any, ...], Any, str]] = {
    "observation": ((int, int, EnvState), float, "(w: int, k: int, s: EnvState[, p]) -> float"),
    "reward": ((int, EnvState), float, "(w: int, s: EnvState[, p]) -> float"),
    "termination": ((int, EnvState), bool, "(w: int, s: EnvState[, p]) -> bool"),
}
_INT = (int, wp.int32)
_FLOAT = (float, wp.float32)
_BOOL = (bool, wp.bool)


def _same(actual: Any, expected: Any) -> bool:
    for group in (_INT, _FLOAT, _BOOL):
        if expected in group:
            return actual in group
    return actual is expected


def _name(t: Any) -> str:
    if t is EnvState:
        return "EnvState"
    return getattr(t, "__name__", None) or getattr(getattr(t, "cls", None), "__name__", str(t))


def params_struct(kind: str, label: str, term: TermFunction) -> Any | None:
    """The term's parameter struct type (None: it takes none); ValueError naming `label` (the
    term's place in the config) and the expected signature when the function does not fit."""
    lead, ret, text = SIGNATURES[kind]
    func = term.func
    if not isinstance(func, wp.Function):
        raise ValueError(
            f"{label}: {func!r} is not a warp function; decorate it with @wp.func and give it "
            f"the signature {text}"
        )
    types = list(func.input_types.values())
    returns = getattr(func.func, "__annotations__", {}).get("return")
    if isinstance(returns, str):  # `from __future__ import annotations` in the term's module
        with contextlib.suppress(Exception):
            returns = eval(returns, func.func.__globals__)
    got = f"({', '.join(_name(t) for t in types)}) -> {_name(returns)}"
    ok = len(types) in (len(lead), len(lead) + 1) and all(
        _same(a, e) for a, e in zip(types, lead, strict=False)
    )
    ok = ok and _same(returns, ret)
    params = types[len(lead)] if ok and len(types) > len(lead) else None
    if params is not None and not wp.types.type_is_struct(params):
        ok = False
    if not ok:
        raise ValueError(
            f"{label}: {kind} term {func.key} has the signature {got}; expected {text} "
            "(p: a @wp.struct of its parameters)"
        )
    fields = params.vars if params is not None else {}
    for field in term.state:
        var = fields.get(field)
        if var is None or not (
            wp.types.is_array(var.type) and var.type.ndim == 2 and var.type.dtype is wp.float32
        ):
            raise ValueError(
                f"{label}: {func.key} declares the state {field!r}; its parameter struct needs "
                f"the field `{field}: wp.array2d(dtype=float)`"
            )
    return params
