"""`CompiledTerms`: a task's term configs checked, laid out and compiled into its step.

Built once per task (`CompiledTerms(scene, observations=..., rewards=..., terminations=...)`):
the signatures are checked, the observation layout and the log terms follow from the term
lists, and the generated kernels are made (`terms/codegen.py`). `bind` resolves parameters into
each term's struct on the env's device and allocates the terms' per-world state; `evaluate`,
`observe` and `reset` are one launch each, capturable in the env's CUDA graph.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import mujoco
import numpy as np
import warp as wp

from unilab_envs.terms import codegen
from unilab_envs.terms.config import (
    Bodies,
    CommandTerm,
    CurriculumTerm,
    EventTerm,
    GaussianNoise,
    Joints,
    ObservationGroup,
    Ref,
    RewardTerm,
    Sensors,
    Sites,
    TermFunction,
    TerminationTerm,
    UniformNoise,
    closest,
)
from unilab_envs.terms.mirror import MirrorContext, SignedMap, check_map, term_mirror
from unilab_envs.terms.signature import check_params, params_struct, state_field
from unilab_envs.terms.state import EnvState

__all__ = ["CompiledTerms", "Scene"]

_OBJ = {
    Bodies: mujoco.mjtObj.mjOBJ_BODY,
    Sites: mujoco.mjtObj.mjOBJ_SITE,
    Sensors: mujoco.mjtObj.mjOBJ_SENSOR,
}
_NOBJ = {Bodies: "nbody", Sites: "nsite", Sensors: "nsensor"}
_SELECTORS = (Joints, Bodies, Sites, Sensors)


@attrs.frozen(kw_only=True)
class Scene:
    """What parameters and sizes resolve against: the compiled model, the driven joints in
    action order, and the action and command widths."""

    mjm: mujoco.MjModel = attrs.field(eq=False)
    joint_names: tuple[str, ...] = attrs.field(converter=tuple)
    num_actions: int
    command_dim: int = 0

    def names(self, selector: Any) -> list[str]:
        if isinstance(selector, Joints):
            return list(self.joint_names)
        obj, count = _OBJ[type(selector)], getattr(self.mjm, _NOBJ[type(selector)])
        return [mujoco.mj_id2name(self.mjm, obj, i) or "" for i in range(count)]

    def ids(self, selector: Any) -> list[int]:
        """The selected joints' indices (action order), bodies' or sites' ids, or sensors'
        `sensordata` addresses."""
        ids = selector.select(self.names(selector))
        if isinstance(selector, Sensors):
            return [int(self.mjm.sensor_adr[i]) for i in ids]
        return ids

    def count(self, size: int | str, params: Mapping[str, Any], label: str) -> int:
        if isinstance(size, int):
            return size
        fixed = {"joints": len(self.joint_names), "actions": self.num_actions}
        fixed["command"] = self.command_dim
        if size in fixed:
            return fixed[size]
        value = params.get(size)
        if isinstance(value, _SELECTORS):
            if isinstance(value.names, Mapping):
                return len(self.joint_names)
            ids = value.select(self.names(value))
            if isinstance(value, Sensors):
                return int(sum(self.mjm.sensor_dim[i] for i in ids))
            return len(ids)
        if isinstance(value, Sequence | np.ndarray) and not isinstance(value, str):
            return len(value)
        raise ValueError(
            f"{label}: size {size!r} is neither an int, 'joints', 'actions', 'command' nor the "
            "name of a parameter given as a sequence or Joints/Bodies/Sites"
        )


@attrs.frozen
class _Term:
    """One term as compiled: where it sits in the config, its call and resolved params."""

    label: str
    function: TermFunction
    call: codegen.Call
    params: Mapping[str, Any]
    state: Mapping[str, int | None]


class CompiledTerms:
    """A task's observation groups, rewards, terminations, commands, events and curricula,
    compiled (see module doc). `noise_stream`: the RNG stream of the first group's observation
    noise (group g: + 16 g). `zero_on_reset`: names of the task's arrays (`bind`'s `arrays`,
    float or int32, 1 to 3 dimensions, leading N) that a reset zeroes in the same launch
    (e.g. sensor histories).
    The commands' columns follow their order (`command_columns`); their widths must sum to
    the scene's `command_dim`.

    Attributes:
        observation_dims: {group: D}; layout: {group: [(term, columns, scale), ...]}
            (columns: size x history length); history: {group: {term: H}} of the terms
            with history.
        log_terms: the reward terms with a non-zero weight, in config order (rows of `log`).
        functions: {"<kind>.<name>" (observations: "observations.<group>.<name>"): the
            term function's name} of every compiled term.
    """

    def __init__(
        self,
        scene: Scene,
        *,
        observations: Mapping[str, ObservationGroup],
        rewards: Mapping[str, RewardTerm],
        terminations: Mapping[str, TerminationTerm],
        commands: Mapping[str, CommandTerm] | None = None,
        events: Mapping[str, EventTerm] | None = None,
        curricula: Mapping[str, CurriculumTerm] | None = None,
        noise_stream: int = codegen.STREAM_OBS_NOISE,
        zero_on_reset: tuple[str, ...] = (),
    ) -> None:
        self.scene = scene
        # per group: (name, group, [(term, config, size of one frame, history length)])
        self._groups: list[tuple[str, ObservationGroup, list[tuple[_Term, Any, int, int]]]] = []
        for g, (group_name, group) in enumerate(observations.items()):
            entries = []
            for i, (name, cfg) in enumerate(group.terms.items()):
                label = f"observations.{group_name}.{name}"
                t = self._term("observation", f"o{g}_{i}", label, cfg.func, cfg.params)
                size = cfg.size if cfg.size is not None else cfg.func.size
                if size is None:
                    raise ValueError(f"{label}: give the term's size (ObservationTerm.size)")
                count = scene.count(size, t.params, label)
                entries.append((t, cfg, count, group.term_history(cfg)))
            self._groups.append((group_name, group, entries))
        live = {n: r for n, r in rewards.items() if r.weight != 0.0}
        self._rewards = [
            self._term("reward", f"r{i}", f"rewards.{n}", r.func, r.params)
            for i, (n, r) in enumerate(live.items())
        ]
        self._weights = np.asarray([r.weight for r in live.values()], np.float32)
        self.log_terms = tuple(live)
        self._terminations = [
            (self._term("termination", f"t{i}", f"terminations.{n}", c.func, c.params), c)
            for i, (n, c) in enumerate(terminations.items())
        ]
        # commands: (term, config, first column)
        self._commands: list[tuple[_Term, CommandTerm, int]] = []
        col = 0
        for i, (n, cmd) in enumerate((commands or {}).items()):
            label = f"commands.{n}"
            t = self._term("command", f"c{i}", label, cmd.func, cmd.params)
            if cmd.func.size is None:
                raise ValueError(f"{label}: {t.function.name} declares no size (@term(size=...))")
            self._commands.append((t, cmd, col))
            col += scene.count(cmd.func.size, t.params, label)
        if self._commands and col != scene.command_dim:
            raise ValueError(
                f"the commands {list(commands or {})} fill {col} columns; the task's command "
                f"has {scene.command_dim}"
            )
        self.command_columns = {t.label.split(".", 1)[1]: c for t, _, c in self._commands}
        # events by mode: (term, config)
        self._events: dict[str, list[tuple[_Term, EventTerm]]] = {
            "startup": [],
            "reset": [],
            "interval": [],
        }
        for i, (n, ev) in enumerate((events or {}).items()):
            t = self._term("event", f"e{i}", f"events.{n}", ev.func, ev.params)
            self._events[ev.mode].append((t, ev))
        self._curricula = [
            self._term("curriculum", f"k{i}", f"curricula.{n}", cur.func, cur.params)
            for i, (n, cur) in enumerate((curricula or {}).items())
        ]
        self._zeroed = tuple(zero_on_reset)
        self.functions = {t.label: t.function.name for t in self._all()}
        self.layout = {
            name: [
                (t.label.rsplit(".", 1)[1], size * max(history, 1), cfg.scale)
                for t, cfg, size, history in entries
            ]
            for name, _, entries in self._groups
        }
        self.observation_dims = {
            name: sum(size for _, size, _ in terms) for name, terms in self.layout.items()
        }
        self.history = {
            name: {t.label.rsplit(".", 1)[1]: h for t, _, _, h in entries if h > 0}
            for name, _, entries in self._groups
        }
        self._evaluate = codegen.evaluate_kernel(
            [t.call for t in self._rewards],
            [(t.call, c.time_out) for t, c in self._terminations],
        )
        self._observe = None
        if self._groups:
            self._observe = codegen.observe_kernel(
                [
                    [(t.call, size, h) for t, _, size, h in entries]
                    for _, _, entries in self._groups
                ],
                noise_stream,
            )
        # observation histories: (label, array width) in the observe kernel's argument order
        self._histories = [
            (t.label, (h + 1) * size)
            for _, _, entries in self._groups
            for t, _, size, h in entries
            if h > 0
        ]
        self._reset = self._reset_kernel(())
        self._startup = None
        if self._events["startup"]:
            self._startup = codegen.startup_kernel([t.call for t, _ in self._events["startup"]])

    def _reset_calls(self) -> list[_Term]:
        """The terms the reset kernel calls or zeroes, in its argument order."""
        out = [t for t in self._all() if t.state]
        more = [*self._curricula, *(t for t, _ in self._events["reset"])]
        more += [t for t, _ in self._events["interval"]]
        more += [t for t, _, _ in self._commands]
        return out + [t for t in more if t not in out]

    def _reset_kernel(self, zeroed: Sequence[tuple[int, str]]) -> Any:
        stateful = [t for t in self._all() if t.state]
        resets = [t.call for t, _ in self._events["reset"]]
        intervals = [t.call for t, _ in self._events["interval"]]
        curricula = [t.call for t in self._curricula]
        work = (stateful, self._histories, zeroed, resets, intervals, self._commands, curricula)
        if not any(work):
            return None
        return codegen.reset_kernel(
            [(t.call, self._state_fields(t)) for t in stateful],
            len(self._histories),
            zeroed=zeroed,
            events=resets,
            intervals=intervals,
            commands=[(t.call, c) for t, _, c in self._commands],
            curricula=curricula,
            min_steps=[ev.min_step_count_between_reset for _, ev in self._events["reset"]],
            global_time=[ev.is_global_time for _, ev in self._events["interval"]],
        )

    @staticmethod
    def _state_fields(t: _Term) -> tuple[codegen.StateField, ...]:
        out = []
        for name in t.state:
            typ = t.call.params.vars[name].type
            zero = "wp.int32(0)" if typ.dtype is wp.int32 else "0.0"
            out.append(codegen.StateField(name, typ.ndim, zero))
        return tuple(out)

    def _term(self, kind: str, tag: str, label: str, func: TermFunction, given) -> _Term:
        struct = params_struct(kind, label, func)
        params = {**func.defaults, **given}
        fields = struct.vars if struct is not None else {}
        extra = sorted(set(params) - set(fields) - set(func.defaults))
        if extra:
            raise ValueError(
                f"{label}: {func.name} has no parameters {extra} (its parameters: "
                f"{sorted(set(fields) - set(func.state)) or 'none'})"
            )
        check_params(label, struct, params)
        state = {
            f: None if s is None else self.scene.count(s, params, label)
            for f, s in func.state.items()
        }
        call = codegen.Call(f"p_{tag}", func.func, struct)
        return _Term(label, func, call, params, state)

    def _all(self) -> list[_Term]:
        obs = [t for _, _, entries in self._groups for t, *_ in entries]
        out = [*obs, *self._rewards, *(t for t, _ in self._terminations)]
        out += [t for t, _, _ in self._commands]
        for mode in ("reset", "interval", "startup"):
            out += [t for t, _ in self._events[mode]]
        return out + self._curricula

    # ------------------------------------------------------------------ device side
    def bind(
        self,
        state: EnvState,
        num_envs: int,
        device: Any,
        arrays: Mapping[str, wp.array] | None = None,
    ) -> None:
        """Resolve every parameter onto `device` (`Ref`s among the task's `arrays`) and
        allocate the per-world term state."""
        self.state, self._device, self._n = state, device, num_envs
        self._arrays = dict(arrays or {})
        self._structs: dict[str, Any] = {}
        self._state_arrays: dict[str, wp.array] = {}
        for t in self._all():
            if t.call.params is None:
                continue
            p = t.call.params()
            for field, var in t.call.params.vars.items():
                if field in t.state:
                    shape = (num_envs,) if var.type.ndim == 1 else (num_envs, t.state[field])
                    if not state_field(var.type) or (var.type.ndim == 2) == (
                        t.state[field] is None
                    ):
                        raise ValueError(
                            f"{t.label}: the state {field!r} of {t.function.name} needs a size "
                            "exactly when its field is a 2-d array"
                        )
                    arr = wp.zeros(shape, dtype=var.type.dtype, device=device)
                    self._state_arrays[f"{t.label}.{field}"] = arr
                    setattr(p, field, arr)
                    continue
                if field not in t.params:
                    raise ValueError(
                        f"{t.label}: parameter {field!r} of {t.function.name} is not given"
                    )
                setattr(p, field, self._resolve(t, field, var.type, t.params[field]))
            self._structs[t.call.arg] = p
        self._history_arrays = []
        for label, width in self._histories:
            arr = wp.zeros((num_envs, width), dtype=float, device=device)
            self._state_arrays[f"{label}.history"] = arr
            self._history_arrays.append(arr)
        self._weights_wp = wp.array(self._weights, dtype=float, device=device)
        self._posts = [self._post(g, entries) for _, g, entries in self._groups]
        # the timers of the interval events and commands, and their (low, high) ranges
        timed = [(t, ev.interval_range_s) for t, ev in self._events["interval"]]
        timed += [(t, cmd.resampling_time_range) for t, cmd, _ in self._commands]
        self._timers = []
        for t, _ in timed:
            arr = wp.zeros(num_envs, dtype=float, device=device)
            self._state_arrays[f"{t.label}.time_left"] = arr
            self._timers.append(arr)
        ranges = np.asarray([x for _, r in timed for x in r] or [0.0], np.float32)
        self._ranges = wp.array(ranges, dtype=float, device=device)
        # the step at which each reset event with a min_step_count_between_reset last applied
        self._last_steps = []
        for t, ev in self._events["reset"]:
            if ev.min_step_count_between_reset > 0:
                arr = wp.zeros(num_envs, dtype=wp.int32, device=device)
                self._state_arrays[f"{t.label}.last_step"] = arr
                self._last_steps.append(arr)
        self._zero_arrays = []
        for name in self._zeroed:
            array = self._arrays.get(name)
            if array is None:
                raise closest(name, self._arrays, "array to zero on reset")
            if array.dtype not in (wp.float32, wp.int32) or not 1 <= array.ndim <= 3:
                raise ValueError(
                    f"zero_on_reset {name!r}: a float or int32 array of 1 to 3 dimensions"
                )
            self._zero_arrays.append(array)
        if self._zeroed:
            zeroed = [
                (a.ndim, "float" if a.dtype is wp.float32 else "wp.int32")
                for a in self._zero_arrays
            ]
            self._reset = self._reset_kernel(zeroed)

    def _resolve(self, t: _Term, field: str, typ: Any, value: Any) -> Any:
        label = f"{t.label}.{field}"
        sel = value if isinstance(value, _SELECTORS) else None
        if isinstance(value, Ref):
            array = self._arrays.get(value.name)
            if array is None:
                raise closest(value.name, self._arrays, f"array (Ref) for {label}")
            if not (array.ndim == typ.ndim and array.dtype == typ.dtype):
                raise ValueError(
                    f"{label}: Ref({value.name!r}) is {array.ndim}-d "
                    f"{array.dtype.__name__}, the field {typ}"
                )
            return array
        if wp.types.is_array(typ):
            if sel is not None and isinstance(sel.names, Mapping):
                data = sel.values(self.scene.names(sel))
            elif sel is not None:
                data = self.scene.ids(sel)
            elif np.ndim(value) == 0:  # a scalar: the same value for every joint
                data = np.full(len(self.scene.joint_names), value)
            else:
                data = np.asarray(value)
            return wp.array(np.asarray(data), dtype=typ.dtype, device=self._device)
        if sel is not None:
            ids = self.scene.ids(sel)
            if len(ids) != 1:
                raise ValueError(
                    f"{label}: an int parameter takes one element; {sel} gives {len(ids)}"
                )
            return ids[0]
        if wp.types.type_is_vector(typ):
            return typ(*value)
        if typ in (int, wp.int32):
            return int(value)
        if typ in (float, wp.float32):
            return float(value)
        raise ValueError(f"{label}: parameters of type {typ} are not supported")

    def _post(self, group: ObservationGroup, entries) -> codegen.ObsPost:
        cols: dict[str, list] = {k: [] for k in ("kind", "a", "b", "lo", "hi", "scale")}
        for _, cfg, frame, history in entries:
            size = frame * max(history, 1)
            noise = cfg.noise
            kind, a, b = 0, 0.0, 0.0
            if isinstance(noise, UniformNoise):
                kind, a, b = 1, noise.n_min, noise.n_max
            elif isinstance(noise, GaussianNoise):
                kind, a, b = 2, noise.mean, noise.std
            lo, hi = cfg.clip if cfg.clip is not None else (-math.inf, math.inf)
            for key, v in zip(cols, (kind, a, b, lo, hi, cfg.scale), strict=True):
                cols[key] += [v] * size
        post, dev = codegen.ObsPost(), self._device
        post.noise_kind = wp.array(np.asarray(cols["kind"], np.int32), dtype=wp.int32, device=dev)
        for field, key in (("noise_a", "a"), ("noise_b", "b"), ("clip_lo", "lo")):
            setattr(post, field, wp.array(np.asarray(cols[key], np.float32), device=dev))
        post.clip_hi = wp.array(np.asarray(cols["hi"], np.float32), device=dev)
        post.scale = wp.array(np.asarray(cols["scale"], np.float32), device=dev)
        post.corrupt = int(group.enable_corruption)
        return post

    def _params(self, terms: Sequence[_Term]) -> list[Any]:
        return [self._structs[t.call.arg] for t in terms if t.call.params is not None]

    def evaluate(self, reward: wp.array, terminated: wp.array, time_out: wp.array, log) -> None:
        terms = [*self._rewards, *(t for t, _ in self._terminations)]
        self.state.terminated = terminated  # what the terminations write, the rewards read
        wp.launch(
            self._evaluate,
            dim=self._n,
            inputs=[self.state, *self._params(terms), self._weights_wp],
            outputs=[reward, terminated, time_out, log],
            device=self._device,
        )

    def observe(
        self, seed: int, counter: wp.array, obs: Mapping[str, wp.array], commit: bool = True
    ) -> None:
        """Write every group into `obs` (one launch). `commit=False` leaves the observation
        histories as they are: the final observation of a step (before its resets), which
        the observation after the resets then commits."""
        if self._observe is None:
            return
        terms = [t for _, _, entries in self._groups for t, *_ in entries]
        outs, histories = [], iter(self._history_arrays)
        for (name, _, entries), post in zip(self._groups, self._posts, strict=True):
            outs += [post, obs[name], *(next(histories) for *_, h in entries if h > 0)]
        wp.launch(
            self._observe,
            dim=(self._n, max(self.observation_dims.values())),
            inputs=[seed, counter, int(commit), self.state, *self._params(terms), *outs],
            device=self._device,
        )

    def reset(self, mask: wp.array, seed: int = 0, counter: wp.array | None = None) -> None:
        """The step's end for every world (one launch; none without state, events, commands or
        curricula): in the worlds in `mask`, run the curricula, zero the per-world term state,
        observation histories and `zero_on_reset` arrays and run the reset events; in the
        others, the interval events whose time ran out; then the commands (see
        `codegen.reset_kernel`).
        `seed`, `counter` (int32 [1]): the env's RNG seed and step counter."""
        if self._reset is None:
            return
        if counter is None:
            counter = self._zero_counter()
        terms = self._reset_calls()
        inputs = [seed, counter, mask, self.state, *self._params(terms), self._ranges]
        inputs += [*self._timers, *self._history_arrays, *self._zero_arrays, *self._last_steps]
        wp.launch(self._reset, dim=self._n, inputs=inputs, device=self._device)

    def startup(self, seed: int) -> None:
        """Run the startup events (one launch; none without any): once, when the env is
        made, before its first reset."""
        if self._startup is None:
            return
        terms = [t for t, _ in self._events["startup"]]
        wp.launch(
            self._startup,
            dim=self._n,
            inputs=[seed, self.state, *self._params(terms)],
            device=self._device,
        )

    def _zero_counter(self) -> wp.array:
        if getattr(self, "_counter0", None) is None:
            self._counter0 = wp.zeros(1, dtype=wp.int32, device=self._device)
        return self._counter0

    # ------------------------------------------------------------------ host side
    def state_arrays(self) -> dict[str, wp.array]:
        """The terms' per-world state, by name "<kind>.<term>.<field>" (e.g.
        "rewards.feet_swing_height.peak"; an observation history:
        "observations.<group>.<term>.history"; the time left of a command or interval
        event: "commands.<term>.time_left", "events.<term>.time_left"; the step at which a
        reset event with min_step_count_between_reset last applied:
        "events.<term>.last_step"), each [N] or [N, size]."""
        return dict(self._state_arrays)

    def named_state(
        self, names: Mapping[str, str]
    ) -> tuple[dict[str, wp.array], dict[str, wp.array]]:
        """The terms' state split for a task's `state_dict`: ({task name: array} of the
        state `names` maps a task attribute to ({task name: "<kind>.<term>.<field>"}, the names
        a task gave it before it was term state), {"terms.<kind>.<term>.<field>": array} of
        the rest)."""
        named = {
            name: self._state_arrays[key]
            for name, key in names.items()
            if key in self._state_arrays
        }
        taken = set(names.values())
        rest = {"terms." + k: v for k, v in self._state_arrays.items() if k not in taken}
        return named, rest

    def term_params(self, label: str) -> dict[str, Any]:
        """The parameters of the term at `label` ("<kind>.<term>", observations
        "observations.<group>.<term>") as configured, its defaults included (host values)."""
        terms = {t.label: t for t in self._all()}
        if label not in terms:
            raise closest(label, terms, "term")
        return dict(terms[label].params)

    def observation_mirrors(self, ctx: MirrorContext) -> dict[str, SignedMap]:
        """Per group, the left/right map of its columns (`unilab_envs.terms.mirror`): each
        term's declared rule over its values, every history frame alike. ValueError naming
        the first term without a rule."""
        out = {}
        for name, _, entries in self._groups:
            index: list[int] = []
            sign: list[float] = []
            for t, cfg, size, history in entries:
                frame = term_mirror(t.label, cfg, size, ctx, self.scene)
                for _ in range(max(history, 1)):
                    index += [len(index) + i for i in frame[0]]
                    sign += frame[1]
            out[name] = check_map((tuple(index), tuple(sign)), f"observations.{name}")
        return out

    def annotate(self, observations: Mapping[str, list[dict[str, Any]]]) -> None:
        """Add each term's scale, and the history length of a term with history, to the
        deployment entries {group: [entry, ...]} (entries in layout order)."""
        for group, entries in observations.items():
            for entry, (term, _, scale) in zip(entries, self.layout[group], strict=True):
                entry["scale"] = float(scale)
                if term in self.history[group]:
                    entry["history_length"] = self.history[group][term]

    def set_weight(self, name: str, weight: float) -> None:
        """Change a live reward term's weight in place (no recompilation; a captured step reads
        the new value on its next replay)."""
        if name not in self.log_terms:
            raise closest(name, self.log_terms, "reward term (non-zero weight)")
        i = self.log_terms.index(name)
        self._weights[i] = weight
        wp.copy(self._weights_wp, wp.array(self._weights, dtype=float, device=self._device))
