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


@wp.struct
class ResetArrays:
    """What `reset_world` reads and writes: model sizes and arrays, then data arrays."""

    nq: int
    nv: int
    nu: int
    na: int
    nbody: int
    neq: int
    nuserdata: int
    qpos0: wp.array2d(dtype=float)
    body_mocapid: wp.array(dtype=int)
    body_pos: wp.array2d(dtype=wp.vec3)
    body_quat: wp.array2d(dtype=wp.quat)
    eq_active0: wp.array(dtype=wp.bool)
    time: wp.array(dtype=float)
    qpos: wp.array2d(dtype=float)
    qvel: wp.array2d(dtype=float)
    qacc: wp.array2d(dtype=float)
    qacc_warmstart: wp.array2d(dtype=float)
    qfrc_applied: wp.array2d(dtype=float)
    ctrl: wp.array2d(dtype=float)
    act: wp.array2d(dtype=float)
    act_dot: wp.array2d(dtype=float)
    xfrc_applied: wp.array2d(dtype=wp.spatial_vector)
    mocap_pos: wp.array2d(dtype=wp.vec3)
    mocap_quat: wp.array2d(dtype=wp.quat)
    eq_active: wp.array2d(dtype=wp.bool)
    userdata: wp.array2d(dtype=float)
    overflow: wp.array(dtype=int)


_MODEL_FIELDS = frozenset(
    [
        "nq",
        "nv",
        "nu",
        "na",
        "nbody",
        "neq",
        "nuserdata",
        "qpos0",
        "body_mocapid",
        "body_pos",
        "body_quat",
        "eq_active0",
    ]
)


def reset_arrays(m: mjw.Model, d: mjw.Data) -> ResetArrays:
    """A `ResetArrays` of `m` and `d`. It holds the arrays themselves (persistent in an env, so
    a captured graph stays valid): build it once, not per launch."""
    r = ResetArrays()
    for name in ResetArrays.vars:
        setattr(r, name, getattr(m if name in _MODEL_FIELDS else d, name))
    return r


@wp.func
def reset_world(w: int, r: ResetArrays):
    """Resets world w's state (for a kernel that decided world w must be reset)."""
    r.time[w] = 0.0
    q0 = w % r.qpos0.shape[0]
    for i in range(r.nq):
        r.qpos[w, i] = r.qpos0[q0, i]
    for i in range(r.nv):
        r.qvel[w, i] = 0.0
        r.qacc[w, i] = 0.0
        r.qacc_warmstart[w, i] = 0.0
        r.qfrc_applied[w, i] = 0.0
    for i in range(r.nu):
        r.ctrl[w, i] = 0.0
    for i in range(r.na):
        r.act[w, i] = 0.0
        r.act_dot[w, i] = 0.0
    bp = w % r.body_pos.shape[0]
    bq = w % r.body_quat.shape[0]
    for b in range(r.nbody):
        r.xfrc_applied[w, b] = wp.spatial_vector()
        mid = r.body_mocapid[b]
        if mid >= 0:
            r.mocap_pos[w, mid] = r.body_pos[bp, b]
            r.mocap_quat[w, mid] = r.body_quat[bq, b]
    for i in range(r.neq):
        r.eq_active[w, i] = r.eq_active0[i]
    for i in range(r.nuserdata):
        r.userdata[w, i] = 0.0
    r.overflow[w] = 0


@wp.kernel
def _reset_state(r: ResetArrays, mask: wp.array(dtype=wp.bool)):
    w = wp.tid()
    if mask[w]:
        reset_world(w, r)


def reset_state(
    m: mjw.Model, d: mjw.Data, mask: wp.array, full: bool, arrays: ResetArrays | None = None
) -> None:
    """Reset worlds where `mask` (wp.array(dtype=bool) [nworld]) is True; see the module doc.

    `arrays`: `reset_arrays(m, d)`, built once by the caller (built here when None).
    """
    if full:
        mjw.reset_data(m, d, mask)
        return
    r = arrays if arrays is not None else reset_arrays(m, d)
    wp.launch(_reset_state, dim=d.nworld, inputs=[r, mask])
