"""Contact sensing and the env step counter as warp kernels a task launches: the per-world
arrays that terms read through `Ref` (`unilab_envs.terms`).

Not terms (terms are `warp.func`s over `EnvState` that the env compiles): a task launches
these from its hooks (docs/envs.md, "Writing a task") and hands their outputs to its terms.

- `track_contact_sensors`: MJLab's `ContactSensor` (mjlab/sensor/contact_sensor.py) once per
  physics substep (`Task.post_substep`): the feet's air and contact times
  (`_update_air_time_tracking`) and the |force| histories (`_update_history`) of a
  self-collision sensor and of ground-touch sensors, read from MuJoCo contact sensors in
  `sensordata`. Its outputs feed `foot_air_time`, `feet_air_time`, `soft_landing`,
  `self_collision_cost`, `ground_contact_cost` and `illegal_contact`.
- `clear_ground_contacts` + `scan_ground_contacts`: a contact scan of MuJoCo Warp's contact
  list after the physics (`Task.post_physics`): which feet touch the ground, and whether a
  body that must not touch it does (legged-gym's contact check, `quadruped-velocity`,
  `humanoid-velocity`). Their outputs feed `foot_ground_contact`, `feet_air_time` and
  `body_ground_contact`.
- `count_env_step`: MJLab's `common_step_counter` (the env steps since the start, one
  counter for every world), which `uniform_velocity_command`'s stages and
  `terrain_levels_vel` read as `env_step`.
"""

from __future__ import annotations

import warp as wp


@wp.struct
class ContactSensorParams:
    """`track_contact_sensors`' constants: `nfoot` feet, the physics substep `physics_dt` (s)
    and `self_force_adr`, the `sensordata` address of the self-collision sensor's force
    (3 values; -1: no such sensor)."""

    nfoot: int
    physics_dt: float
    # sensordata address of the self-collision contact force (-1: none)
    self_force_adr: int


@wp.kernel
def track_contact_sensors(
    p: ContactSensorParams,
    sensordata: wp.array2d(dtype=float),
    found_adr: wp.array(dtype=wp.int32),
    touch_adr: wp.array(dtype=wp.int32),
    air: wp.array2d(dtype=float),
    contact: wp.array2d(dtype=float),
    self_force: wp.array2d(dtype=float),
    touch: wp.array3d(dtype=float),
):
    """One physics substep of the contact sensors; dim N (worlds).

    sensordata [N, nsensordata] (MuJoCo Warp's), found_adr [F] (each foot's "found" sensor:
    > 0 when in contact), touch_adr [G] (each ground-touch sensor's force, 3 values); updated
    in place: air, contact [N, F] (s since the foot left / touched the ground), self_force
    [N, H] and touch [N, G, H] (|force| (N) of the last H substeps, newest first)."""
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
def clear_ground_contacts(
    nfoot: int, foot_contact: wp.array2d(dtype=float), bad_contact: wp.array(dtype=wp.int32)
):
    """Zero the scan's outputs before `scan_ground_contacts`; dim N (worlds)."""
    w = wp.tid()
    for f in range(nfoot):
        foot_contact[w, f] = 0.0
    bad_contact[w] = 0


@wp.kernel
def scan_ground_contacts(
    nacon: wp.array(dtype=int),
    geom: wp.array(dtype=wp.vec2i),
    worldid: wp.array(dtype=int),
    ctype: wp.array(dtype=int),
    geom_ground: wp.array(dtype=wp.int32),
    geom_foot: wp.array(dtype=wp.int32),
    geom_term: wp.array(dtype=wp.int32),
    foot_contact: wp.array2d(dtype=float),
    bad_contact: wp.array(dtype=wp.int32),
):
    """The robot's ground contacts; dim `data.naconmax` (one thread per contact slot).

    nacon, geom, worldid, ctype: MuJoCo Warp's `data.nacon`, `data.contact.geom`,
    `.worldid`, `.type`; per geom: geom_ground (1: part of the ground), geom_foot (the foot
    it belongs to, -1: none), geom_term (1: its touching the ground is a bad contact). Sets
    foot_contact [N, F] to 1 where foot f touches the ground and bad_contact [N] to 1 where a
    bad contact is; both must be cleared first (`clear_ground_contacts`)."""
    # One thread per contact slot; only robot-ground contacts of the solver count.
    i = wp.tid()
    if i >= nacon[0]:
        return
    if (ctype[i] & 1) == 0:
        return
    g = geom[i]
    if g[0] < 0 or g[1] < 0:
        return
    other = -1
    if geom_ground[g[0]] != 0:
        other = g[1]
    elif geom_ground[g[1]] != 0:
        other = g[0]
    if other < 0:
        return
    w = worldid[i]
    f = geom_foot[other]
    if f >= 0:
        foot_contact[w, f] = 1.0
    if geom_term[other] != 0:
        bad_contact[w] = 1


@wp.kernel
def count_env_step(step: wp.array(dtype=wp.int32)):
    """step[0] += 1: MJLab's `common_step_counter`; dim 1, once per control step."""
    step[0] = step[0] + 1
