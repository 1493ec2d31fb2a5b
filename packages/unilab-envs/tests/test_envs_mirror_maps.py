"""The mirror maps of the MJLab velocity tasks, proven on the physics: a recorded state of Go1
and of G1 (random actions for some steps), reflected through the model (y -> -y: base
position, orientation and velocities; joints, controls, actions and encoder biases through
`joint_mirror`; command, feet timers, per-world friction and centre of mass by name), observed
again, equals the task's mirror map applied to the observation of the recorded state."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from unilab_envs.joint_mirror import joint_mirror, mirror_name
from unilab_envs.terms.mirror import apply_map, name_permutation

STEPS = 12
ATOL = 1e-5  # float32 kinematics in another order
# The contact forces (sign(f) log(1 + |f|)) come out of the constraint solver. Go1's feet are
# mirror images: its forces mirror to what the solver's few iterations leave (measured 6e-4,
# as the same state's forces in another contact order). G1's MJCF is not quite symmetric
# at the feet (left_foot1_collision at y = -0.0265, right_foot7_collision at +0.026; the
# other five spheres of a foot mirror exactly): half a millimetre shifts the load between the
# spheres of a foot, measured up to 0.104 in log(1 + |f|) (about 10 % of a foot's force).
ATOL_CONTACT_FORCE = {"go1-velocity-flat": 1e-3, "g1-velocity-flat": 0.15}


def _names(mjm, obj, count):
    return [mujoco.mj_id2name(mjm, obj, i) or "" for i in range(count)]


def _partner_ids(names: list[str]) -> np.ndarray:
    """Each object's mirror partner by name (itself when unnamed or without a partner)."""
    return np.array(
        [names.index(mirror_name(n)) if n and mirror_name(n) in names else i
         for i, n in enumerate(names)]
    )  # fmt: skip


class Mirrored:
    """The state of an env's worlds and its reflection y -> -y through the model."""

    def __init__(self, env) -> None:
        self.env, self.task, self.ctx, mjm = env, env.task, env.ctx, env.mjm
        joints = list(self.task.robot.joint_names)
        self.jmap = joint_mirror(mjm, joints)
        jids = [mjm.joint(j).id for j in joints]
        self.qadr = mjm.jnt_qposadr[jids]
        self.dadr = mjm.jnt_dofadr[jids]
        free = [i for i in range(mjm.njnt) if mjm.jnt_type[i] == mujoco.mjtJoint.mjJNT_FREE]
        assert len(free) == 1
        self.qb, self.vb = int(mjm.jnt_qposadr[free[0]]), int(mjm.jnt_dofadr[free[0]])
        # actuator of each joint (position actuators: ctrl is a joint target)
        self.act = np.array([int(np.flatnonzero(mjm.actuator_trnid[:, 0] == j)[0]) for j in jids])
        assert sorted(self.act) == list(range(mjm.nu))
        self.feet = name_permutation(self.task.config.foot_sites, mirror_name, "feet")
        self.geoms = _partner_ids(_names(mjm, mujoco.mjtObj.mjOBJ_GEOM, mjm.ngeom))
        self.bodies = _partner_ids(_names(mjm, mujoco.mjtObj.mjOBJ_BODY, mjm.nbody))

    def record(self) -> dict[str, np.ndarray]:
        import warp as wp

        d, ctx, task = self.ctx.data, self.ctx, self.task
        out = {k: getattr(d, k).numpy().copy() for k in ("qpos", "qvel", "qacc_warmstart", "ctrl")}
        out["action"] = ctx.action.numpy().copy()
        out["episode_length"] = ctx.episode_length.numpy().copy()
        for k in ("command", "air_time", "contact_time", "encoder_bias"):
            out[k] = wp.to_torch(getattr(task, k)).cpu().numpy().copy()
        out["geom_friction"] = ctx.model.geom_friction.numpy().copy()
        out["body_ipos"] = ctx.model.body_ipos.numpy().copy()
        return out

    def reflect(self, s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        m = {k: v.copy() for k, v in s.items()}
        qb, vb, vec, axial = self.qb, self.vb, np.array([1, -1, 1]), np.array([-1, 1, -1])
        for key, adr in (("qpos", self.qadr), ("qvel", self.dadr), ("qacc_warmstart", self.dadr)):
            m[key][:, adr] = apply_map(self.jmap, s[key][:, adr])
        m["qpos"][:, qb : qb + 3] *= vec
        m["qpos"][:, qb + 3 : qb + 7] *= np.array([1, -1, 1, -1])  # (w, x, y, z) of M R M
        for key in ("qvel", "qacc_warmstart"):
            m[key][:, vb : vb + 3] *= vec
            m[key][:, vb + 3 : vb + 6] *= axial
        m["ctrl"][:, self.act] = apply_map(self.jmap, s["ctrl"][:, self.act])
        for key in ("action", "encoder_bias"):
            m[key] = apply_map(self.jmap, s[key])
        m["command"] = s["command"] * np.array([1, -1, -1], np.float32)
        for key in ("air_time", "contact_time"):
            m[key] = s[key][:, list(self.feet)]
        m["geom_friction"] = s["geom_friction"][:, self.geoms]
        m["body_ipos"] = s["body_ipos"][:, self.bodies] * vec.astype(np.float32)
        return m

    def observe(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import mujoco_warp as mjw
        import warp as wp

        ctx, task = self.ctx, self.task
        task.load_state(ctx, state)
        mjw.forward(ctx.model, ctx.data)
        dims = task.spec.observation_dims
        obs = {
            g: wp.zeros((ctx.num_envs, d), dtype=float, device=ctx.device) for g, d in dims.items()
        }
        task.observe(ctx, obs)
        return {g: a.numpy() for g, a in obs.items()}


def _recorded(task_name: str, seed: int):
    import torch

    import unilab_envs
    from unilab_envs.testing import mjlab_robot

    mjlab_robot(task_name.split("-")[0])  # skip (or fail) with the reason without the MJCF
    env = unilab_envs.make(task_name, num_envs=4, seed=seed, obs_noise=False)
    env.reset()
    gen = torch.Generator().manual_seed(seed)
    for _ in range(STEPS):
        env.step(torch.randn(4, env.action_dim, generator=gen) * 0.5)
    return env


def _columns(task, group: str, name: str) -> np.ndarray:
    cols, i = [], 0
    for term, width, _ in task.terms.layout[group]:
        if term == name:
            cols += range(i, i + width)
        i += width
    return np.array(cols, dtype=int)


def _velocimeter_offset(env) -> np.ndarray:
    """The lever arm `r - M r` = (0, 2 y, 0) of the velocimeter's site off the plane y = 0 of
    its body: the mirrored state's velocimeter reads `w' x r`, the mirror of the reading
    `w' x M r`, so the two differ by `w' x (0, 2 y, 0)` (Go1's IMU sits 6.7 cm to the right)."""
    mjm = env.mjm
    sensor = mjm.sensor(env.task.config.imu_velocimeter)
    assert sensor.objtype[0] == mujoco.mjtObj.mjOBJ_SITE
    site = mjm.site(int(sensor.objid[0]))
    np.testing.assert_array_equal(site.quat, [1, 0, 0, 0])
    return np.array([0.0, 2.0 * site.pos[1], 0.0])


@pytest.mark.parametrize(("task_name", "seed"), [("go1-velocity-flat", 3), ("g1-velocity-flat", 5)])
def test_mirror_map_is_the_observation_of_the_mirrored_state(task_name: str, seed: int) -> None:
    env = _recorded(task_name, seed)
    maps = env.task.mirror_maps()
    mirrored = Mirrored(env)
    state = mirrored.record()
    assert np.abs(state["qpos"][:, mirrored.qb + 1]).max() > 1e-3  # off the plane y = 0
    obs = mirrored.observe(state)
    obs_m = mirrored.observe(mirrored.reflect(state))
    offset = _velocimeter_offset(env)
    for group, values in obs.items():
        expect = apply_map(maps.obs[group], values)
        assert np.abs(expect - values).max() > 1e-2  # the map changes the observation
        lin, ang = (
            _columns(env.task, group, "base_lin_vel"),
            _columns(env.task, group, "base_ang_vel"),
        )
        expect[:, lin] += np.cross(obs_m[group][:, ang], offset)  # the site's lever arm
        forces = _columns(env.task, group, "foot_contact_forces")
        rest = np.setdiff1d(np.arange(values.shape[1]), forces)
        np.testing.assert_allclose(obs_m[group][:, rest], expect[:, rest], atol=ATOL, rtol=0)
        np.testing.assert_allclose(
            obs_m[group][:, forces], expect[:, forces], atol=ATOL_CONTACT_FORCE[task_name], rtol=0
        )
    assert maps.action == mirrored.jmap


# ------------------------------------------------------------------ the rules, by hand
def _ctx():
    from unilab_envs.terms.mirror import MirrorContext

    joints = ((1, 0), (-1.0, 1.0))
    return MirrorContext(joints=joints, actions=joints, feet=(1, 0))


def _map(func, size: int, **kw):
    from unilab_envs.terms import ObservationTerm
    from unilab_envs.terms.mirror import term_mirror

    return term_mirror(
        "observations.policy.x", ObservationTerm(func=func, **kw), size, _ctx(), None
    )


def test_rules_by_hand() -> None:
    from unilab_envs import mdp

    assert _map(mdp.base_lin_vel, 3) == ((0, 1, 2), (1.0, -1.0, 1.0))
    assert _map(mdp.base_ang_vel, 3) == ((0, 1, 2), (-1.0, 1.0, -1.0))
    assert _map(mdp.generated_commands, 3) == ((0, 1, 2), (1.0, -1.0, -1.0))
    assert _map(mdp.joint_pos_rel, 2) == ((1, 0), (-1.0, 1.0))
    assert _map(mdp.foot_air_time, 2) == ((1, 0), (1.0, 1.0))
    assert _map(mdp.foot_contact_forces, 6) == ((3, 4, 5, 0, 1, 2), (1.0, -1.0, 1.0) * 2)
    # a clip symmetric about 0 keeps the map; another one has none where a sign flips
    assert _map(mdp.base_lin_vel, 3, clip=(-2.0, 2.0))[1] == (1.0, -1.0, 1.0)
    with pytest.raises(ValueError, match=r"clip \(-1.0, 2.0\) is not symmetric"):
        _map(mdp.base_lin_vel, 3, clip=(-1.0, 2.0))
    with pytest.raises(ValueError, match="maps 3 values at a time, the term has 4"):
        _map(mdp.base_lin_vel, 4)


def test_a_term_without_a_rule_is_named() -> None:
    from unilab_envs import mdp

    with pytest.raises(ValueError, match=r"observations.policy.x: the term 'height_scan' declares"):
        _map(mdp.height_scan, 3)


def test_a_task_without_maps_is_named() -> None:
    import unilab_envs

    env = unilab_envs.make("cartpole-balance", num_envs=1)
    with pytest.raises(ValueError, match="task 'cartpole-balance' has no mirror maps"):
        env.task.mirror_maps()
