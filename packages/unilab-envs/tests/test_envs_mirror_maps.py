"""The mirror maps of the MJLab velocity tasks, proven on the physics: a recorded state of Go1
and of G1 (random actions for some steps), reflected through the model (y -> -y: base
position, orientation and velocities; joints, controls, actions and encoder biases through
`joint_mirror`; command, feet timers, per-world friction and centre of mass by name), observed
again, equals the task's mirror map applied to the observation of the recorded state.

Rough (`go1-velocity-rough`): the same on a terrain that is its own mirror image about the
world's x axis and nowhere flat under the scan (`_mirror_terrain`: boxes of random heights,
the same at (x, y) and (x, -y), different along x), so the mirrored state's height scan sees
the mirrored ground: it equals the mapped scan only if each ray is paired with the ray at its
mirror point (the identity, or a flip along x, fails: the test checks both would change it).
"""

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
ATOL_CONTACT_FORCE = {
    "go1-velocity-flat": 1e-3,
    "g1-velocity-flat": 0.15,
    "go1-velocity-rough": 1e-3,
}


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


def _mirror_terrain(cell: float = 0.3, cells: int = 5, seed: int = 0):
    """A ground box (top at z = 0) under a grid of 2 cells x 2 cells boxes, `cell` metres
    each, of random heights 1-6 cm: the same at (x, y) and (x, -y), so the terrain is its
    own mirror image under y -> -y, and one tile at the origin to spawn on. The boxes reach
    10 cm into the ground: a bottom face on the ground's top would tie with it for a ray
    that starts inside a box (a foot scan's), and which one wins depends on the order the
    ray meets them, which the mirror does not keep."""
    from unilab_envs.terrain import TerrainGeometry, TerrainLayout

    rng = np.random.default_rng(seed)
    heights = rng.uniform(0.01, 0.06, size=(2 * cells, cells))  # [x, |y|]
    centres = (np.arange(2 * cells) - cells + 0.5) * cell
    pos, size = [[0.0, 0.0, -0.5]], [[4.0, 4.0, 0.5]]
    for i, x in enumerate(centres):
        for j in range(cells):
            h = heights[i, j]
            for y in ((j + 0.5) * cell, -(j + 0.5) * cell):
                pos.append([x, y, (h - 0.1) / 2])
                size.append([cell / 2, cell / 2, (h + 0.1) / 2])
    n = len(pos)
    layout = TerrainLayout(
        origins=np.zeros((1, 1, 3)),
        tile_types=np.zeros((1, 1), dtype=np.int64),
        difficulty=np.zeros((1, 1)),
        type_names=("mirror_boxes",),
        spawn_weights=np.ones(1),
        extent=(cells * cell, cells * cell),
    )
    geoms = {"type": [6] * n, "pos": pos, "quat": [[1.0, 0.0, 0.0, 0.0]] * n, "size": size}
    return TerrainGeometry(geoms=geoms, layout=layout, border_width=1.0)


def _recorded(task_name: str, seed: int):
    import torch

    import unilab_envs
    from unilab_envs.testing import mjlab_robot

    mjlab_robot(task_name.split("-")[0])  # skip (or fail) with the reason without the MJCF
    rough = {"terrain": _mirror_terrain()} if task_name.endswith("-rough") else {}
    env = unilab_envs.make(task_name, num_envs=4, seed=seed, obs_noise=False, **rough)
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


@pytest.mark.parametrize(
    ("task_name", "seed"),
    [("go1-velocity-flat", 3), ("g1-velocity-flat", 5), ("go1-velocity-rough", 7)],
)
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
        scan = _columns(env.task, group, "height_scan")
        if task_name.endswith("-rough"):  # the scan sees bumps, and its map moves them
            nx = len(np.unique(env.task.config.terrain_scan.offsets()[:, 0]))
            rays = values[:, scan]
            flipped_x = rays.reshape(len(rays), -1, nx)[:, :, ::-1].reshape(rays.shape)
            assert np.ptp(rays, axis=1).min() > 1e-3
            assert np.abs(expect[:, scan] - rays).max() > 1e-3  # not the identity
            assert np.abs(expect[:, scan] - flipped_x).max() > 1e-3  # nor a flip along x
        forces = _columns(env.task, group, "foot_contact_forces")
        rest = np.setdiff1d(np.arange(values.shape[1]), forces)
        np.testing.assert_allclose(obs_m[group][:, rest], expect[:, rest], atol=ATOL, rtol=0)
        np.testing.assert_allclose(
            obs_m[group][:, forces], expect[:, forces], atol=ATOL_CONTACT_FORCE[task_name], rtol=0
        )
    assert maps.action == mirrored.jmap


# ------------------------------------------------------------------ the rules, by hand
def _ctx(scan_rays=None):
    from unilab_envs.terms.mirror import MirrorContext

    joints = ((1, 0), (-1.0, 1.0))
    return MirrorContext(joints=joints, actions=joints, feet=(1, 0), scan_rays=scan_rays)


def _map(func, size: int, scan_rays=None, **kw):
    from unilab_envs.terms import ObservationTerm
    from unilab_envs.terms.mirror import term_mirror

    term = ObservationTerm(func=func, **kw)
    return term_mirror("observations.policy.x", term, size, _ctx(scan_rays), None)


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

    with pytest.raises(ValueError, match=r"observations.policy.x: the term 'base_pos_z' declares"):
        _map(mdp.base_pos_z, 1)


# ------------------------------------------------------------------ the height scan's rays
def test_scan_rule_pairs_each_grid_ray_with_its_mirror_ray() -> None:
    """MJLab's 17 x 11 grid (x fastest): ray (ix, iy) pairs with ray (ix, 10 - iy), heights
    unsigned; the rays on the x axis (iy = 5) stay."""
    from unilab_envs import mdp
    from unilab_envs.terrain import GridPattern

    rays = GridPattern().offsets()
    nx, ny = 17, 11
    index, sign = _map(mdp.height_scan, nx * ny, scan_rays=rays)
    assert index == tuple((ny - 1 - i // nx) * nx + i % nx for i in range(nx * ny))
    assert sign == (1.0,) * (nx * ny)
    np.testing.assert_allclose(rays[list(index)], rays * [1, -1, 1], atol=1e-6)
    assert [i for i in range(nx * ny) if index[i] == i] == list(range(5 * nx, 6 * nx))


def test_ray_permutation_of_rings() -> None:
    """A ring's ray at angle a pairs with the one at -a (centre first, then 0, 90, ... deg)."""
    from unilab_envs.terms.mirror import ray_permutation
    from unilab_envs.terrain import RingPattern

    assert ray_permutation(RingPattern(num_samples=4).offsets(), "ring") == (0, 1, 4, 3, 2)
    six = RingPattern(num_samples=6, include_center=False).offsets()
    assert ray_permutation(six, "ring") == (0, 5, 4, 3, 2, 1)


def test_scan_rule_refuses_a_pattern_not_symmetric_about_x() -> None:
    from unilab_envs import mdp
    from unilab_envs.terrain import GridPattern

    # y from -0.5 in steps of 0.3: -0.5, -0.2, 0.1, 0.4, no ray at y = 0.5
    rays = GridPattern(resolution=0.3).offsets()
    with pytest.raises(
        ValueError,
        match=r"observations.policy.x: ray 0 at \(x, y\) = \(-0.8, -0.5\) m has no ray at its "
        r"mirror point \(-0.8, 0.5\): the scan's pattern is not symmetric about its x axis",
    ):
        _map(mdp.height_scan, len(rays), scan_rays=rays)
    with pytest.raises(ValueError, match="rule 'scan' maps the scan's 24 rays, the term has 25"):
        _map(mdp.height_scan, 25, scan_rays=GridPattern(resolution=0.2).offsets()[:24])
    with pytest.raises(ValueError, match="a scan rule, but the task names no height scan"):
        _map(mdp.height_scan, 3)


@pytest.mark.parametrize("task_name", ["go1-velocity-rough", "g1-velocity-rough"])
def test_rough_tasks_have_mirror_maps(task_name: str) -> None:
    """The rough tasks' maps: the height scan's columns map by `ray_permutation` of the
    task's `terrain_scan` pattern, in both groups (the map itself is proven on the physics
    above, for Go1)."""
    import unilab_envs
    from unilab_envs.terms.mirror import ray_permutation
    from unilab_envs.testing import mjlab_robot

    mjlab_robot(task_name.split("-")[0])
    env = unilab_envs.make(task_name, num_envs=1)
    maps = env.task.mirror_maps()
    perm = np.array(ray_permutation(env.task.config.terrain_scan.offsets(), "scan"))
    for group in ("policy", "critic"):
        cols = _columns(env.task, group, "height_scan")
        index, sign = (np.array(a) for a in maps.obs[group])
        assert len(cols) == env.task.config.num_scan == 187
        np.testing.assert_array_equal(index[cols], cols[perm])
        assert (sign[cols] == 1.0).all()


def test_a_task_without_maps_is_named() -> None:
    import unilab_envs

    env = unilab_envs.make("cartpole-balance", num_envs=1)
    with pytest.raises(ValueError, match="task 'cartpole-balance' has no mirror maps"):
        env.task.mirror_maps()
