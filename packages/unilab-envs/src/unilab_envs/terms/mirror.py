"""Left/right mirror maps of observation groups, from the rule each term declares.

The reflection is y -> -y (the robot's sagittal plane, its x-z plane, as the world's): a state
and its mirror image, in which left and right swap. Each observation term declares, with
`@term(mirror=...)`, how its values map (`RULES`); a group's map is its terms' maps side by
side (each history frame alike). A map is `(index, sign)`: `mirrored[..., i] = sign[i] *
values[..., index[i]]` (what `unilab_algos.ppo.symmetry.SignedPermutation` takes).

Rules, per frame of the term's values:
    "vector"       3-vectors (linear velocity, gravity, force) -> (x, -y, z)
    "axial"        3-vectors (angular velocity, a pseudovector) -> (-x, y, -z)
    "scalar"       unchanged
    "joints"       the joints' map (`MirrorContext.joints`, from `joint_mirror`)
    "actions"      the actions' map (`MirrorContext.actions`)
    "command"      a velocity command (vx, vy, yaw rate) -> (vx, -vy, -yaw rate)
    "feet"         one value per foot, the feet swapped (`MirrorContext.feet`)
    "feet_vector"  a 3-vector per foot: the feet swapped, each vector as "vector"
    "sensor"       a MuJoCo sensor (the term's `sensor` parameter) by its type,
                   `SENSOR_RULES` (gyro "axial", velocimeter "vector", ...)
    "scan"         one value per ray of a height scan (heights: sign +1), each ray swapped
                   with the ray at its mirror point: `ray_permutation` of the scan's ray
                   origins (`MirrorContext.scan_rays`, in its frame); refused when the
                   pattern is not symmetric about its x axis
A term without a rule, or one whose clip range is not symmetric about 0 where a sign flips,
has no map: `observation_mirrors` raises naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import mujoco
import numpy as np

__all__ = [
    "RULES",
    "SENSOR_RULES",
    "MirrorContext",
    "MirrorMaps",
    "SignedMap",
    "apply_map",
    "check_map",
    "name_permutation",
    "ray_permutation",
    "term_mirror",
]

SignedMap = tuple[tuple[int, ...], tuple[float, ...]]
"""`(index, sign)`: `mirrored[i] = sign[i] * values[index[i]]`."""

RULES = (
    "vector",
    "axial",
    "scalar",
    "joints",
    "actions",
    "command",
    "feet",
    "feet_vector",
    "sensor",
    "scan",
)
_T = mujoco.mjtSensor
SENSOR_RULES = {
    _T.mjSENS_GYRO: "axial",
    _T.mjSENS_FRAMEANGVEL: "axial",
    _T.mjSENS_FRAMEANGACC: "axial",
    _T.mjSENS_VELOCIMETER: "vector",
    _T.mjSENS_ACCELEROMETER: "vector",
    _T.mjSENS_FRAMELINVEL: "vector",
    _T.mjSENS_FRAMELINACC: "vector",
    _T.mjSENS_FORCE: "vector",
    _T.mjSENS_FRAMEZAXIS: "vector",
    _T.mjSENS_FRAMEXAXIS: "vector",
    _T.mjSENS_TORQUE: "axial",
}
"""The rule of a `builtin_sensor` term by the MuJoCo sensor's type (sensors in a frame whose
x-z plane is the robot's)."""
_SENSOR_BY_INT = {int(k): v for k, v in SENSOR_RULES.items()}

_VEC = ((0, 1, 2), (1.0, -1.0, 1.0))
_AXIAL = ((0, 1, 2), (-1.0, 1.0, -1.0))
_COMMAND = ((0, 1, 2), (1.0, -1.0, -1.0))
# two ray origins closer than this (metres) are one point: a grid's float steps land within
# 1e-7 m of their mirror, distinct rays of a real pattern are millimetres apart
_RAY_ATOL = 1e-5


@attrs.frozen(kw_only=True)
class MirrorMaps:
    """A task's left/right maps: `obs` per observation group, `action` for its actions."""

    obs: dict[str, SignedMap] = attrs.field(converter=dict)
    action: SignedMap


@attrs.frozen(kw_only=True)
class MirrorContext:
    """What the robot-dependent rules read: the joints' and the actions' maps, the feet's
    permutation (None: the task has no feet) and the (x, y) origin of each ray of the task's
    height scan in the scan's frame (`GridPattern.offsets()`; None: the task has no scan)."""

    joints: SignedMap
    actions: SignedMap
    feet: tuple[int, ...] | None = None
    scan_rays: tuple[tuple[float, float], ...] | None = attrs.field(
        default=None,
        converter=lambda r: None if r is None else tuple((float(p[0]), float(p[1])) for p in r),
    )


def _repeat(base: SignedMap, size: int, label: str, rule: str) -> SignedMap:
    n = len(base[0])
    if size % n:
        raise ValueError(f"{label}: rule {rule!r} maps {n} values at a time, the term has {size}")
    index = tuple(b * n + i for b in range(size // n) for i in base[0])
    return index, tuple(base[1]) * (size // n)


def _feet(ctx: MirrorContext, label: str) -> tuple[int, ...]:
    if ctx.feet is None:
        raise ValueError(f"{label}: a feet rule, but the task names no feet")
    return ctx.feet


def _sensor_rule(term: Any, scene: Any, label: str) -> str:
    selector = term.params.get("sensor")
    if selector is None:
        raise ValueError(f"{label}: rule 'sensor' needs the term's `sensor` parameter")
    ids = selector.select(scene.names(selector))
    rules = {_SENSOR_BY_INT.get(int(scene.mjm.sensor_type[i])) for i in ids}
    if len(rules) != 1 or None in rules:
        types = [mujoco.mjtSensor(int(scene.mjm.sensor_type[i])).name for i in ids]
        raise ValueError(
            f"{label}: no mirror rule for sensor type(s) {types}; declare the term's rule "
            "(ObservationTerm(func=term(mirror=...)(func)))"
        )
    return rules.pop()


def ray_permutation(rays: Any, label: str) -> tuple[int, ...]:
    """For each ray of a pattern (rays [R, >=2]: origins (x, y, ...) in the scan's frame,
    metres), the index of the ray at its mirror point (x, -y): the rays' permutation under
    the reflection y -> -y. ValueError naming `label` and the first ray without a mirror
    partner (the pattern is not symmetric about its x axis)."""
    xy = np.asarray(rays, dtype=np.float64).reshape(len(rays), -1)[:, :2]
    out = []
    for i, (x, y) in enumerate(xy):
        close = np.flatnonzero(np.abs(xy - (x, -y)).max(axis=1) <= _RAY_ATOL)
        if len(close) != 1:
            raise ValueError(
                f"{label}: ray {i} at (x, y) = ({x:.6g}, {y:.6g}) m has "
                f"{'no' if not len(close) else len(close)} ray at its mirror point "
                f"({x:.6g}, {-y:.6g}): the scan's pattern is not symmetric about its x axis, so "
                "its heights do not mirror; use a pattern symmetric in y (a GridPattern whose "
                "size[1] is a multiple of its resolution) or remove the term"
            )
        out.append(int(close[0]))
    return check_map((tuple(out), (1.0,) * len(out)), label)[0]


def _scan(ctx: MirrorContext, size: int, label: str) -> SignedMap:
    if ctx.scan_rays is None:
        raise ValueError(f"{label}: a scan rule, but the task names no height scan's rays")
    if size != len(ctx.scan_rays):
        raise ValueError(
            f"{label}: rule 'scan' maps the scan's {len(ctx.scan_rays)} rays, the term has {size}"
        )
    index = ray_permutation(ctx.scan_rays, label)
    return index, (1.0,) * size


def _rule_map(rule: str, size: int, ctx: MirrorContext, label: str) -> SignedMap:
    if rule == "scalar":
        return tuple(range(size)), (1.0,) * size
    if rule in ("vector", "axial", "command"):
        base = {"vector": _VEC, "axial": _AXIAL, "command": _COMMAND}[rule]
        return _repeat(base, size, label, rule)
    if rule in ("joints", "actions"):
        base = ctx.joints if rule == "joints" else ctx.actions
        return _repeat(base, size, label, rule)
    if rule == "feet":
        return _repeat((_feet(ctx, label), (1.0,) * len(_feet(ctx, label))), size, label, rule)
    if rule == "feet_vector":
        feet = _feet(ctx, label)
        index = tuple(3 * f + i for f in feet for i in range(3))
        return _repeat((index, _VEC[1] * len(feet)), size, label, rule)
    if rule == "scan":
        return _scan(ctx, size, label)
    raise ValueError(f"{label}: unknown mirror rule {rule!r}; rules: {', '.join(RULES)}")


def term_mirror(label: str, term: Any, size: int, ctx: MirrorContext, scene: Any) -> SignedMap:
    """The map of one frame (`size` values) of the `ObservationTerm` `term` at `label`."""
    rule = term.func.mirror
    if rule is None:
        raise ValueError(
            f"{label}: the term {term.func.name!r} declares no mirror rule, so the task has no "
            "mirror maps; give its function one (@term(mirror=...), unilab_envs.terms.mirror) "
            "or remove the term"
        )
    if rule == "sensor":
        rule = _sensor_rule(term, scene, label)
    index, sign = _rule_map(rule, size, ctx, label)
    if term.clip is not None and -1.0 in sign and term.clip[0] != -term.clip[1]:
        raise ValueError(
            f"{label}: clip {term.clip} is not symmetric about 0, so the clipped values do "
            "not mirror; clip to (-c, c) or drop the clip"
        )
    return index, sign


def check_map(smap: SignedMap, label: str) -> SignedMap:
    """`smap` if it is a signed permutation (every source once), else ValueError."""
    index, sign = smap
    if sorted(index) != list(range(len(index))):
        raise ValueError(f"{label}: the mirror map is not a permutation: {index}")
    return tuple(int(i) for i in index), tuple(float(s) for s in sign)


def name_permutation(names: Sequence[str], mirror_name: Any, label: str) -> tuple[int, ...]:
    """The index of each name's mirror (`mirror_name`) among `names` (itself when absent)."""
    names = list(names)
    out = []
    for n in names:
        m = mirror_name(n)
        out.append(names.index(m) if m in names else names.index(n))
    return check_map((tuple(out), (1.0,) * len(out)), label)[0]


def apply_map(smap: SignedMap, values: np.ndarray) -> np.ndarray:
    """`values[..., index] * sign` (numpy): the mirror of `values` under `smap`."""
    index, sign = smap
    return np.asarray(values)[..., list(index)] * np.asarray(sign, dtype=np.float32)
