"""Code generation: a task's term lists unrolled into one warp kernel per hook.

`evaluate` (every reward and termination term), `observe` (every group, one thread per world
and column; observation history included) and `reset_terms` (the curricula, the terms'
per-world state and observation histories, the reset and interval events, the commands) are
each one launch per step, whatever the number of terms (`startup_terms`, the startup events,
runs once); a term removed from the config is absent from the generated source. Weights,
parameters, scales, clips, noise ranges and time ranges are kernel inputs (arrays and
structs), so changing one recompiles nothing. The generated source is registered with `linecache`, so warp reads it
as it reads a file, and kernels are cached per source and functions.
"""

from __future__ import annotations

import hashlib
import linecache
from collections.abc import Sequence
from typing import Any

import attrs
import warp as wp

from unilab_envs._core.rng import world_rng
from unilab_envs.terms.state import EnvState

# Observation noise: group g draws from stream STREAM_OBS_NOISE + 16 g, number w * D_g + k
# (a task may choose another first stream: `CompiledTerms(noise_stream=...)`).
STREAM_OBS_NOISE = 113


@wp.struct
class ObsPost:
    """Per-column post-processing of one observation group ([D] each): noise kind (0 none,
    1 uniform in [a, b], 2 Gaussian a + b * N(0, 1)), clip range, scale."""

    noise_kind: wp.array(dtype=wp.int32)
    noise_a: wp.array(dtype=float)
    noise_b: wp.array(dtype=float)
    clip_lo: wp.array(dtype=float)
    clip_hi: wp.array(dtype=float)
    scale: wp.array(dtype=float)
    corrupt: int


@wp.func
def post_process(
    v: float, post: ObsPost, seed: int, counter: int, w: int, k: int, d: int, stream: int
) -> float:
    # MJLab's order: noise (groups with enable_corruption), clip, scale.
    x = v
    kind = post.noise_kind[k]
    if post.corrupt != 0 and kind != 0:
        state = world_rng(seed, counter, w * d + k, stream)
        if kind == 1:
            x = x + wp.randf(state, post.noise_a[k], post.noise_b[k])
        else:
            x = x + post.noise_a[k] + post.noise_b[k] * wp.randn(state)
    x = wp.clamp(x, post.clip_lo[k], post.clip_hi[k])
    return x * post.scale[k]


@wp.func
def weighted(value: float, weight: float, dt: float) -> float:
    # weight x value x step_dt; a non-finite product counts 0 (MJLab's nan_to_num).
    x = weight * value * dt
    if not wp.isfinite(x):
        x = 0.0
    return x


@attrs.frozen
class Call:
    """One term in the generated source: its argument name `arg` ("p_<tag>"), its function
    and parameter struct type (None: no parameters)."""

    arg: str
    func: Any
    params: Any

    def invoke(self, lead: str) -> str:
        extra = f", {self.arg}" if self.params is not None else ""
        return f"f_{self.arg[2:]}({lead}s{extra})"


_KERNELS: dict[tuple, Any] = {}


def _build(name: str, source: str, calls: Sequence[Call], extra: dict[str, Any]) -> Any:
    key = (source, tuple(id(c.func) for c in calls), tuple(id(c.params) for c in calls))
    kernel = _KERNELS.get(key)
    if kernel is not None:
        return kernel
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    filename = f"<unilab-terms {name} {digest}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    scope: dict[str, Any] = {"wp": wp, "EnvState": EnvState, "ObsPost": ObsPost, **extra}
    scope["post_process"], scope["weighted"] = post_process, weighted
    scope["world_rng"] = world_rng
    for c in calls:
        scope[f"f_{c.arg[2:]}"] = c.func
        if c.params is not None:
            scope[f"P_{c.arg[2:]}"] = c.params
    exec(compile(source, filename, "exec"), scope)
    kernel = _KERNELS[key] = scope[name]
    return kernel


def _param_args(calls: Sequence[Call]) -> list[str]:
    return [f"{c.arg}: P_{c.arg[2:]}" for c in calls if c.params is not None]


def evaluate_kernel(rewards: Sequence[Call], terminations: Sequence[tuple[Call, bool]]) -> Any:
    """Kernel(s, p_*..., weights [R], reward [N], terminated [N], time_out [N], log [R, N]):
    the terminations first (`terminated`, which `s.terminated` is, so a reward may read the
    step's terminal flag), then the rewards: row i of `log` is reward i's weighted value.
    `time_out` is written only when a termination term is a time-out."""
    calls = [*rewards, *(c for c, _ in terminations)]
    args = ["s: EnvState", *_param_args(calls), "weights: wp.array(dtype=float)"]
    args += ["reward: wp.array(dtype=float)", "terminated: wp.array(dtype=wp.bool)"]
    args += ["time_out: wp.array(dtype=wp.bool)", "log: wp.array2d(dtype=float)"]
    lines = ["w = wp.tid()", "term = False", "trunc = False"]
    for c, is_time_out in terminations:
        flag = "trunc" if is_time_out else "term"
        lines += [f"if {c.invoke('w, ')}:", f"    {flag} = True"]
    lines += ["terminated[w] = term"]
    if any(t for _, t in terminations):
        lines += ["time_out[w] = trunc"]
    lines += ["total = float(0.0)", "x = float(0.0)"]
    for i, c in enumerate(rewards):
        lines += [f"x = weighted({c.invoke('w, ')}, weights[{i}], s.step_dt)"]
        lines += [f"log[{i}, w] = x", "total = total + x"]
    lines += ["reward[w] = total"]
    return _build("evaluate_terms", _kernel("evaluate_terms", args, lines), calls, {})


def observe_kernel(
    groups: Sequence[Sequence[tuple[Call, int, int]]], noise_stream: int = STREAM_OBS_NOISE
) -> Any:
    """Kernel(seed, counter, commit, s, p_*..., then per group g: post_g, out_g [N, D_g] and
    the history arrays of its terms with history) over (N, max D_g): column k of each group
    from the term that owns it. A group's entries are (call, size, history): a term with
    history H > 0 fills H x size columns, its frames oldest first; its array h [N, (H + 1)
    x size] holds the frames last committed and, in its last `size` columns, 1 once filled
    (a reset zeroes it: the next frame then fills every slot, as MJLab's history buffer).
    `commit` 0 writes the observation without advancing the history (the final observation
    of a step, before the resets). Group g draws its noise from stream `noise_stream` + 16 g,
    number w * D_g + k."""
    calls = [c for group in groups for c, _, _ in group]
    args = ["seed: int", "counter: wp.array(dtype=wp.int32)", "commit: int", "s: EnvState"]
    args += _param_args(calls)
    lines = ["w, k = wp.tid()", "v = float(0.0)", "x = float(0.0)", "direct = bool(True)"]
    for g, group in enumerate(groups):
        args += [f"post_{g}: ObsPost", f"out_{g}: wp.array2d(dtype=float)"]
        dim = sum(size * max(history, 1) for _, size, history in group)
        stream = noise_stream + 16 * g
        lines += [f"if k < {dim}:", "    direct = True"]
        start = 0
        for i, (c, size, history) in enumerate(group):
            keyword = "if" if i == 0 else "elif"
            width = size * max(history, 1)
            lines += [f"    {keyword} k < {start + width}:"]
            if history == 0:
                lines += [f"        v = {c.invoke(f'w, k - {start}, ')}"]
                start += width
                continue
            h, newest = f"h_{g}_{i}", start + (history - 1) * size
            args += [f"{h}: wp.array2d(dtype=float)"]
            lines += [
                "        direct = False",
                f"        if k < {start + size}:",
                f"            e = k - {start}",
                f"            v = post_process({c.invoke('w, e, ')}, post_{g}, seed, "
                f"counter[0], w, {newest} + e, {dim}, {stream})",
                f"            filled = {h}[w, {history * size} + e] != 0.0",
                f"            for j in range({history}):",
                "                x = v",
                f"                if filled and j < {history - 1}:",
                f"                    x = {h}[w, (j + 1) * {size} + e]",
                f"                out_{g}[w, {start} + j * {size} + e] = x",
                "                if commit != 0:",
                f"                    {h}[w, j * {size} + e] = x",
                "            if commit != 0:",
                f"                {h}[w, {history * size} + e] = 1.0",
            ]
            start += width
        lines += [
            "    if direct:",
            f"        out_{g}[w, k] = post_process(v, post_{g}, seed, counter[0], w, k, {dim}, "
            f"{stream})",
        ]
    return _build("observe_terms", _kernel("observe_terms", args, lines), calls, {})


# The reset kernel's draws: curriculum term i draws from STREAM_CURRICULUM + 16 i (121, the
# stream of `TerrainLevels.move`'s promotion draw); the reset events of a world share one RNG
# state (stream STREAM_RESET_EVENTS, each event continuing where the one before stopped), then
# the interval events' first times; interval event i draws its time and its own values from STREAM_INTERVAL
# + 16 i (one with global time: its shared time from world 0 of STREAM_GLOBAL_INTERVAL + 16 i,
# its values from STREAM_INTERVAL + 16 i), command term j its time and values from
# STREAM_COMMAND + 16 j; the startup events share STREAM_STARTUP (counter 0).
STREAM_RESET_EVENTS = 110
STREAM_COMMAND = 111
STREAM_INTERVAL = 112
STREAM_STARTUP = 114
STREAM_GLOBAL_INTERVAL = 115
STREAM_CURRICULUM = 121


@attrs.frozen
class StateField:
    """A term's per-world state field as the reset kernel zeroes it: name, ndim, zero."""

    name: str
    ndim: int
    zero: str


def reset_kernel(
    stateful: Sequence[tuple[Call, Sequence[StateField]]],
    histories: int = 0,
    zeroed: Sequence[tuple[int, str]] = (),
    events: Sequence[Call] = (),
    intervals: Sequence[Call] = (),
    commands: Sequence[tuple[Call, int]] = (),
    curricula: Sequence[Call] = (),
    min_steps: Sequence[int] = (),
    global_time: Sequence[bool] = (),
) -> Any:
    """Kernel(seed, counter [1], mask [N], s, p_*..., ranges, i_0..., c_0..., h_0...,
    z_0...), one thread per world, once per step: in the masked (reset) worlds, runs the
    `curricula` (each with its own RNG state), then zeroes the
    listed term state, observation histories and the task's arrays `z_*` (`zeroed`: their
    (ndim, dtype "float" or "wp.int32")), runs the reset `events` in order and draws each interval event's first time;
    in the other worlds, counts the interval events' times `i_*` down and runs an event whose
    time ran out (drawing its next time); then, in every world, counts each command term's
    time `c_*` down and calls the term (`resample`: reset or its time ran out, after a new
    time is drawn). `ranges` holds (low, high) of each interval event, then of each command.

    `min_steps` (one per reset event; empty: all 0): a reset event with m > 0 gets an array
    `l_*` [N] (int32) of the counter at which it last applied (0: never) and applies only
    where it never did or the counter moved at least m since. `global_time` (one per interval
    event; empty: all False): an interval event with global time keeps one time in every
    world's entry of its `i_*`, counted down by step_dt in every world (reset or not) and,
    when it runs out, drawn anew from a draw all worlds share; the event then applies in the
    worlds not reset (after the per-world interval events)."""
    calls = [c for c, _ in stateful]
    for c in [*curricula, *events, *intervals, *(c for c, _ in commands)]:
        if c not in calls:
            calls.append(c)
    args = ["seed: int", "counter: wp.array(dtype=wp.int32)", "mask: wp.array(dtype=wp.bool)"]
    args += ["s: EnvState", *_param_args(calls), "ranges: wp.array(dtype=float)"]
    min_steps = list(min_steps) or [0] * len(events)
    global_time = list(global_time) or [False] * len(intervals)
    args += [f"i_{i}: wp.array(dtype=float)" for i in range(len(intervals))]
    args += [f"c_{j}: wp.array(dtype=float)" for j in range(len(commands))]
    args += [f"h_{i}: wp.array2d(dtype=float)" for i in range(histories)]
    args += [
        f"z_{i}: wp.array{'' if d == 1 else f'{d}d'}(dtype={dtype})"
        for i, (d, dtype) in enumerate(zeroed)
    ]
    args += [f"l_{i}: wp.array(dtype=wp.int32)" for i, m in enumerate(min_steps) if m > 0]
    lines = ["w = wp.tid()", "n = counter[0]", "reset = mask[w]", "dt = s.step_dt"]
    lines += ["rng = wp.uint32(0)", "if reset:", "    dt = 0.0"]
    for i, c in enumerate(curricula):
        lines += [f"    rng = world_rng(seed, n, w, {STREAM_CURRICULUM + 16 * i})"]
        lines += [f"    rng = {c.invoke('w, rng, ')}"]
    for c, fields in stateful:
        for f in fields:
            lines += _zero(f"{c.arg}.{f.name}", f.ndim, f.zero, "    ")
    for i in range(histories):
        lines += _zero(f"h_{i}", 2, "0.0", "    ")
    for i, (d, dtype) in enumerate(zeroed):
        lines += _zero(f"z_{i}", d, "0.0" if dtype == "float" else "0", "    ")
    if events or intervals:
        lines += [f"    rng = world_rng(seed, n, w, {STREAM_RESET_EVENTS})"]
    for i, (c, m) in enumerate(zip(events, min_steps, strict=True)):
        if m == 0:
            lines += [f"    rng = {c.invoke('w, rng, ')}"]
            continue
        lines += [
            f"    if l_{i}[w] == 0 or n - l_{i}[w] >= {int(m)}:",
            f"        l_{i}[w] = n",
            f"        rng = {c.invoke('w, rng, ')}",
        ]
    for i in range(len(intervals)):
        if not global_time[i]:
            lines += [f"    i_{i}[w] = wp.randf(rng, ranges[{2 * i}], ranges[{2 * i + 1}])"]
    if not all(global_time):
        lines += ["else:"]
        for i, c in enumerate(intervals):
            if global_time[i]:
                continue
            lines += [
                f"    t_{i} = i_{i}[w] - s.step_dt",
                f"    if t_{i} < 1.0e-6:",
                f"        rng = world_rng(seed, n, w, {STREAM_INTERVAL + 16 * i})",
                f"        t_{i} = wp.randf(rng, ranges[{2 * i}], ranges[{2 * i + 1}])",
                f"        rng = {c.invoke('w, rng, ')}",
                f"    i_{i}[w] = t_{i}",
            ]
    for i, c in enumerate(intervals):
        if not global_time[i]:
            continue
        lines += [
            f"g_{i} = i_{i}[w] - s.step_dt",
            f"if g_{i} < 1.0e-6:",
            f"    shared = world_rng(seed, n, 0, {STREAM_GLOBAL_INTERVAL + 16 * i})",
            f"    g_{i} = wp.randf(shared, ranges[{2 * i}], ranges[{2 * i + 1}])",
            "    if not reset:",
            f"        rng = world_rng(seed, n, w, {STREAM_INTERVAL + 16 * i})",
            f"        rng = {c.invoke('w, rng, ')}",
            f"i_{i}[w] = g_{i}",
        ]
    for j, (c, col) in enumerate(commands):
        k = 2 * (len(intervals) + j)
        lines += [
            f"left_{j} = c_{j}[w] - dt",
            f"resample_{j} = reset",
            f"if left_{j} <= 0.0:",
            f"    resample_{j} = True",
            f"rng = world_rng(seed, n, w, {STREAM_COMMAND + 16 * j})",
            f"if resample_{j}:",
            f"    left_{j} = wp.randf(rng, ranges[{k}], ranges[{k + 1}])",
            f"c_{j}[w] = left_{j}",
            f"{c.invoke(f'w, {col}, resample_{j}, rng, ')}",
        ]
    return _build("reset_terms", _kernel("reset_terms", args, lines), calls, {})


def startup_kernel(events: Sequence[Call]) -> Any:
    """Kernel(seed, s, p_*...), one thread per world: the startup events in order, sharing
    one RNG state (stream STREAM_STARTUP, counter 0)."""
    args = ["seed: int", "s: EnvState", *_param_args(events)]
    lines = ["w = wp.tid()", f"rng = world_rng(seed, 0, w, {STREAM_STARTUP})"]
    lines += [f"rng = {c.invoke('w, rng, ')}" for c in events]
    return _build("startup_terms", _kernel("startup_terms", args, lines), events, {})


def _zero(array: str, ndim: int, zero: str, indent: str) -> list[str]:
    if ndim == 1:
        return [f"{indent}{array}[w] = {zero}"]
    if ndim == 2:
        return [f"{indent}for i in range({array}.shape[1]):", f"{indent}    {array}[w, i] = {zero}"]
    return [
        f"{indent}for i in range({array}.shape[1]):",
        f"{indent}    for j in range({array}.shape[2]):",
        f"{indent}        {array}[w, i, j] = {zero}",
    ]


def _kernel(name: str, args: list[str], lines: list[str]) -> str:
    head = f'@wp.kernel(module="unique")\ndef {name}(\n'
    head += "".join(f"    {a},\n" for a in args) + "):\n"
    return head + "".join(f"    {line}\n" for line in lines)
