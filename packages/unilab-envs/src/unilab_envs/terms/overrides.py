"""A task's term dicts changed by data: the user's own term objects, or plain overrides that a
config file or a command line can hold (JSON: numbers, text, lists, objects, null).

    rewards = {
        "upright": {"weight": 2.0, "params": {"std": 0.3}},    # fields of a task's term
        "foot_slip": None,                                      # removed
        "lin_vel_z": {"func": "my_terms:lin_vel_z_l2", "weight": -2.0},   # added
        "energy": RewardTerm(func=energy, weight=-1e-4),        # added or replaced
    }
    observations = {"critic": {"base_height": {"func": "my_terms:base_height"}}}

`merge_terms` and `merge_groups` apply such a dict to a task's own terms; `nest` turns dotted
keys ({"rewards.upright.weight": 2.0}) into that form. A `func` given as text is
"module:attr" (the module must already be imported: data never imports code, except
unilab_envs' own modules) or the name of a term of the library (`unilab_envs.mdp`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from unilab_envs.terms.config import (
    EVENT_MODES,
    Bodies,
    CommandTerm,
    CurriculumTerm,
    EventTerm,
    GaussianNoise,
    Joints,
    ObservationGroup,
    ObservationTerm,
    Ref,
    RewardTerm,
    Sensors,
    Sites,
    TermFunction,
    TerminationTerm,
    UniformNoise,
    as_term_function,
    closest,
)

__all__ = ["KINDS", "merge_groups", "merge_terms", "nest", "resolve_function"]

# the config key of each kind of term -> (term class, the fields plain data may set)
KINDS: dict[str, tuple[type, tuple[str, ...]]] = {
    "observations": (
        ObservationTerm,
        ("func", "params", "scale", "clip", "noise", "size", "history_length"),
    ),
    "rewards": (RewardTerm, ("func", "weight", "params")),
    "terminations": (TerminationTerm, ("func", "params", "time_out")),
    "commands": (CommandTerm, ("func", "params", "resampling_time_range")),
    "events": (
        EventTerm,
        (
            "func",
            "params",
            "mode",
            "interval_range_s",
            "min_step_count_between_reset",
            "is_global_time",
        ),
    ),
    "curricula": (CurriculumTerm, ("func", "params")),
}
# plain-data selectors: {"joints": ...} is Joints(...), {"ref": "air_time"} Ref("air_time")
_SELECTORS = {"joints": Joints, "bodies": Bodies, "sites": Sites, "sensors": Sensors}


def nest(dotted: Mapping[str, Any]) -> dict[str, Any]:
    """{"rewards.upright.params.std": 0.3} -> {"rewards": {"upright": {"params": {"std": 0.3}}}};
    keys without dots and nested mappings are merged as they are."""
    out: dict[str, Any] = {}
    for key, value in dotted.items():
        *parents, leaf = key.split(".")
        node = out
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        if isinstance(value, Mapping) and isinstance(node.get(leaf), dict):
            node[leaf] = {**node[leaf], **value}
        else:
            node[leaf] = value
    return out


def merge_groups(
    own: Mapping[str, ObservationGroup], user: Mapping[str, Any], where: str = "observations"
) -> dict[str, ObservationGroup]:
    """The task's observation groups with `user`'s {group: {term: override}} applied (new
    terms go at the end of their group); an unknown group raises KeyError naming the closest."""
    out = dict(own)
    for group, terms in user.items():
        if group not in out:
            raise closest(group, out, f"observation group ({where})")
        if isinstance(terms, ObservationGroup):
            out[group] = terms
            continue
        if not isinstance(terms, Mapping):
            raise TypeError(f"{where}.{group} takes {{term: override}}, not {terms!r}")
        merged = merge_terms("observations", out[group].terms, terms, f"{where}.{group}")
        out[group] = attrs.evolve(out[group], terms=merged)
    return out


def merge_terms(
    kind: str, own: Mapping[str, Any], user: Mapping[str, Any], where: str | None = None
) -> dict[str, Any]:
    """`own` terms of `kind` ("rewards", "terminations", "observations": one group's) with
    `user`'s overrides applied: None removes a term, a term object adds or replaces one, a
    mapping changes the named fields of the task's term or, with a `func`, adds one.

    Unknown term or field names raise KeyError naming the closest; a value of the wrong type
    TypeError naming its path (`where`.term.field) and what it takes."""
    where = where or kind
    cls, _ = KINDS[kind]
    out = dict(own)
    for name, value in user.items():
        label = f"{where}.{name}"
        if value is None:
            if name not in out:
                raise closest(name, out, f"term to remove ({where})")
            del out[name]
        elif isinstance(value, cls):
            out[name] = value
        elif isinstance(value, Mapping):
            out[name] = _changed(kind, out.get(name), value, label, list(out))
        else:
            raise TypeError(
                f"{label} takes a {cls.__name__}, a mapping of its fields or null (removes "
                f"the term), not {value!r}"
            )
    return out


def _changed(
    kind: str, base: Any, fields: Mapping[str, Any], label: str, known: Sequence[str]
) -> Any:
    """`base` (None: a new term) with the plain `fields` applied."""
    cls, settable = KINDS[kind]
    for field in fields:
        if field not in settable:
            raise closest(field, settable, f"field of {label}")
    if base is None and "func" not in fields:
        name = label.rsplit(".", 1)[1]
        why = closest(name, known, f"term ({label.rsplit('.', 1)[0]})").args[0]
        raise KeyError(f"{why}; to add a term, give its func ('module:attr')")
    changes = {}
    for field, value in fields.items():
        path = f"{label}.{field}"
        if field == "params":
            changes[field] = _params(getattr(base, "params", {}), value, path)
        else:
            changes[field] = _CONVERT[field](value, path)
    if base is not None:
        return attrs.evolve(base, **changes)
    if cls is RewardTerm and "weight" not in changes:
        raise TypeError(f"{label}: a new reward term needs a weight")
    if cls is CommandTerm and "resampling_time_range" not in changes:
        raise TypeError(f"{label}: a new command term needs a resampling_time_range")
    if cls is EventTerm and "mode" not in changes:
        raise TypeError(f"{label}: a new event term needs a mode ({', '.join(EVENT_MODES)})")
    return cls(**changes)


def resolve_function(value: Any, label: str) -> TermFunction:
    """A term function from a function, "module:attr" (the module already imported, or one of
    unilab_envs') or a library term's name."""
    if not isinstance(value, str):
        if isinstance(value, Mapping | Sequence | int | float) or value is None:
            raise TypeError(
                f"{label} takes a term function's name ('module:attr', or a library term's "
                f"name), not {value!r}"
            )
        return as_term_function(value)
    if ":" not in value:
        from unilab_envs import mdp

        if value not in mdp.LIBRARY:
            raise closest(value, mdp.LIBRARY, f"library term in {label} (your own: 'module:attr')")
        return as_term_function(mdp.LIBRARY[value][1])
    module_name, _, attr = value.partition(":")
    module = sys.modules.get(module_name)
    if module is None:
        if module_name != "unilab_envs" and not module_name.startswith("unilab_envs."):
            raise ValueError(
                f"{label}: module {module_name!r} is not imported and a config never imports "
                f"code: import it first (unilab commands: --import {module_name})"
            )
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            raise ValueError(f"{label}: no module {module_name!r} ({e})") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("_")]
            raise closest(part, names, f"attribute of {module_name} in {label}")
        obj = getattr(obj, part)
    return as_term_function(obj)


def _params(base: Mapping[str, Any], value: Any, path: str) -> dict[str, Any]:
    """`base` parameters with `value`'s: None removes one (its default applies again); text or
    a list for a parameter given by name (Joints, Bodies, Sites, Sensors, Ref) names other
    elements of the same kind."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{path} takes {{parameter: value}}, not {value!r}")
    out = dict(base)
    for name, v in value.items():
        if v is None:
            out.pop(name, None)
        else:
            out[name] = _param(base.get(name), v, f"{path}.{name}")
    return out


def _param(old: Any, value: Any, path: str) -> Any:
    if isinstance(value, Mapping):
        kinds = set(value) & {*_SELECTORS, "ref"}
        if len(value) == 1 and kinds:
            ((kind, names),) = value.items()
            return Ref(str(names)) if kind == "ref" else _SELECTORS[kind](names)
        if isinstance(old, Joints):  # {regex: value} per joint
            return Joints(value)
        raise TypeError(
            f"{path} takes a number, a list, or one of {{'joints'|'bodies'|'sites'|'sensors'"
            f"|'ref': names}}, not {value!r}"
        )
    if isinstance(old, Ref) and isinstance(value, str):
        return Ref(value)
    if isinstance(old, Joints | Bodies | Sites | Sensors) and isinstance(value, str | list):
        return type(old)(value)
    return value


def _number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{path} takes a number, not {value!r}")
    return float(value)


def _flag(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{path} takes true or false, not {value!r}")
    return value


def _clip(value: Any, path: str) -> tuple[float, float] | None:
    if value is None:
        return None
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != 2:
        raise TypeError(f"{path} takes [low, high] or null, not {value!r}")
    return (_number(value[0], path), _number(value[1], path))


def _noise(value: Any, path: str) -> UniformNoise | GaussianNoise | None:
    if value is None or isinstance(value, UniformNoise | GaussianNoise):
        return value
    if isinstance(value, Mapping):
        if set(value) == {"n_min", "n_max"}:
            return UniformNoise(_number(value["n_min"], path), _number(value["n_max"], path))
        if set(value) and set(value) <= {"mean", "std"}:
            return GaussianNoise(**{k: _number(v, path) for k, v in value.items()})
    raise TypeError(
        f"{path} takes {{'n_min': a, 'n_max': b}} (uniform), {{'mean': m, 'std': s}} "
        f"(Gaussian) or null, not {value!r}"
    )


def _size(value: Any, path: str) -> int | str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise TypeError(
        f"{path} takes a positive integer, 'joints', 'actions', 'command' or a parameter's "
        f"name, not {value!r}"
    )


def _time_range(value: Any, path: str) -> tuple[float, float] | None:
    if value is None and path.endswith(".interval_range_s"):
        return None
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != 2:
        raise TypeError(f"{path} takes [low, high] (s), not {value!r}")
    lo, hi = _number(value[0], path), _number(value[1], path)
    if not 0.0 <= lo <= hi:
        raise TypeError(f"{path} takes [low, high] (s) with 0 <= low <= high, not {value!r}")
    return (lo, hi)


def _mode(value: Any, path: str) -> str:
    if value not in EVENT_MODES:
        raise TypeError(f"{path} takes one of {', '.join(EVENT_MODES)}, not {value!r}")
    return value


def _history(value: Any, path: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise TypeError(f"{path} takes an integer >= 0 (0: no history), not {value!r}")


def _step_count(value: Any, path: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise TypeError(f"{path} takes an integer >= 0 (0: at every reset), not {value!r}")


_CONVERT = {
    "func": resolve_function,
    "history_length": _history,
    "weight": _number,
    "scale": _number,
    "time_out": _flag,
    "clip": _clip,
    "noise": _noise,
    "size": _size,
    "resampling_time_range": _time_range,
    "interval_range_s": _time_range,
    "mode": _mode,
    "min_step_count_between_reset": _step_count,
    "is_global_time": _flag,
}
