"""Domain randomization drawn per reset (friction, masses, actuator gains) and pushes.

`DomainRandomization` is a frozen config; the env turns it into a `Randomizer` that makes the
touched `mujoco_warp.Model` fields per-world (`put_model(batch_sizes=...)`) and redraws them
for the worlds being reset, inside the captured control step. Draws come from
`world_rng(seed, counter, ...)`, so one seed fixes them all.

Ranges are (low, high) multiplicative scales of the MJCF's nominal values, drawn uniformly:
- `friction_scale`: one factor per world for the sliding friction of every geom;
- `mass_scale`: one factor per (world, body) for mass and inertia together (bodies named in
  `mass_bodies`, default all but the world body); each world's subtree masses follow (so
  subtree centres of mass stay exact), while the constraint solver's `body_invweight0` /
  `dof_invweight0` (from the nominal inertia at `qpos0`, which sets how soft contacts and limits
  are) keep their nominal values: recomputing them takes a factorization per world;
- `actuator_gain_scale`: one factor per (world, actuator) for `gainprm[0]`, `biasprm[1]` and
  `biasprm[2]` together (for a `position` actuator that scales kp and kv; a `motor` has no
  bias, so it scales its gear-like gain).
Pushes: every `push_interval_s` (uniform in the range, per world) the first
`len(push_velocity)` dofs of joint `push_joint` get a velocity change uniform in
`[-push_velocity[i], push_velocity[i]]` (m/s or rad/s; for a free joint dofs 0-2 are the
world-frame linear velocity).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
import mujoco
import numpy as np
import warp as wp

from unilab_envs._core import rng

if TYPE_CHECKING:
    import mujoco_warp as mjw

__all__ = ["DomainRandomization", "Randomizer"]


def _range_or_none(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is None:
        return
    if len(value) != 2 or not (0 <= value[0] <= value[1]):
        raise ValueError(f"{attribute.name} must be (low, high) with 0 <= low <= high, got {value}")


@attrs.frozen(kw_only=True)
class DomainRandomization:
    """Which model parameters are randomized per reset, and pushes. See the module docstring."""

    friction_scale: tuple[float, float] | None = attrs.field(default=None, validator=_range_or_none)
    mass_scale: tuple[float, float] | None = attrs.field(default=None, validator=_range_or_none)
    mass_bodies: tuple[str, ...] | None = None
    actuator_gain_scale: tuple[float, float] | None = attrs.field(
        default=None, validator=_range_or_none
    )
    push_joint: str | None = None
    push_velocity: tuple[float, ...] = ()
    push_interval_s: tuple[float, float] = attrs.field(default=(10.0, 15.0))

    @push_interval_s.validator
    def _check_interval(self, attribute: attrs.Attribute, value: tuple[float, float]) -> None:
        if len(value) != 2 or not (0 < value[0] <= value[1]):
            raise ValueError(
                f"push_interval_s must be (low, high) with 0 < low <= high, got {value}"
            )

    @property
    def pushes(self) -> bool:
        return self.push_joint is not None and len(self.push_velocity) > 0

    def batch_sizes(self, num_envs: int) -> dict[str, int]:
        """`put_model` batch sizes: the Model fields that become per-world."""
        out: dict[str, int] = {}
        if self.friction_scale is not None:
            out["geom_friction"] = num_envs
        if self.mass_scale is not None:
            out["body_mass"] = num_envs
            out["body_inertia"] = num_envs
            out["body_subtreemass"] = num_envs
        if self.actuator_gain_scale is not None:
            out["actuator_gainprm"] = num_envs
            out["actuator_biasprm"] = num_envs
        return out


@wp.kernel
def _friction_kernel(
    seed: int,
    counter: wp.array(dtype=wp.int32),
    mask: wp.array(dtype=wp.bool),
    nominal: wp.array(dtype=wp.vec3),
    lo: float,
    hi: float,
    friction: wp.array2d(dtype=wp.vec3),
):
    w, g = wp.tid()
    if not mask[w]:
        return
    state = rng.world_rng(seed, counter[0], w, rng.STREAM_DR_FRICTION)
    s = wp.randf(state, lo, hi)
    f = nominal[g]
    friction[w, g] = wp.vec3(f[0] * s, f[1], f[2])


@wp.kernel
def _mass_kernel(
    seed: int,
    counter: wp.array(dtype=wp.int32),
    mask: wp.array(dtype=wp.bool),
    bodies: wp.array(dtype=wp.int32),
    nominal_mass: wp.array(dtype=float),
    nominal_inertia: wp.array(dtype=wp.vec3),
    nbody: int,
    lo: float,
    hi: float,
    mass: wp.array2d(dtype=float),
    inertia: wp.array2d(dtype=wp.vec3),
):
    w, i = wp.tid()
    if not mask[w]:
        return
    b = bodies[i]
    state = rng.world_rng(seed, counter[0], w * nbody + b, rng.STREAM_DR_MASS)
    s = wp.randf(state, lo, hi)
    mass[w, b] = nominal_mass[b] * s
    inertia[w, b] = nominal_inertia[b] * s


@wp.kernel
def _subtree_mass_kernel(
    mask: wp.array(dtype=wp.bool),
    nbody: int,
    parent: wp.array(dtype=int),
    mass: wp.array2d(dtype=float),
    subtree: wp.array2d(dtype=float),
):
    # body_subtreemass of a reset world from its new masses (bodies are numbered parents first).
    w = wp.tid()
    if not mask[w]:
        return
    for b in range(nbody):
        subtree[w, b] = mass[w, b]
    for k in range(nbody - 1):
        b = nbody - 1 - k
        subtree[w, parent[b]] = subtree[w, parent[b]] + subtree[w, b]


@wp.kernel
def _gain_kernel(
    seed: int,
    counter: wp.array(dtype=wp.int32),
    mask: wp.array(dtype=wp.bool),
    nominal_gain: wp.array(dtype=float),
    nominal_bias1: wp.array(dtype=float),
    nominal_bias2: wp.array(dtype=float),
    nu: int,
    lo: float,
    hi: float,
    gainprm: wp.array2d(dtype=wp.types.vector(10, float)),
    biasprm: wp.array2d(dtype=wp.types.vector(10, float)),
):
    w, a = wp.tid()
    if not mask[w]:
        return
    state = rng.world_rng(seed, counter[0], w * nu + a, rng.STREAM_DR_GAIN)
    s = wp.randf(state, lo, hi)
    g = gainprm[w, a]
    g[0] = nominal_gain[a] * s
    gainprm[w, a] = g
    b = biasprm[w, a]
    b[1] = nominal_bias1[a] * s
    b[2] = nominal_bias2[a] * s
    biasprm[w, a] = b


@wp.kernel
def _push_kernel(
    seed: int,
    counter: wp.array(dtype=wp.int32),
    mask: wp.array(dtype=wp.bool),
    step_mode: int,
    dof0: int,
    ndof: int,
    max_vel: wp.array(dtype=float),
    interval_lo: int,
    interval_hi: int,
    timer: wp.array(dtype=wp.int32),
    qvel: wp.array2d(dtype=float),
):
    # step_mode 0: (re)arm the timer of masked worlds; 1: count down and push when it fires.
    w = wp.tid()
    if step_mode == 0:
        if mask[w]:
            state = rng.world_rng(seed, counter[0], w, rng.STREAM_PUSH_TIMER)
            timer[w] = interval_lo + wp.int32(
                wp.randf(state) * float(interval_hi - interval_lo + 1)
            )
        return
    t = timer[w] - 1
    if t > 0:
        timer[w] = t
        return
    state = rng.world_rng(seed, counter[0], w, rng.STREAM_PUSH)
    for i in range(ndof):
        qvel[w, dof0 + i] = qvel[w, dof0 + i] + wp.randf(state, -max_vel[i], max_vel[i])
    timer[w] = interval_lo + wp.int32(wp.randf(state) * float(interval_hi - interval_lo + 1))


class Randomizer:
    """Device side of a `DomainRandomization` for one env (built by the env, not by users)."""

    def __init__(
        self,
        cfg: DomainRandomization,
        mjm: mujoco.MjModel,
        model: mjw.Model,
        data: mjw.Data,
        num_envs: int,
        step_dt: float,
        device: wp.context.Device,
    ) -> None:
        self.cfg, self.model, self.data, self.num_envs, self.device = (
            cfg,
            model,
            data,
            num_envs,
            device,
        )
        self.nbody, self.nu = mjm.nbody, mjm.nu
        if cfg.friction_scale is not None:
            self._friction0 = wp.array(
                mjm.geom_friction.astype(np.float32), dtype=wp.vec3, device=device
            )
        if cfg.mass_scale is not None:
            if cfg.mass_bodies is None:
                ids = list(range(1, mjm.nbody))
            else:
                ids = [
                    _name_to_id(mjm, mujoco.mjtObj.mjOBJ_BODY, n, "body") for n in cfg.mass_bodies
                ]
            self._bodies = wp.array(np.asarray(ids, np.int32), dtype=wp.int32, device=device)
            self._mass0 = wp.array(mjm.body_mass.astype(np.float32), dtype=float, device=device)
            self._inertia0 = wp.array(
                mjm.body_inertia.astype(np.float32), dtype=wp.vec3, device=device
            )
        if cfg.actuator_gain_scale is not None:
            self._gain0 = wp.array(mjm.actuator_gainprm[:, 0].astype(np.float32), device=device)
            self._bias1 = wp.array(mjm.actuator_biasprm[:, 1].astype(np.float32), device=device)
            self._bias2 = wp.array(mjm.actuator_biasprm[:, 2].astype(np.float32), device=device)
        if cfg.pushes:
            jid = _name_to_id(mjm, mujoco.mjtObj.mjOBJ_JOINT, cfg.push_joint, "joint")
            self._dof0 = int(mjm.jnt_dofadr[jid])
            ndof_joint = {0: 6, 1: 3, 2: 1, 3: 1}[int(mjm.jnt_type[jid])]
            if len(cfg.push_velocity) > ndof_joint:
                raise ValueError(
                    f"push_velocity has {len(cfg.push_velocity)} entries but joint "
                    f"{cfg.push_joint!r} has {ndof_joint} dofs"
                )
            self._push_vel = wp.array(np.asarray(cfg.push_velocity, np.float32), device=device)
            self._interval = (
                max(1, round(cfg.push_interval_s[0] / step_dt)),
                max(1, round(cfg.push_interval_s[1] / step_dt)),
            )
            self._timer = wp.zeros(num_envs, dtype=wp.int32, device=device)

    def on_reset(self, seed: int, counter: wp.array, mask: wp.array) -> None:
        """Redraw the randomized parameters (and push timers) of the worlds in `mask`."""
        cfg, n = self.cfg, self.num_envs
        if cfg.friction_scale is not None:
            lo, hi = cfg.friction_scale
            wp.launch(
                _friction_kernel,
                dim=(n, self._friction0.shape[0]),
                inputs=[seed, counter, mask, self._friction0, lo, hi, self.model.geom_friction],
                device=self.device,
            )
        if cfg.mass_scale is not None:
            lo, hi = cfg.mass_scale
            wp.launch(
                _mass_kernel,
                dim=(n, self._bodies.shape[0]),
                inputs=[
                    seed,
                    counter,
                    mask,
                    self._bodies,
                    self._mass0,
                    self._inertia0,
                    self.nbody,
                    lo,
                    hi,
                ],
                outputs=[self.model.body_mass, self.model.body_inertia],
                device=self.device,
            )
            wp.launch(
                _subtree_mass_kernel,
                dim=n,
                inputs=[mask, self.nbody, self.model.body_parentid, self.model.body_mass],
                outputs=[self.model.body_subtreemass],
                device=self.device,
            )
        if cfg.actuator_gain_scale is not None and self.nu > 0:
            lo, hi = cfg.actuator_gain_scale
            wp.launch(
                _gain_kernel,
                dim=(n, self.nu),
                inputs=[
                    seed,
                    counter,
                    mask,
                    self._gain0,
                    self._bias1,
                    self._bias2,
                    self.nu,
                    lo,
                    hi,
                ],
                outputs=[self.model.actuator_gainprm, self.model.actuator_biasprm],
                device=self.device,
            )
        if cfg.pushes:
            self._launch_push(seed, counter, mask, 0)

    def push(self, seed: int, counter: wp.array, mask: wp.array) -> None:
        """Once per control step before physics: count down and push worlds whose timer fires."""
        if self.cfg.pushes:
            self._launch_push(seed, counter, mask, 1)

    def _launch_push(self, seed: int, counter: wp.array, mask: wp.array, mode: int) -> None:
        wp.launch(
            _push_kernel,
            dim=self.num_envs,
            inputs=[
                seed,
                counter,
                mask,
                mode,
                self._dof0,
                len(self.cfg.push_velocity),
                self._push_vel,
                self._interval[0],
                self._interval[1],
                self._timer,
                self.data.qvel,
            ],
            device=self.device,
        )


def _name_to_id(mjm: mujoco.MjModel, objtype: mujoco.mjtObj, name: str, what: str) -> int:
    idx = mujoco.mj_name2id(mjm, objtype, name)
    if idx < 0:
        raise ValueError(f"domain randomization names {what} {name!r}, which the model lacks")
    return idx
