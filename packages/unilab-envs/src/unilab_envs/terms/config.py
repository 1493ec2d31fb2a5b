"""Term configs: a task's observations, rewards, terminations, commands, events and curricula
as data the user owns.

The names and meanings follow MJLab 1.6.0's managers (`ObservationTermCfg`,
`ObservationGroupCfg`, `RewardTermCfg`, `TerminationTermCfg`, `CommandTermCfg`,
`EventTermCfg`, `CurriculumTermCfg`, `SceneEntityCfg`): a term is a
function plus its parameters; the env compiles a task's terms into its step (`terms.compile`).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

__all__ = [
    "Bodies",
    "CommandTerm",
    "CurriculumTerm",
    "EventTerm",
    "GaussianNoise",
    "Joints",
    "ObservationGroup",
    "ObservationTerm",
    "Ref",
    "RewardTerm",
    "Sensors",
    "Sites",
    "TermFunction",
    "TerminationTerm",
    "UniformNoise",
    "closest",
    "term",
]


@attrs.frozen
class TermFunction:
    """A `warp.func` term with what the env needs to know about it beyond its signature.

    Attributes:
        func: the `warp.func` (see `unilab_envs.terms` for the signatures of each kind).
        size: observation terms: values per world, an int or "joints" (J), "actions" (A),
            "command" (C), or the name of an array parameter whose length it is; command
            terms: the columns of the command they write.
        state: per-world state the term keeps across steps, {field: size per world} (size as
            `size`; None for a one-dimensional field): the env allocates zeros of the
            parameter struct's field of that name (`wp.array2d(dtype=float)`: [N, size];
            `wp.array(dtype=float)` or `wp.array(dtype=wp.int32)`: [N]), zeroes a world's
            entries when it is reset, and saves and loads them by name
            ("<kind>.<term>.<field>").
        defaults: parameter values used where the config gives none.
        mirror: observation terms: how the values map under the left/right reflection
            (`unilab_envs.terms.mirror.RULES`: "vector", "axial", "scalar", "joints",
            "actions", "command", "feet", "feet_vector", "sensor", "scan"); None: no rule, and a
            task with this term has no mirror maps.
    """

    func: Any
    size: int | str | None = None
    state: Mapping[str, int | str | None] = attrs.field(factory=dict, converter=dict)
    defaults: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    mirror: str | None = None

    @property
    def name(self) -> str:
        return self.func.key if hasattr(self.func, "key") else str(self.func)


def term(
    *,
    size: int | str | None = None,
    state: Mapping[str, int | str | None] | None = None,
    defaults: Mapping[str, Any] | None = None,
    mirror: str | None = None,
) -> Callable[[Any], TermFunction]:
    """Decorator over a `@wp.func`: `@term(size="joints", mirror="joints")` above `@wp.func`."""

    def wrap(func: Any) -> TermFunction:
        return TermFunction(
            func, size=size, state=state or {}, defaults=defaults or {}, mirror=mirror
        )

    return wrap


def as_term_function(func: Any) -> TermFunction:
    return func if isinstance(func, TermFunction) else TermFunction(func)


# ----------------------------------------------------------------------------- selectors
@attrs.frozen
class _Names:
    """Model elements by name: one name or regex, a sequence of them, or {regex: value}."""

    names: str | tuple[str, ...] | Mapping[str, float] = attrs.field(
        converter=lambda v: v if isinstance(v, str | Mapping) else tuple(v)
    )
    kind = "element"

    def patterns(self) -> tuple[str, ...]:
        if isinstance(self.names, str):
            return (self.names,)
        return tuple(self.names)

    def select(self, candidates: Sequence[str]) -> list[int]:
        """Indices into `candidates` matching the patterns (`re.fullmatch`): pattern by pattern
        (the given order), each pattern's hits in candidate order; ValueError naming a pattern
        that matches nothing."""
        out = []
        for pattern in self.patterns():
            hits = [i for i, n in enumerate(candidates) if re.fullmatch(pattern, n)]
            if not hits:
                near = difflib.get_close_matches(pattern, candidates, n=3)
                hint = f"; closest: {near}" if near else ""
                raise ValueError(f"no {self.kind} matches {pattern!r}{hint}")
            out += hits
        return list(dict.fromkeys(out))

    def values(self, candidates: Sequence[str]) -> list[float]:
        """{regex: value} -> one value per candidate; each must match exactly one pattern."""
        if not isinstance(self.names, Mapping):
            raise TypeError(f"a per-{self.kind} value needs {{pattern: value}}, not {self.names!r}")
        out = []
        for name in candidates:
            hits = [v for p, v in self.names.items() if re.fullmatch(p, name)]
            if len(hits) != 1:
                raise ValueError(
                    f"{self.kind} {name!r} matches {len(hits)} of the patterns "
                    f"{sorted(self.names)}; each needs exactly one"
                )
            out.append(float(hits[0]))
        return out


class Joints(_Names):
    """The robot's driven joints (action order) by name or regex: an int array parameter
    gets their indices into the J joints; {regex: value} gives a float array parameter one
    value per joint (as MJLab's per-joint dicts)."""

    kind = "joint"


class Bodies(_Names):
    """Model bodies by name or regex: an int parameter gets the body id, an int array
    parameter the ids (in model order)."""

    kind = "body"


class Sites(_Names):
    """Model sites by name or regex, as `Bodies`."""

    kind = "site"


class Sensors(_Names):
    """Model sensors by name or regex: an int parameter gets the sensor's address in
    `sensordata`, an int array parameter the addresses."""

    kind = "sensor"


@attrs.frozen
class Ref:
    """A per-world array the task owns, by name (e.g. a contact sensor's "air_time" [N, F]),
    as an array parameter of a term; the task lists what it offers (`TermTask.term_arrays`)."""

    name: str


# ----------------------------------------------------------------------------- noise
@attrs.frozen
class UniformNoise:
    """Additive noise uniform in [n_min, n_max] (MJLab's `UniformNoiseCfg`)."""

    n_min: float
    n_max: float


@attrs.frozen
class GaussianNoise:
    """Additive noise mean + std * N(0, 1) (MJLab's `GaussianNoiseCfg`)."""

    mean: float = 0.0
    std: float = 1.0


def _func(value: Any) -> TermFunction:
    return as_term_function(value)


def _history(_inst: object, attr: attrs.Attribute, value: int | None) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
        raise ValueError(f"{attr.name} must be an int >= 0 (0: no history), got {value!r}")


# ----------------------------------------------------------------------------- terms
@attrs.frozen(kw_only=True)
class ObservationTerm:
    """One observation term: `func(w, k, s, [p]) -> float` is value k of its `size` values.
    Post-processing as MJLab's: noise (only in groups with `enable_corruption`), then clip,
    then scale, then history: `history_length` H > 0 gives the last H post-processed frames,
    oldest first, flattened (H x size columns); after a reset the first frame fills them all
    (MJLab's `history_length` with `flatten_history_dim`)."""

    func: TermFunction = attrs.field(converter=_func)
    params: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    noise: UniformNoise | GaussianNoise | None = None
    clip: tuple[float, float] | None = None
    scale: float = 1.0
    size: int | str | None = None  # overrides func.size
    history_length: int = attrs.field(default=0, validator=_history)


@attrs.frozen(kw_only=True)
class ObservationGroup:
    """An observation group: its terms concatenated in order into `[N, D]`. `history_length`
    (not None) replaces every term's own, as MJLab's group setting."""

    terms: Mapping[str, ObservationTerm] = attrs.field(converter=dict)
    enable_corruption: bool = False
    history_length: int | None = attrs.field(default=None, validator=_history)

    def term_history(self, term: ObservationTerm) -> int:
        """The history length `term` has in this group."""
        return term.history_length if self.history_length is None else self.history_length


@attrs.frozen(kw_only=True)
class RewardTerm:
    """One reward term: `func(w, s, [p]) -> float`; the step's reward is the sum over terms
    of weight x value x step_dt (a non-finite product counts 0, as MJLab's nan_to_num), and
    that product is logged per term. A term of weight 0 is neither computed nor logged."""

    func: TermFunction = attrs.field(converter=_func)
    weight: float = attrs.field(converter=float)
    params: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)


@attrs.frozen(kw_only=True)
class TerminationTerm:
    """One termination term: `func(w, s, [p]) -> bool`. `time_out=True`: a truncation (the
    env bootstraps it, as at the time limit), else a terminal state."""

    func: TermFunction = attrs.field(converter=_func)
    params: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    time_out: bool = False


def _range(value: Any) -> tuple[float, float]:
    lo, hi = (float(x) for x in value)
    if not lo <= hi:
        raise ValueError(f"a time range takes (low, high) with low <= high, not {value!r}")
    return (lo, hi)


@attrs.frozen(kw_only=True)
class CommandTerm:
    """One command term (MJLab's `CommandTermCfg`): `func(w, col, resample, rng, s, [p])`
    writes the term's `size` columns of the command from column `col` (`s.command`, what the
    observation and reward terms read). The env keeps each world's time left
    ("commands.<term>.time_left"): it counts down by step_dt; when it runs out, and when the
    world is reset, the env draws a new time uniform in `resampling_time_range` (s) and calls
    the term with `resample` True (else False: the term's per-step update, e.g. heading
    control), once per step, after the reset and interval events."""

    func: TermFunction = attrs.field(converter=_func)
    params: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    resampling_time_range: tuple[float, float] = attrs.field(converter=_range)


EVENT_MODES = ("startup", "reset", "interval")


def _step_count(_inst: object, attr: attrs.Attribute, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{attr.name} must be an int >= 0 (0: at every reset), got {value!r}")


@attrs.frozen(kw_only=True)
class EventTerm:
    """One event term (MJLab's `EventTermCfg`): `func(w, rng, s, [p]) -> rng` changes world
    w's state (or, at startup, its model fields given as `Ref`s) with draws from `rng`, and
    returns `rng` after its draws. `mode`: "startup" (once, when the env is made), "reset"
    (each time the world is reset, in config order) or "interval" (every time drawn uniform
    in `interval_range_s` (s), counted per world and drawn anew at each reset, as MJLab's
    interval events without global time; "events.<term>.time_left").

    `min_step_count_between_reset` (mode "reset"; 0: at every reset): the event applies at
    a world's reset only if it never applied there or at least that many steps of the env's
    step counter (control steps and `env.reset()` calls) passed since it last did
    ("events.<term>.last_step": that counter then, 0: never), as MJLab's.
    `is_global_time` (mode "interval"): one time shared by all worlds instead of one per
    world, as MJLab's: it counts down at every step and reset of the env, is not drawn anew
    when a world is reset, and when it runs out the event applies in every world not reset in
    that step, and a new time is drawn. (MJLab applies it in the worlds being reset as well,
    just before their reset: the same outcome for an event that sets the state, which the
    reset then overwrites; an event that changes model fields differs in those worlds.)"""

    func: TermFunction = attrs.field(converter=_func)
    mode: str = attrs.field(validator=attrs.validators.in_(EVENT_MODES))
    params: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    interval_range_s: tuple[float, float] | None = attrs.field(
        default=None, converter=attrs.converters.optional(_range)
    )
    min_step_count_between_reset: int = attrs.field(default=0, validator=_step_count)
    is_global_time: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))

    def __attrs_post_init__(self) -> None:
        if (self.mode == "interval") != (self.interval_range_s is not None):
            raise ValueError(
                "an event term takes interval_range_s exactly when its mode is 'interval' "
                f"(mode {self.mode!r}, interval_range_s {self.interval_range_s!r})"
            )
        if self.min_step_count_between_reset and self.mode != "reset":
            raise ValueError(
                f"event {self.func.name}: min_step_count_between_reset applies to mode "
                f"'reset' only, not {self.mode!r} (leave it 0)"
            )
        if self.is_global_time and self.mode != "interval":
            raise ValueError(
                f"event {self.func.name}: is_global_time applies to mode 'interval' only, "
                f"not {self.mode!r} (leave it False)"
            )


@attrs.frozen(kw_only=True)
class CurriculumTerm:
    """One curriculum term (MJLab's `CurriculumTermCfg`): `func(w, rng, s, [p]) -> rng` runs
    at each reset of world w, before the reset events (MJLab computes its curricula first in
    `_reset_idx`), e.g. moving the world's terrain level and origin; it returns `rng` after
    its draws."""

    func: TermFunction = attrs.field(converter=_func)
    params: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)


def closest(name: str, known: Sequence[str], what: str) -> KeyError:
    """The KeyError for an unknown `name` among `known`, naming the closest ones."""
    near = difflib.get_close_matches(name, list(known), n=3, cutoff=0.4)
    hint = f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
    return KeyError(f"unknown {what} {name!r}{hint} (known: {', '.join(sorted(known))})")


def no_clip() -> tuple[float, float]:
    return (-math.inf, math.inf)
