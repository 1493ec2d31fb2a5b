"""`RobotConfig`: what the velocity task needs to know about a floating-base robot.

A robot is any MJCF file whose base body carries a free joint, plus the names of the joints
the policy drives (in action order), their default pose, the action scale, optionally the PD
gains (then the task replaces the MJCF's actuators on those joints by `position` actuators),
the foot bodies (air-time reward, contact observations) and the bodies whose contact with the
ground ends an episode. Optionally the robot's collision setup and solver options
(`CollisionConfig`, `PhysicsOptions`), applied to the MJCF before it is compiled.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import attrs
import mujoco

from unilab_envs.tasks.robots._physics import CollisionConfig, PhysicsOptions

__all__ = ["RobotConfig", "apply_physics"]


def _floats(value: Any) -> tuple[float, ...] | float:
    """Scalar -> float, sequence -> tuple of floats (broadcast to the joints later)."""
    if isinstance(value, int | float):
        return float(value)
    return tuple(float(v) for v in value)


def _floats_or_none(value: Any) -> tuple[float, ...] | float | None:
    return None if value is None else _floats(value)


def _names(value: Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        raise TypeError(f"expected a sequence of names, got the string {value!r}")
    return tuple(value)


@attrs.frozen(kw_only=True)
class RobotConfig:
    """A floating-base robot for `VelocityTask`.

    Attributes:
        name: short robot name, used in the task name ("<name>-velocity").
        mjcf: path of the MJCF file (str or os.PathLike). The file may lack a floor (a plane
            is added) and actuators (give `kp`/`kv` then).
        joint_names: the J actuated joints in action order (hinge or slide joints).
        default_pose: J joint positions (rad or m) of the nominal standing pose; actions are
            offsets from it.
        action_scale: rad (or m) per unit action, scalar or J values: target = default +
            action_scale * action, action in [-1, 1].
        base_body: the body with the free joint (trunk / pelvis).
        foot_bodies: F feet; a foot is in contact when any geom of that body touches a geom of
            the world body (the ground).
        foot_geoms: F geom names, one per foot; when given, only that geom's ground contact
            counts as the foot's (e.g. a foot sphere on a calf body). None = any geom of the
            foot body.
        termination_bodies: bodies whose ground contact terminates the episode (None: the
            base body; an empty tuple: none).
        init_height: base height (m) at reset, standing in the default pose.
        min_base_height: terminate when the base is lower (m).
        max_tilt: terminate when the base tilts more than this from upright (rad).
        kp, kv: PD gains (N m/rad, N m s/rad), scalar or J values; None = keep the MJCF's
            actuators (each named joint must then have exactly one).
        effort_limit: torque limit (N m), scalar or J values; only with `kp` (None = none).
        armature: reflected rotor inertia (kg m^2) set on the joints; only with `kp`.
        damping, frictionloss: joint damping (N m s/rad) and friction loss (N m) set on the
            joints, scalar or J values; only with `kp` (None = the MJCF's).
        velocity_limit: joint speed limits (rad/s) of the motors, scalar or J values. Recorded,
            not enforced: MJLab 1.6.0's position actuators do not use them either.
        joint_deviation: per-joint weights (J values) of the "joint_deviation" penalty
            (|q - default|); None = zero for every joint.
        nconmax, njmax: MJWarp contacts / constraint rows per world.
        collisions: `CollisionConfig`s applied in order to the robot's geoms (() = the MJCF's
            collision setup).
        physics: `PhysicsOptions` written over the MJCF's `<option>` (None = the MJCF's).
    """

    name: str
    mjcf: str = attrs.field(converter=os.fspath)
    joint_names: tuple[str, ...] = attrs.field(converter=_names)
    default_pose: tuple[float, ...] = attrs.field(converter=lambda v: tuple(float(x) for x in v))
    action_scale: tuple[float, ...] | float = attrs.field(converter=_floats)
    base_body: str
    foot_bodies: tuple[str, ...] = attrs.field(converter=_names)
    foot_geoms: tuple[str, ...] | None = attrs.field(
        default=None, converter=attrs.converters.optional(_names)
    )
    termination_bodies: tuple[str, ...] | None = attrs.field(
        default=None, converter=attrs.converters.optional(_names)
    )
    init_height: float = attrs.field(validator=attrs.validators.gt(0.0))
    min_base_height: float = attrs.field(default=0.0)
    max_tilt: float = attrs.field(default=1.2, validator=attrs.validators.gt(0.0))
    kp: tuple[float, ...] | float | None = attrs.field(default=None, converter=_floats_or_none)
    kv: tuple[float, ...] | float | None = attrs.field(default=None, converter=_floats_or_none)
    effort_limit: tuple[float, ...] | float | None = attrs.field(
        default=None, converter=_floats_or_none
    )
    armature: tuple[float, ...] | float | None = attrs.field(
        default=None, converter=_floats_or_none
    )
    damping: tuple[float, ...] | float | None = attrs.field(default=None, converter=_floats_or_none)
    frictionloss: tuple[float, ...] | float | None = attrs.field(
        default=None, converter=_floats_or_none
    )
    velocity_limit: tuple[float, ...] | float | None = attrs.field(
        default=None, converter=_floats_or_none
    )
    joint_deviation: tuple[float, ...] | None = attrs.field(
        default=None, converter=attrs.converters.optional(lambda v: tuple(float(x) for x in v))
    )
    nconmax: int = attrs.field(default=16, validator=attrs.validators.ge(1))
    njmax: int = attrs.field(default=96, validator=attrs.validators.ge(1))
    collisions: tuple[CollisionConfig, ...] = attrs.field(
        default=(),
        converter=tuple,
        validator=attrs.validators.deep_iterable(attrs.validators.instance_of(CollisionConfig)),
    )
    physics: PhysicsOptions | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(attrs.validators.instance_of(PhysicsOptions)),
    )

    def __attrs_post_init__(self) -> None:
        j = len(self.joint_names)
        if j == 0:
            raise ValueError(f"robot {self.name!r}: joint_names is empty")
        if len(set(self.joint_names)) != j:
            raise ValueError(f"robot {self.name!r}: joint_names has duplicates")
        if len(self.default_pose) != j:
            raise ValueError(
                f"robot {self.name!r}: default_pose has {len(self.default_pose)} values for "
                f"{j} joints"
            )
        per_joint = ("action_scale", "kp", "kv", "effort_limit", "armature", "damping")
        for field in (*per_joint, "frictionloss", "velocity_limit", "joint_deviation"):
            value = getattr(self, field)
            if isinstance(value, tuple) and len(value) != j:
                raise ValueError(
                    f"robot {self.name!r}: {field} has {len(value)} values for {j} joints"
                )
        if self.kp is None and any(
            getattr(self, f) is not None
            for f in ("kv", "effort_limit", "armature", "damping", "frictionloss")
        ):
            raise ValueError(
                f"robot {self.name!r}: kv/effort_limit/armature need kp (damping/frictionloss too)"
            )
        if not self.foot_bodies:
            raise ValueError(f"robot {self.name!r}: foot_bodies is empty")
        if self.foot_geoms is not None and len(self.foot_geoms) != len(self.foot_bodies):
            raise ValueError(
                f"robot {self.name!r}: foot_geoms has {len(self.foot_geoms)} names for "
                f"{len(self.foot_bodies)} feet"
            )
        if self.min_base_height >= self.init_height:
            raise ValueError(
                f"robot {self.name!r}: min_base_height {self.min_base_height} >= init_height "
                f"{self.init_height}"
            )

    @property
    def num_joints(self) -> int:
        return len(self.joint_names)

    def per_joint(self, field: str) -> tuple[float, ...] | None:
        """`field` ("action_scale", "kp", ...) as J values (scalars broadcast); None if unset."""
        value = getattr(self, field)
        if value is None:
            return None
        if isinstance(value, float):
            return (value,) * self.num_joints
        return value


def apply_physics(spec: mujoco.MjSpec, robot: RobotConfig) -> None:
    """Applies `robot.physics` (solver options) and `robot.collisions` (in order) to `spec`."""
    if robot.physics is not None:
        robot.physics.apply(spec)
    for collision in robot.collisions:
        collision.apply(spec)
