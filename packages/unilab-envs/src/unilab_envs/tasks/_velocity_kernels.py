"""Warp kernels of the velocity task (`tasks/velocity.py`) besides its terms: the contact
scan. Its observations, rewards, terminations, command and reset events are library terms
(`unilab_envs.mdp`), compiled by the env (`unilab_envs.terms`).
"""

from __future__ import annotations

import warp as wp

STREAM_OBS_NOISE = 103  # the policy group's noise (the terms' observe kernel)


@wp.kernel
def clear_contacts(
    nfoot: int, foot_contact: wp.array2d(dtype=float), bad_contact: wp.array(dtype=wp.int32)
):
    w = wp.tid()
    for f in range(nfoot):
        foot_contact[w, f] = 0.0
    bad_contact[w] = 0


@wp.kernel
def scan_contacts(
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
