"""Masked reset of the MJWarp state fields, without `mujoco_warp.reset_data`'s per-call cost.

`mujoco_warp.reset_data` defines its kernels inside the function, so every eager call re-hashes
them (about 0.1 s on warp's CPU device), which would dominate CPU stepping. This kernel resets
the state that the next `mujoco_warp.step` reads (everything else is recomputed by it):
time, qpos <- qpos0, qvel, act, act_dot, ctrl, qacc, qacc_warmstart, qfrc_applied,
xfrc_applied, mocap poses <- body_pos/body_quat, eq_active <- eq_active0, userdata, and the
overflow bits. Models with state this kernel does not cover (sleep/islands, flex, plasticity,
delay history) use `mujoco_warp.reset_data` instead (`needs_full_reset`).
"""

from __future__ import annotations

import mujoco
import mujoco_warp as mjw
import warp as wp


def needs_full_reset(mjm: mujoco.MjModel) -> bool:
    """True if the model has state that only `mujoco_warp.reset_data` restores."""
    sleep = bool(mjm.opt.enableflags & mujoco.mjtEnableBit.mjENBL_SLEEP)
    extra = sum(int(getattr(mjm, name, 0)) for name in ("nflex", "nplastic", "nhistory"))
    return sleep or extra > 0


@wp.kernel
def _reset_state(
    nq: int,
    nv: int,
    nu: int,
    na: int,
    nbody: int,
    neq: int,
    nuserdata: int,
    qpos0: wp.array2d(dtype=float),
    body_mocapid: wp.array(dtype=int),
    body_pos: wp.array2d(dtype=wp.vec3),
    body_quat: wp.array2d(dtype=wp.quat),
    eq_active0: wp.array(dtype=wp.bool),
    mask: wp.array(dtype=wp.bool),
    time: wp.array(dtype=float),
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    qacc: wp.array2d(dtype=float),
    qacc_warmstart: wp.array2d(dtype=float),
    qfrc_applied: wp.array2d(dtype=float),
    ctrl: wp.array2d(dtype=float),
    act: wp.array2d(dtype=float),
    act_dot: wp.array2d(dtype=float),
    xfrc_applied: wp.array2d(dtype=wp.spatial_vector),
    mocap_pos: wp.array2d(dtype=wp.vec3),
    mocap_quat: wp.array2d(dtype=wp.quat),
    eq_active: wp.array2d(dtype=wp.bool),
    userdata: wp.array2d(dtype=float),
    overflow: wp.array(dtype=int),
):
    w = wp.tid()
    if not mask[w]:
        return
    time[w] = 0.0
    q0 = w % qpos0.shape[0]
    for i in range(nq):
        qpos[w, i] = qpos0[q0, i]
    for i in range(nv):
        qvel[w, i] = 0.0
        qacc[w, i] = 0.0
        qacc_warmstart[w, i] = 0.0
        qfrc_applied[w, i] = 0.0
    for i in range(nu):
        ctrl[w, i] = 0.0
    for i in range(na):
        act[w, i] = 0.0
        act_dot[w, i] = 0.0
    bp = w % body_pos.shape[0]
    bq = w % body_quat.shape[0]
    for b in range(nbody):
        xfrc_applied[w, b] = wp.spatial_vector()
        mid = body_mocapid[b]
        if mid >= 0:
            mocap_pos[w, mid] = body_pos[bp, b]
            mocap_quat[w, mid] = body_quat[bq, b]
    for i in range(neq):
        eq_active[w, i] = eq_active0[i]
    for i in range(nuserdata):
        userdata[w, i] = 0.0
    overflow[w] = 0


def reset_state(m: mjw.Model, d: mjw.Data, mask: wp.array, full: bool) -> None:
    """Reset worlds where `mask` (wp.array(dtype=bool) [nworld]) is True; see the module doc."""
    if full:
        mjw.reset_data(m, d, mask)
        return
    wp.launch(
        _reset_state,
        dim=d.nworld,
        inputs=[
            m.nq,
            m.nv,
            m.nu,
            m.na,
            m.nbody,
            m.neq,
            m.nuserdata,
            m.qpos0,
            m.body_mocapid,
            m.body_pos,
            m.body_quat,
            m.eq_active0,
            mask,
        ],
        outputs=[
            d.time,
            d.qpos,
            d.qvel,
            d.qacc,
            d.qacc_warmstart,
            d.qfrc_applied,
            d.ctrl,
            d.act,
            d.act_dot,
            d.xfrc_applied,
            d.mocap_pos,
            d.mocap_quat,
            d.eq_active,
            d.userdata,
            d.overflow,
        ],
    )
