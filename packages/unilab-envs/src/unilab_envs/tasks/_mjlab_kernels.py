"""Warp kernels of the MJLab velocity tasks (`tasks/mjlab_velocity.py`) besides their terms
(`tasks/mjlab_terms.py`): the action and the contact sensors' per-substep state.

The terms read the state as MJLab 1.6.0's `ManagerBasedRlEnv.step` does: rewards and
terminations the derived fields left by the last `mujoco_warp.step` (`xmat`, `xpos`, `cvel`,
`subtree_com`, `site_xpos`: one substep stale, as in MJLab, which calls `forward` only before
observing); observations after the env's `forward` (the task sets `forward_after_reset`).
Foot heights (MJLab's terrain-height raycast, `clamp(site_z, 0, max_distance)` on a plane) are
sampled at observation time and used by the next step's rewards, as MJLab's sensor cache is.
MuJoCo free joint: qpos[b:b+3] position, qpos[b+3:b+7] quaternion (w, x, y, z); qvel[v:v+3]
world-frame linear velocity of the body origin, qvel[v+3:v+6] body-frame angular velocity.
"""

from __future__ import annotations

import warp as wp


@wp.struct
class Params:
    nfoot: int
    physics_dt: float
    # sensordata address of the self-collision contact force (-1: none)
    self_force_adr: int


@wp.kernel
def apply_action(
    action: wp.array2d(dtype=float),
    act_id: wp.array(dtype=wp.int32),
    q0: wp.array(dtype=float),
    scale: wp.array(dtype=float),
    bias: wp.array2d(dtype=float),
    ctrl: wp.array2d(dtype=float),
):
    # JointPositionAction: target = default + scale * action - encoder bias.
    w, j = wp.tid()
    ctrl[w, act_id[j]] = q0[j] + scale[j] * action[w, j] - bias[w, j]


@wp.kernel
def track_contacts(
    p: Params,
    sensordata: wp.array2d(dtype=float),
    found_adr: wp.array(dtype=wp.int32),
    touch_adr: wp.array(dtype=wp.int32),
    air: wp.array2d(dtype=float),
    contact: wp.array2d(dtype=float),
    self_force: wp.array2d(dtype=float),
    touch: wp.array3d(dtype=float),
):
    # Once per physics substep: ContactSensor._update_air_time_tracking of the feet, and the
    # force histories (`_update_history`, newest first; kept as |f|) of the self-collision
    # sensor and of the ground-touch sensors (one per geom).
    w = wp.tid()
    for f in range(p.nfoot):
        if sensordata[w, found_adr[f]] > 0.0:
            air[w, f] = 0.0
            contact[w, f] = contact[w, f] + p.physics_dt
        else:
            air[w, f] = air[w, f] + p.physics_dt
            contact[w, f] = 0.0
    nh = self_force.shape[1]
    if p.self_force_adr >= 0 and nh > 0:
        for i in range(nh - 1):
            self_force[w, nh - 1 - i] = self_force[w, nh - 2 - i]
        a = p.self_force_adr
        fv = wp.vec3(sensordata[w, a], sensordata[w, a + 1], sensordata[w, a + 2])
        self_force[w, 0] = wp.length(fv)
    th = touch.shape[2]
    for g in range(touch_adr.shape[0]):
        for i in range(th - 1):
            touch[w, g, th - 1 - i] = touch[w, g, th - 2 - i]
        a = touch_adr[g]
        fv = wp.vec3(sensordata[w, a], sensordata[w, a + 1], sensordata[w, a + 2])
        touch[w, g, 0] = wp.length(fv)


@wp.kernel
def count_step(step: wp.array(dtype=wp.int32)):
    step[0] = step[0] + 1
