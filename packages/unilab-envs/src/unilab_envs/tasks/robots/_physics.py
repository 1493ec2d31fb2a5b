"""A robot's physics settings as data, applied to an `mujoco.MjSpec` before it is compiled.

`PhysicsOptions` are MuJoCo's `<option>` fields that MJLab's `MujocoCfg` sets (solver,
integrator, friction cone, iterations). `CollisionConfig` is MJLab's `CollisionCfg` policy:
which geoms collide and with which contact settings, geoms matched by regular expressions on
their names (`re.match`, as MJLab; unnamed geoms have the name ""), per-geom values given as
one value or as a {pattern: value} dict where the first matching pattern wins.

`apply_physics(spec, robot)` (`_config.py`, beside `RobotConfig`) is the one implementation of
both; `build_robot_model` calls it, and `mjlab_physics_xml` (`_unitree.py`) writes a copy of an
MJCF with it applied (for scripts that need a file).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs
import mujoco

__all__ = ["CollisionConfig", "PhysicsOptions"]

_INTEGRATORS = {
    "euler": mujoco.mjtIntegrator.mjINT_EULER,
    "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
}
_CONES = {"pyramidal": mujoco.mjtCone.mjCONE_PYRAMIDAL, "elliptic": mujoco.mjtCone.mjCONE_ELLIPTIC}
_JACOBIANS = {
    "auto": mujoco.mjtJacobian.mjJAC_AUTO,
    "dense": mujoco.mjtJacobian.mjJAC_DENSE,
    "sparse": mujoco.mjtJacobian.mjJAC_SPARSE,
}
_SOLVERS = {
    "newton": mujoco.mjtSolver.mjSOL_NEWTON,
    "cg": mujoco.mjtSolver.mjSOL_CG,
    "pgs": mujoco.mjtSolver.mjSOL_PGS,
}


def _one_of(options: Mapping[str, Any]):
    return attrs.validators.in_(tuple(options))


@attrs.frozen(kw_only=True)
class PhysicsOptions:
    """MuJoCo `<option>` values written over the MJCF's (the defaults are MJLab 1.6.0's
    `MujocoCfg` defaults). The env still sets `timestep` from the task's `physics_dt`."""

    timestep: float = attrs.field(default=0.002, validator=attrs.validators.gt(0.0))
    integrator: str = attrs.field(default="implicitfast", validator=_one_of(_INTEGRATORS))
    cone: str = attrs.field(default="pyramidal", validator=_one_of(_CONES))
    impratio: float = attrs.field(default=1.0, validator=attrs.validators.ge(1.0))
    jacobian: str = attrs.field(default="auto", validator=_one_of(_JACOBIANS))
    solver: str = attrs.field(default="newton", validator=_one_of(_SOLVERS))
    iterations: int = attrs.field(default=100, validator=attrs.validators.ge(1))
    tolerance: float = 1e-8
    ls_iterations: int = attrs.field(default=50, validator=attrs.validators.ge(1))
    ls_tolerance: float = 0.01
    ccd_iterations: int = attrs.field(default=50, validator=attrs.validators.ge(1))
    gravity: tuple[float, float, float] = attrs.field(
        default=(0.0, 0.0, -9.81), converter=lambda v: tuple(float(x) for x in v)
    )

    def apply(self, spec: mujoco.MjSpec) -> None:
        """Writes these options into `spec.option`."""
        opt = spec.option
        opt.timestep = self.timestep
        opt.integrator = _INTEGRATORS[self.integrator]
        opt.cone = _CONES[self.cone]
        opt.impratio = self.impratio
        opt.jacobian = _JACOBIANS[self.jacobian]
        opt.solver = _SOLVERS[self.solver]
        opt.iterations = self.iterations
        opt.tolerance = self.tolerance
        opt.ls_iterations = self.ls_iterations
        opt.ls_tolerance = self.ls_tolerance
        opt.ccd_iterations = self.ccd_iterations
        opt.gravity = list(self.gravity)


@attrs.frozen
class _ByName:
    """Per-geom values: (pattern, value) pairs, the first pattern that matches the name wins."""

    pairs: tuple[tuple[str, Any], ...]

    def get(self, name: str) -> Any:
        return next((v for pat, v in self.pairs if re.match(pat, name)), None)


def _value(value: Any) -> Any:
    """One value (a sequence becomes a tuple) or a {pattern: value} mapping (`_ByName`)."""
    if isinstance(value, Mapping):
        return _ByName(tuple((str(k), _value(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(float(v) for v in value)
    return value


def _resolve(value: Any, name: str) -> Any:
    """The value for geom `name`; None = keep the geom's."""
    return value.get(name) if isinstance(value, _ByName) else value


_STRUCTURAL = ("contype", "conaffinity", "condim", "priority")
_TUNING = ("friction", "solref", "solimp", "margin")


@attrs.frozen(kw_only=True)
class CollisionConfig:
    """Which geoms of the robot collide, and how (MJLab's `CollisionCfg`).

    Attributes:
        geom_names: regular expressions; a geom takes part when `re.match` of any of them
            with its name succeeds (an unnamed geom's name is "").
        group: only geoms of this visual group take part (None = any). MJLab has no such
            filter; it tells collision from visual geoms in files whose geoms are unnamed.
        contype, conaffinity, condim, priority: written on every matched geom; one int or a
            {pattern: int} dict that must cover every matched geom (add ".*").
        friction, solref, solimp, margin: written where given (one value or a dict; a geom no
            pattern matches keeps its value).
        disable_other_geoms: the robot's other geoms get contype = conaffinity = 0.
    Geoms of the world body (the floor, terrain) are never touched.
    """

    geom_names: tuple[str, ...] = attrs.field(converter=tuple)
    group: int | None = None
    contype: Any = attrs.field(converter=_value)
    conaffinity: Any = attrs.field(converter=_value)
    condim: Any = attrs.field(converter=_value)
    priority: Any = attrs.field(converter=_value)
    friction: Any = attrs.field(default=None, converter=_value)
    solref: Any = attrs.field(default=None, converter=_value)
    solimp: Any = attrs.field(default=None, converter=_value)
    margin: Any = attrs.field(default=None, converter=_value)
    disable_other_geoms: bool = True

    def matches(self, geom: mujoco.MjsGeom) -> bool:
        if self.group is not None and geom.group != self.group:
            return False
        return any(re.match(p, geom.name) for p in self.geom_names)

    def apply(self, spec: mujoco.MjSpec) -> None:
        """Writes the settings on the matched robot geoms of `spec`; raises ValueError when a
        structural field's patterns miss a matched geom."""
        geoms = [g for g in spec.geoms if g.parent.name != spec.worldbody.name]
        for geom in geoms:
            if not self.matches(geom):
                if self.disable_other_geoms:
                    geom.contype = geom.conaffinity = 0
                continue
            for field in _STRUCTURAL + _TUNING:
                value = _resolve(getattr(self, field), geom.name)
                if value is None:
                    if field in _STRUCTURAL:
                        raise ValueError(
                            f"CollisionConfig.{field} has no pattern for geom {geom.name!r}; "
                            "add a '.*' entry"
                        )
                    continue
                if field in ("friction", "solref", "solimp"):
                    target = getattr(geom, field)
                    for i, v in enumerate(value):
                        target[i] = v
                else:
                    setattr(geom, field, value)
