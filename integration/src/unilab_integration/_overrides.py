"""Generic helpers for frozen attrs configs: dotted overrides and dict round trips.

These work on any `@attrs.frozen` class (UniLab's own configs and the algorithm configs of
`unilab_algos`) without knowing their fields: values are structured against a *template*
instance, so nested configs, tuples and plain values keep their types.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

__all__ = ["apply_overrides", "config_from_dict", "config_to_dict", "parse_value"]


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


def _field_names(obj: Any) -> list[str]:
    return [f.name for f in attrs.fields(type(obj))]


def _coerce(current: Any, value: Any, key: str) -> Any:
    """Give `value` the type of `current` where that is unambiguous (int->float, list->tuple)."""
    if attrs.has(type(current)):
        if not isinstance(value, Mapping):
            raise TypeError(f"'{key}' is a {type(current).__name__} config; give its fields")
        return _apply_tree(current, value, key)
    if isinstance(current, bool):
        if not isinstance(value, bool):
            raise TypeError(f"'{key}' takes true or false, not {value!r}")
        return value
    if isinstance(current, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(current, int) and isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(current, tuple) and isinstance(value, list):
        return tuple(_coerce(current[0], v, key) if current else _tuple_deep(v) for v in value)
    if isinstance(value, list):
        return _tuple_deep(value)
    return value


def _tuple_deep(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuple_deep(v) for v in value)
    return value


def config_from_dict(template: Any, data: Mapping[str, Any]) -> Any:
    """A copy of the attrs instance `template` with the fields in `data` replaced (recursively).

    Unknown keys raise ValueError naming the key and the valid ones; the config's own
    validators run on the result (their errors become ValueError naming the config part).
    """
    if not attrs.has(type(template)):
        raise TypeError(f"{type(template).__name__} is not an attrs config")
    return _apply_tree(template, data, "")


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
    entry. Bad syntax or unknown keys raise ValueError naming the offending override.
    """
    tree: dict[str, Any] = {}
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"override '{item}' must look like key.path=value")
        key, text = item.split("=", 1)
        key = key.strip()
        if not key or any(not part for part in key.split(".")):
            raise ValueError(f"override '{item}' has an empty key")
        tree = _merge(tree, _nest(key, parse_value(text.strip())))
    return _apply_tree(config, tree, "")


def _apply_tree(config: Any, tree: Mapping[str, Any], prefix: str) -> Any:
    names = _field_names(config)
    changes: dict[str, Any] = {}
    for key, value in tree.items():
        full = f"{prefix}.{key}" if prefix else key
        if key not in names:
            raise ValueError(
                f"unknown config key '{full}'; {type(config).__name__} has: {', '.join(names)}"
            )
        current = getattr(config, key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            changes[key] = {**current, **value}
        else:
            changes[key] = _coerce(current, value, full)
    try:
        return attrs.evolve(config, **changes)
    except (ValueError, TypeError) as e:
        where = prefix or type(config).__name__
        raise ValueError(f"invalid value in '{where}': {e}") from e
