"""Frame helpers the library's terms share (MuJoCo Warp data conventions).

The base's pose and velocity come from one of two places (`EnvState.root_from_joint`): the
kinematics MuJoCo last computed (`xpos`, `xmat`, `cvel`; what MJLab reads: in a step's
rewards and terminations those of the last substep's start, in the observations after a
task's `forward_after_reset` those of the state), or the free joint's `qpos`/`qvel`, the
state the last substep integrated to.
"""

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
def gravity_b(w: int, s: EnvState, body: int) -> wp.vec3:
    """The unit gravity direction in `body`'s frame."""
    return wp.transpose(s.xmat[w, body]) @ wp.vec3(0.0, 0.0, -1.0)


@wp.func
def root_quat(w: int, s: EnvState) -> wp.quat:
    """The base's orientation as its free joint holds it (qpos: w, x, y, z; warp: x, y, z, w)."""
    a = s.root_qadr
    return wp.quat(s.qpos[w, a + 4], s.qpos[w, a + 5], s.qpos[w, a + 6], s.qpos[w, a + 3])


@wp.func
def root_lin_vel_b(w: int, s: EnvState) -> wp.vec3:
    """The base's linear velocity in its own frame (m/s)."""
    b, a = s.root_body, s.root_dadr
    v = wp.vec3(0.0)
    if s.root_from_joint != 0:  # the free joint's qvel: world frame
        v_w = wp.vec3(s.qvel[w, a], s.qvel[w, a + 1], s.qvel[w, a + 2])
        v = wp.quat_rotate_inv(root_quat(w, s), v_w)
    else:
        v_w = link_lin_vel_w(s.cvel[w, b], s.xpos[w, b], s.subtree_com[w, b])
        v = wp.transpose(s.xmat[w, b]) @ v_w
    return v


@wp.func
def root_ang_vel_b(w: int, s: EnvState) -> wp.vec3:
    """The base's angular velocity in its own frame (rad/s)."""
    b, a = s.root_body, s.root_dadr
    om = wp.vec3(0.0)
    if s.root_from_joint != 0:  # the free joint's qvel: body frame
        om = wp.vec3(s.qvel[w, a + 3], s.qvel[w, a + 4], s.qvel[w, a + 5])
    else:
        om = wp.transpose(s.xmat[w, b]) @ wp.spatial_top(s.cvel[w, b])
    return om


@wp.func
def root_gravity_b(w: int, s: EnvState) -> wp.vec3:
    """The unit gravity direction in the base's frame."""
    g = wp.vec3(0.0)
    if s.root_from_joint != 0:
        g = wp.quat_rotate_inv(root_quat(w, s), wp.vec3(0.0, 0.0, -1.0))
    else:
        g = gravity_b(w, s, s.root_body)
    return g


@wp.func
def root_height(w: int, s: EnvState) -> float:
    """The base's height (m, world z)."""
    z = float(0.0)  # noqa: UP018 (warp: a mutable variable)
    if s.root_from_joint != 0:
        z = s.qpos[w, s.root_qadr + 2]
    else:
        z = s.xpos[w, s.root_body][2]
    return z
