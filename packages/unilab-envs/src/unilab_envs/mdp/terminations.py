"""Termination terms (MJLab's names): `(w, s[, p]) -> bool`."""

from __future__ import annotations

import warp as wp

from unilab_envs.mdp.frames import root_gravity_b, root_height
from unilab_envs.terms.state import EnvState


@wp.struct
class LimitAngleParams:
    """limit_angle: the largest tilt from upright (rad)."""

    limit_angle: float


@wp.struct
class MinimumHeightParams:
    """minimum_height: the lowest base height (m, world z)."""

    minimum_height: float


@wp.func
def time_out(w: int, s: EnvState) -> bool:
    """The episode reached its step limit (give it `time_out=True`)."""
    return s.episode_length[w] >= s.max_episode_steps


@wp.func
def bad_orientation(w: int, s: EnvState, p: LimitAngleParams) -> bool:
    """The base tilts more than `limit_angle` from upright."""
    g = root_gravity_b(w, s)
    return -g[2] < wp.cos(p.limit_angle)


@wp.func
def root_height_below_minimum(w: int, s: EnvState, p: MinimumHeightParams) -> bool:
    """The base is lower than `minimum_height`."""
    return root_height(w, s) < p.minimum_height


@wp.struct
class ContactParams:
    """contact: 1 where a watched body touched the ground, per world [N] (int32, `Ref` of the
    task's contact scan)."""

    contact: wp.array(dtype=wp.int32)


@wp.func
def body_ground_contact(w: int, s: EnvState, p: ContactParams) -> bool:
    """A body the task watches (e.g. the base, a knee) touched the ground in the last
    substep (the task's contact scan)."""
    return p.contact[w] != 0
