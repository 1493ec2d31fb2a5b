"""Checks a term function's signature when the task is built, so a wrong one is refused with
the term's name and what was expected, never a warp code-generation traceback."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import warp as wp

from unilab_envs.terms.config import Bodies, Joints, Ref, Sensors, Sites, TermFunction
from unilab_envs.terms.state import EnvState

# kind -> (leading argument types, return type, the signature as users read it)
SIGNATURES: dict[str, tuple[tuple[Any, ...], Any, str]] = {
    "observation": ((int, int, EnvState), float, "(w: int, k: int, s: EnvState[, p]) -> float"),
    "reward": ((int, EnvState), float, "(w: int, s: EnvState[, p]) -> float"),
    "termination": ((int, EnvState), bool, "(w: int, s: EnvState[, p]) -> bool"),
    "command": (
        (int, int, bool, wp.uint32, EnvState),
        None,
        "(w: int, col: int, resample: bool, rng: wp.uint32, s: EnvState[, p]) -> None",
    ),
    "event": (
        (int, wp.uint32, EnvState),
        wp.uint32,
        "(w: int, rng: wp.uint32, s: EnvState[, p]) -> wp.uint32",
    ),
    "curriculum": (
        (int, wp.uint32, EnvState),
        wp.uint32,
        "(w: int, rng: wp.uint32, s: EnvState[, p]) -> wp.uint32",
    ),
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
    if t is None:
        return "None"
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
        if var is None or not state_field(var.type):
            raise ValueError(
                f"{label}: {func.key} declares the state {field!r}; its parameter struct needs "
                f"the field `{field}: wp.array2d(dtype=float)` (or, one value per world, "
                "`wp.array(dtype=float)` or `wp.array(dtype=wp.int32)`)"
            )
    return params


def state_field(typ: Any) -> bool:
    """Whether a parameter field of type `typ` can hold per-world term state: a 2-d float
    array ([N, size]) or a 1-d float or int32 array ([N])."""
    if not wp.types.is_array(typ):
        return False
    if typ.ndim == 2:
        return typ.dtype is wp.float32
    return typ.ndim == 1 and typ.dtype in (wp.float32, wp.int32)


_BY_NAME = (Joints, Bodies, Sites, Sensors)


def check_params(label: str, struct: Any, params: Mapping[str, Any]) -> None:
    """TypeError naming `label`.params.<name> and what the field takes when a given value
    cannot fill its field of the parameter struct (checked when the task is built, before any
    array is made)."""
    fields = struct.vars if struct is not None else {}
    for name, value in params.items():
        var = fields.get(name)
        if var is None:
            continue
        expected = _takes(var.type, value)
        if expected is not None:
            raise TypeError(f"{label}.params.{name} takes {expected}, not {value!r}")


def _number(value: Any) -> bool:
    return isinstance(value, int | float | np.number) and not isinstance(value, bool)


def _takes(typ: Any, value: Any) -> str | None:
    """None when `value` fits the field type `typ`, else what the field takes."""
    if wp.types.is_array(typ):
        if isinstance(value, (Ref, *_BY_NAME, np.ndarray)) or _number(value):
            return None
        if isinstance(value, Sequence) and not isinstance(value, str):
            items = np.asarray(value, dtype=object).ravel()
            if all(_number(v) for v in items):
                return None
        return "a number (one per joint), a list of numbers or Joints/Bodies/Sites/Sensors/Ref"
    if wp.types.type_is_vector(typ):
        n = typ._length_
        ok = isinstance(value, Sequence | np.ndarray) and not isinstance(value, str)
        if ok and len(value) == n and all(_number(v) for v in value):
            return None
        return f"a list of {n} numbers"
    if typ in (int, wp.int32):
        ok = isinstance(value, _BY_NAME) or (_number(value) and float(value).is_integer())
        return None if ok else "an integer or Joints/Bodies/Sites/Sensors by name"
    if typ in (float, wp.float32):
        return None if _number(value) else "a number"
    return None
