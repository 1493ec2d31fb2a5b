"""Frame helpers the library's terms share (MuJoCo Warp data conventions)."""

from __future__ import annotations

import warp as wp

from unilab_envs.terms.state import EnvState


@wp.func
def link_lin_vel_w(cvel: wp.spatial_vector, pos: wp.vec3, subtree_com: wp.vec3) -> wp.vec3:
    """World-frame linear velocity at `pos` of a body whose `cvel` (angular, linear at the
    subtree's center of mass) MuJoCo Warp gives (MJLab's compute_velocity_from_cvel)."""
    ang = wp.spatial_top(cvel)
    lin = wp.spatial_bottom(cvel)
    return lin - wp.cross(ang, subtree_com - pos)


@wp.func
def root_lin_vel_b(w: int, s: EnvState) -> wp.vec3:
    """The base's linear velocity in its own frame (m/s)."""
    b = s.root_body
    v = link_lin_vel_w(s.cvel[w, b], s.xpos[w, b], s.subtree_com[w, b])
    return wp.transpose(s.xmat[w, b]) @ v


@wp.func
def root_ang_vel_b(w: int, s: EnvState) -> wp.vec3:
    """The base's angular velocity in its own frame (rad/s)."""
    b = s.root_body
    return wp.transpose(s.xmat[w, b]) @ wp.spatial_top(s.cvel[w, b])


@wp.func
def gravity_b(w: int, s: EnvState, body: int) -> wp.vec3:
    """The unit gravity direction in `body`'s frame."""
    return wp.transpose(s.xmat[w, body]) @ wp.vec3(0.0, 0.0, -1.0)
