"""The validators of UniLab's configs: one small set, one message shape.

    seed: int = attrs.field(default=0, validator=integer)
    iterations: int | None = attrs.field(default=None, validator=optional(positive_int))
    scope: str = attrs.field(default="per-rank", validator=one_of("per-rank", "global"))

A refused value raises `FieldValueError` (a ValueError) naming the field, what it takes and
the value given, in the words of `apply_overrides`' type errors: built directly,
"'RunnerConfig.iterations' takes a positive integer, not 0"; through an override or a saved
config, the dotted key: "'runner.iterations' takes a positive integer, not 0".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

__all__ = [
    "FieldValueError",
    "Validator",
    "distinct_texts",
    "integer",
    "non_negative_int",
    "one_of",
    "optional",
    "positive_int",
    "positive_number",
    "text",
]


class FieldValueError(ValueError):
    """A config field refused its value: `key` (e.g. "RunnerConfig.iterations"), `field`
    (its attribute name), `expected` (e.g. "a positive integer") and `value`."""

    def __init__(self, key: str, field: str, expected: str, value: Any) -> None:
        super().__init__(f"'{key}' takes {expected}, not {value!r}")
        self.key, self.field, self.expected, self.value = key, field, expected, value

    def at(self, key: str) -> FieldValueError:
        """The same refusal named by `key` (the dotted key of an override)."""
        return FieldValueError(key, self.field, self.expected, self.value)


@attrs.frozen
class Validator:
    """An attrs validator: `accepts(value)`, described as `expected` in its error."""

    expected: str
    accepts: Callable[[Any], bool]

    def __call__(self, instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if not self.accepts(value):
            key = f"{type(instance).__name__}.{attribute.name}"
            raise FieldValueError(key, attribute.name, self.expected, value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


integer = Validator("an integer", _is_int)
positive_int = Validator("a positive integer", lambda v: _is_int(v) and v >= 1)
non_negative_int = Validator("a non-negative integer", lambda v: _is_int(v) and v >= 0)
positive_number = Validator("a positive number", lambda v: _is_number(v) and v > 0)
text = Validator("a string", lambda v: isinstance(v, str))
distinct_texts = Validator(
    "a list of distinct strings",
    lambda v: (
        isinstance(v, tuple | list) and all(isinstance(x, str) for x in v) and len(set(v)) == len(v)
    ),
)


def one_of(*options: Any) -> Validator:
    """A value equal to one of `options` (of its type: True is not 1)."""
    return Validator(
        "one of " + ", ".join(repr(o) for o in options),
        lambda v: any(v == o and type(v) is type(o) for o in options),
    )


def optional(check: Validator) -> Validator:
    """None, or a value that `check` accepts."""
    return Validator(f"{check.expected} or null", lambda v: v is None or check.accepts(v))
