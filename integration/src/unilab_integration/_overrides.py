"""Generic helpers for frozen attrs configs: dotted overrides and dict round trips.

These work on any `@attrs.frozen` class (UniLab's own configs and the algorithm configs of
`unilab_algos`) without knowing their fields: values are built from each field's *declared
type* (`typing.get_type_hints`): `bool`, `int`, `float`, `str`, `Literal[...]`, tuples,
`X | None`, dicts and nested attrs classes, so a field whose default is None (e.g.
`PPOConfig.rnd: RNDConfig | None`) still becomes its config class. A field typed `Any` takes
the type of the template's current value. A value of the wrong type raises TypeError naming
the field, the type it takes and the value given; a value the config's validators refuse
(`_validators`) raises ValueError in the same words ("'runner.iterations' takes a positive
integer, not 0").
"""

from __future__ import annotations

import ast
import difflib
import functools
import json
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from ._validators import FieldValueError

__all__ = [
    "apply_overrides",
    "config_from_data",
    "config_from_dict",
    "config_to_dict",
    "parse_value",
]


def parse_value(text: str) -> Any:
    """Parse the right-hand side of `key=value`: JSON first, then a Python literal, else text.

    `3e-4` -> 3e-4, `true`/`True` -> True, `null`/`None` -> None, `[1,2]` -> [1, 2],
    `relu` -> "relu".
    """
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(text)
        except (ValueError, SyntaxError, TypeError):
            continue
    return text


@attrs.frozen
class _Text:
    """A command-line value: the text as typed and its parse. A `str` field takes the text
    itself (`runner.logging.run_name=2024` is the name "2024", `launch.gpus=0,1` is "0,1")."""

    text: str
    value: Any


class _Mismatch(Exception):
    """The value does not fit the type (the caller names the field and the type)."""


def config_from_dict(template: Any, data: Mapping[str, Any]) -> Any:
    """A copy of the attrs instance `template` with the fields in `data` replaced (recursively).

    Unknown keys raise ValueError naming the key, the closest valid one and the valid ones;
    values of the wrong type raise TypeError; the config's own validators run on the result
    (their errors become ValueError naming the config part).
    """
    if not attrs.has(type(template)):
        raise TypeError(f"{type(template).__name__} is not an attrs config")
    return _apply_tree(type(template), template, data, "")


def config_from_data(cls: type, data: Mapping[str, Any], prefix: str = "") -> Any:
    """An instance of the attrs class `cls` built from `data` and the declared field types
    alone: a field `data` lacks takes its class default, never another template's value.
    Errors as `config_from_dict`'s, keys named under `prefix`."""
    if not attrs.has(cls):
        raise TypeError(f"{cls.__name__} is not an attrs config")
    return _apply_tree(cls, None, data, prefix)


def config_to_dict(config: Any) -> dict[str, Any]:
    """A JSON-ready dict of an attrs config (tuples become lists)."""
    return attrs.asdict(config, recurse=True)


def _nest(key: str, value: Any) -> dict[str, Any]:
    out: Any = value
    for part in reversed(key.split(".")):
        out = {part: out}
    return out


def _merge(a: dict[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(out.get(k), dict) and isinstance(v, dict) else v
    return out


def apply_overrides(config: Any, overrides: Iterable[str]) -> Any:
    """Apply `a.b.c=value` strings to a frozen attrs config, returning a new one.

    Keys into a dict-valued field (e.g. `env.kwargs.terrain=rough`) add or replace that
    entry, and nested keys the entries below it (`env.rewards.upright.weight=2.0`, a key that
    `EnvConfig.OVERRIDE_ROUTES` sends into `env.kwargs`); keys into a config field that is None (`algo.rnd.weight=0.1`) build that config
    from its defaults. Bad syntax or unknown keys raise ValueError, values of the wrong type
    TypeError, each naming the offending key.
    """
    tree: dict[str, Any] = {}
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"override '{item}' must look like key.path=value")
        key, text = item.split("=", 1)
        key = key.strip()
        if not key or any(not part for part in key.split(".")):
            raise ValueError(f"override '{item}' has an empty key")
        text = text.strip()
        value = parse_value(text)
        leaf = value if isinstance(value, dict) else _Text(text, value)
        tree = _merge(tree, _nest(key, leaf))
    return _apply_tree(type(config), config, tree, "")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an unresolvable annotation: those fields follow their current value
        return {}


def _routed(cls: type, tree: Mapping[str, Any]) -> Mapping[str, Any]:
    """`tree` with the keys that `cls.OVERRIDE_ROUTES` ({key: dict field}) sends into a dict
    field moved there: `env.rewards.x=...` is `env.kwargs.rewards.x=...`."""
    routes = getattr(cls, "OVERRIDE_ROUTES", {})
    moved = [k for k in tree if k in routes]
    if not moved:
        return tree
    out = dict(tree)
    for key in moved:
        target = routes[key]
        inner = out.get(target, {})
        if not isinstance(inner, Mapping):
            raise ValueError(f"give '{key}' inside '{target}' or beside it, not both")
        out[target] = _merge(dict(inner), {key: out.pop(key)})
    return out


def _apply_tree(cls: type, config: Any, tree: Mapping[str, Any], prefix: str) -> Any:
    """`config` (an instance of `cls`, or None: build `cls` from its defaults) with `tree`."""
    names = [f.name for f in attrs.fields(cls)]
    tree = _routed(cls, tree)
    hints = _hints(cls)
    changes: dict[str, Any] = {}
    for key, value in tree.items():
        full = f"{prefix}.{key}" if prefix else key
        if key not in names:
            moved = getattr(cls, "MOVED_KEYS", {}).get(key)
            if moved is not None:
                where = f"{prefix}." if prefix else ""
                raise ValueError(f"config key '{full}' is now '{where}{moved}'")
            close = difflib.get_close_matches(key, names, n=1)
            hint = f"did you mean '{prefix + '.' if prefix else ''}{close[0]}'? " if close else ""
            raise ValueError(
                f"unknown config key '{full}'; {hint}{cls.__name__} has: {', '.join(names)}"
            )
        current = getattr(config, key) if config is not None else None
        changes[key] = _build(hints.get(key, Any), current, value, full)
    try:
        return attrs.evolve(config, **changes) if config is not None else cls(**changes)
    except FieldValueError as e:  # one field refused its value: name it by its dotted key
        raise e.at(f"{prefix}.{e.field}" if prefix else e.field) from None
    except (ValueError, TypeError) as e:
        where = prefix or cls.__name__
        first = e.args[0] if e.args and isinstance(e.args[0], str) else str(e)  # attrs: (msg, ...)
        raise ValueError(f"invalid value in '{where}': {first}") from e


def _build(tp: Any, current: Any, value: Any, key: str) -> Any:
    """`value` as the declared type `tp` (TypeError naming `key`, the type and the value)."""
    try:
        return _convert(tp, current, value, key)
    except _Mismatch:
        raise TypeError(f"'{key}' takes {_describe(tp)}, not {_plain(value)!r}") from None


def _convert(tp: Any, current: Any, value: Any, key: str) -> Any:
    raw = value.text if isinstance(value, _Text) else None
    if isinstance(value, _Text):
        value = value.value
    origin = typing.get_origin(tp)
    if tp is Any:  # no declared type: follow the current value
        if attrs.has(type(current)):
            return _build(type(current), current, _again(raw, value), key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            return _merge(dict(current), _plain(value))
        return _tuple_deep(_plain(value))
    if origin is typing.Union or origin is types.UnionType:
        arms = typing.get_args(tp)
        if value is None and type(None) in arms:
            return None
        for arm in arms:
            if arm is type(None):
                continue
            try:
                fits = current is not None and _is_instance(current, arm)
                return _convert(arm, current if fits else None, _again(raw, value), key)
            except _Mismatch:
                continue
        raise _Mismatch
    if origin is typing.Literal:
        for option in typing.get_args(tp):
            if (value == option and type(value) is type(option)) or raw == option:
                return option
        raise _Mismatch
    if attrs.has(tp):
        return _nested(tp, current, value, key)
    if origin is tuple or origin is list:
        return _sequence(tp, origin, value, key)
    if origin is dict or tp is dict or origin is Mapping:
        if not isinstance(value, Mapping):
            raise _Mismatch
        base = dict(current) if isinstance(current, Mapping) else {}
        return _merge(base, _plain(value))
    if tp is bool:
        if not isinstance(value, bool):
            raise _Mismatch
        return value
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise _Mismatch
    if tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise _Mismatch
    if tp is str:
        if isinstance(value, str):
            return value
        if raw is not None:
            return raw
        raise _Mismatch
    if isinstance(tp, type) and not isinstance(value, tp):
        raise _Mismatch
    return value


def _again(raw: str | None, value: Any) -> Any:
    return _Text(raw, value) if raw is not None else value


def _nested(cls: type, current: Any, value: Any, key: str) -> Any:
    if not isinstance(value, Mapping):
        raise _Mismatch
    return _apply_tree(cls, current, value, key)


def _sequence(tp: Any, origin: type, value: Any, key: str) -> tuple | list:
    if not isinstance(value, list | tuple):
        raise _Mismatch
    args = typing.get_args(tp)
    if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        if len(value) != len(args):
            raise _Mismatch
        items = [_convert(a, None, v, key) for a, v in zip(args, value, strict=True)]
    else:
        item = args[0] if args else Any
        items = [_convert(item, None, v, key) for v in value]
    return tuple(items) if origin is tuple else items


def _is_instance(value: Any, tp: Any) -> bool:
    check = typing.get_origin(tp) or tp
    return isinstance(check, type) and isinstance(value, check)


_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
_PLURALS = {bool: "booleans", int: "integers", float: "numbers", str: "strings"}


def _describe(tp: Any) -> str:
    """The type as the error messages name it: "a number or null", "a list of integers"."""
    origin = typing.get_origin(tp)
    if tp in _NAMES:
        return _NAMES[tp]
    if origin is typing.Union or origin is types.UnionType:
        arms = typing.get_args(tp)
        text = " or ".join(_describe(a) for a in arms if a is not type(None))
        return text + " or null" if type(None) in arms else text
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(o) for o in typing.get_args(tp))
    if attrs.has(tp):
        return f"{tp.__name__} fields (a JSON object or KEY.FIELD=value)"
    if origin is tuple or origin is list:
        args = typing.get_args(tp)
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(set(args)) == 1:
                return f"a list of {len(args)} {_PLURALS.get(args[0], 'values')}"
            return f"a list of {len(args)} values ({', '.join(_describe(a) for a in args)})"
        return f"a list of {_PLURALS.get(args[0], 'values') if args else 'values'}"
    if origin is dict or tp is dict or origin is Mapping:
        return "a JSON object"
    return getattr(tp, "__name__", str(tp))


def _plain(value: Any) -> Any:
    """`value` with command-line texts replaced by their parses (for dicts and messages)."""
    if isinstance(value, _Text):
        return value.value
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _tuple_deep(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuple_deep(v) for v in value)
    return value
