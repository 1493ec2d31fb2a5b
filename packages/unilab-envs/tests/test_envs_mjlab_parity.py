"""Term-by-term parity of `go1-velocity-flat` and `g1-velocity-flat` with MJLab 1.6.0's own
recordings.

The fixtures (tests/data/mjlab/<name>.{npz,json}, tools/parity/README.md) hold, per step of
MJLab's `Mjlab-Velocity-Flat-Unitree-{Go1,G1}` under a random policy, the state each MJLab term
reads and every term's value. For each recorded step the UniLab task gets that state through
`MjlabVelocityTask.load_state` and computes its rewards, termination and observations, which
must equal MJLab's to float tolerance:

- reward time (`mid`): MJWarp `forward` of the state before the last physics substep gives
  the derived fields MJLab's rewards saw (one substep stale), then qpos/qvel after the
  substep, the action history, command, contact timers, foot heights, swing peaks and (G1)
  the self-collision force history;
- observation time (`post`): the state after the step's resets and `forward`, the action,
  command, air times and encoder bias.

Model layouts differ (MJLab's scene has a `terrain` body and `robot/` prefixes, its
actuators are grouped by motor type); arrays are mapped by name.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from unilab_envs.testing import mjlab_robot

ROOT = Path(__file__).resolve().parents[3]
DATA = Path(__file__).resolve().parent / "data" / "mjlab"
STEP_DT = 0.02
# float32 arithmetic in a different order (torch vs warp). Contact forces come out of the
# constraint solver (10 Newton iterations, often at that limit), here MuJoCo Warp 4.0 against
# the recording's 3.11: they agree to ~0.01 N (log1p(|f|) to 1e-2), the state-derived terms
# to float rounding.
ATOL = {"reward": 2e-5, "obs": 2e-5, "obs_contact_forces": 1e-2}
# A foot on a heightfield touches several of its prisms; MuJoCo Warp 4.0 and the
# recording's 3.11 make different contact sets there (MuJoCo C 4.0 yet another), so the
# net force per foot agrees only to this fraction of max(|f|, 1 N): measured 0.17 (Go1's
# sphere feet), 0.65 (G1's, 7 spheres per foot), 0.04 and 0.10 on soft_landing. On box
# tiles the forces agree as on flat ground (log1p|f| to 1e-4).
HF_FORCE_RTOL = 1.0
# Reward terms: float32 sums in another order, relative to the value (G1's
# angular_momentum, ||L||^2 ~ 180, is 6e-6 off).
RTOL_REWARD = 1e-5


def _load_fixture(name: str):
    sys.path.insert(0, str(ROOT / "tools" / "parity"))
    try:
        from fixture import load
    finally:
        sys.path.pop(0)
    return load(DATA / name)


class Replay:
    """One env of the task plus the index maps from MJLab's model to the task's."""

    def __init__(self, task_name: str, fixture: str, robot: str) -> None:
        import mujoco

        import unilab_envs

        mjlab_robot(robot)  # skip (or fail under UNILAB_REQUIRE_MJLAB=1) without the MJCF
        self.fx = fx = _load_fixture(fixture)
        self.n = n = fx.num_envs
        self.rough = "terrain/geom_type" in fx
        overrides = rough_overrides(fx) if self.rough else {}
        self.env = unilab_envs.make(task_name, num_envs=n, seed=0, obs_noise=False, **overrides)
        self.env.reset()
        self.task, self.ctx, mjm = self.env.task, self.env.ctx, self.env.mjm
        names = fx.meta["model_names"]

        def our_id(obj, name):
            return -1 if name is None else mujoco.mj_name2id(mjm, obj, name.removeprefix("robot/"))

        bodies = np.array([our_id(mujoco.mjtObj.mjOBJ_BODY, b) for b in names["body"]])
        self.body_src = np.flatnonzero(bodies >= 0)  # flat: MJLab's terrain body has none
        self.body_dst = bodies[self.body_src]
        # Geoms: MJLab's ground (its "terrain" body's geoms: the plane, or the terrain grid
        # in build order) first, then the robot's; ours the robot's, then the ground (the
        # floor on the world body, or the "terrain" body). Each part keeps its order.
        ground = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_BODY, "terrain")
        ours_ground = np.flatnonzero(np.isin(mjm.geom_bodyid, [0, ground]))
        theirs_ground = np.array(
            [i for i, g in enumerate(names["geom"]) if g is not None and g.startswith("terrain")]
        )
        assert len(names["geom"]) == mjm.ngeom and len(ours_ground) == len(theirs_ground)
        self.geom_dst = np.concatenate(
            [ours_ground, np.setdiff1d(np.arange(mjm.ngeom), ours_ground)]
        )
        self.geom_src = np.concatenate(
            [theirs_ground, np.setdiff1d(np.arange(mjm.ngeom), theirs_ground)]
        )
        for i, j in zip(self.geom_src, self.geom_dst, strict=True):
            name = names["geom"][i]
            if name is not None and not name.startswith("terrain"):
                assert our_id(mujoco.mjtObj.mjOBJ_GEOM, name) == j, (name, j)
        acts = [
            mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_ACTUATOR, a.removeprefix("robot/") + "_pd")
            for a in fx.meta["robot"]["actuator_names"]
        ]
        assert min(acts) >= 0 and len(acts) == mjm.nu
        self.acts = np.asarray(acts)
        self.sensors = {}  # MJLab sensor name -> (MJLab adr, our adr, dim)
        for name, adr, dim in zip(
            names["sensor"], names["sensor_adr"], names["sensor_dim"], strict=True
        ):
            i = our_id(mujoco.mjtObj.mjOBJ_SENSOR, name)
            if i >= 0:
                self.sensors[name] = (adr, int(mjm.sensor_adr[i]), dim)
        assert fx.meta["action"]["joint_names"] == list(self.task.robot.joint_names)
        self.touch = self._touch_sensors()
        self.on_heightfield = np.zeros(n, bool)  # worlds whose tile is a heightfield
        if self.rough:
            kinds = list(fx.meta["terrain"]["sub_terrain_types"].values())
            self.on_heightfield = np.array([kinds[c].startswith("Hf") for c in fx["terrain/types"]])
        self.task.load_state(
            self.ctx,
            {
                "geom_friction": self.geoms(fx["model/geom_friction"]),
                "body_ipos": self.bodies(fx["model/body_ipos"]),
                "encoder_bias": fx["robot/encoder_bias"],
            },
        )

    def _touch_sensors(self) -> list[tuple[str, int]]:
        """(MJLab sensor, primary index) of each of our ground-touch geoms, in our order."""
        where = {}
        for sensor, entry in self.fx.meta["sensors"].items():
            if sensor.endswith("_ground_touch"):
                for i, geom in enumerate(entry["primary_names"]):
                    where[geom] = (sensor, i)
        return [where[g] for g in self.task._touch_geoms()]

    def touch_force(self, where: str, t: int) -> np.ndarray:
        """[N, G, H] |force| histories of the ground-touch sensors, in our geom order."""
        if not self.touch:
            return np.zeros((self.n, 0, 0), np.float32)
        parts = []
        for sensor, i in self.touch:
            history = self.fx[f"{where}/sensor/{sensor}/force_history"][t]  # (N, P, H, 3)
            parts.append(np.linalg.norm(history[:, i], axis=-1))
        return np.stack(parts, axis=1)

    # MJLab layout -> ours
    def geoms(self, x: np.ndarray) -> np.ndarray:
        out = np.zeros_like(x)
        out[:, self.geom_dst] = x[:, self.geom_src]
        return out

    def bodies(self, x: np.ndarray) -> np.ndarray:
        out = np.zeros((x.shape[0], self.env.mjm.nbody, *x.shape[2:]), x.dtype)
        out[:, self.body_dst] = x[:, self.body_src]
        return out

    def ctrl(self, x: np.ndarray) -> np.ndarray:
        out = np.zeros((x.shape[0], self.env.mjm.nu), x.dtype)
        out[:, self.acts] = x
        return out

    def contact_obs(self, sensordata: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """MJLab's foot_contact and foot_contact_forces from MJLab-layout sensordata."""
        found, force = [], []
        for g in self.task.config.foot_contacts:
            a, _, _ = self.sensors[f"feet_ground_contact_{g}_found"]
            found.append(sensordata[:, a] > 0)
            a, _, _ = self.sensors[f"feet_ground_contact_{g}_force"]
            force.append(sensordata[:, a : a + 3])
        f = np.concatenate(force, axis=1)
        return np.stack(found, 1).astype(np.float32), np.sign(f) * np.log1p(np.abs(f))

    def forward_before_last_substep(self, t: int) -> None:
        """Load the state before step t's last physics substep and run `forward`: the
        derived fields (and contact sensors) MJLab's rewards read, one substep stale."""
        import mujoco_warp as mjw

        fx = self.fx
        self.task.load_state(
            self.ctx,
            {
                "qpos": fx["substep_last/qpos"][t],
                "qvel": fx["substep_last/qvel"][t],
                "ctrl": self.ctrl(fx["substep_last/ctrl"][t]),
            },
        )
        mjw.forward(self.ctx.model, self.ctx.data)

    # the task's values for one recorded step
    def rewards(self, t: int) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        import warp as wp

        fx, task, ctx = self.fx, self.task, self.ctx
        state = {}
        if self.rough:
            # The terrain scan (upright's normal) and foot heights the rewards read are those
            # sensed for the previous observation, as MJLab's sensors are: observe the state
            # this step started from first.
            self.observations(t)
            state["touch_force"] = self.touch_force("mid", t)
            state["terrain_level"] = fx["mid/terrain/levels"][t]
            state["terrain_origin"] = fx["mid/terrain/env_origins"][t]
        else:
            state["foot_height"] = fx["mid/sensor/foot_height_scan/heights"][t]
        self.forward_before_last_substep(t)  # the derived fields MJLab's rewards read
        sensor = "mid/sensor/feet_ground_contact/"
        if task.config.self_collision_subtree is not None:
            history = fx["mid/sensor/self_collision/force_history"][t]  # (N, 1, H, 3)
            state["self_collision_force"] = np.linalg.norm(history[:, 0], axis=-1)
        task.load_state(
            ctx,
            {
                **state,
                "qpos": fx["mid/data/qpos"][t],
                "qvel": fx["mid/data/qvel"][t],
                "action": fx["mid/action/action"][t],
                "last_action": fx["mid/action/prev_action"][t],
                "episode_length": fx["mid/episode_length"][t],
                "command": fx["mid/command/vel_command_b"][t],
                "contact_time": fx[sensor + "current_contact_time"][t],
                "air_time": fx[sensor + "current_air_time"][t],
                "peak_height": fx["mid/reward_state/foot_swing_height/peak_heights"][t],
            },
        )
        n = self.n
        reward = wp.zeros(n, dtype=float)
        terminated = wp.zeros(n, dtype=wp.bool)
        log = wp.zeros((len(task.spec.log_terms), n), dtype=float)
        ctx.time_out.zero_()
        task.evaluate(ctx, reward, terminated, log)
        terms = dict(zip(task.spec.log_terms, log.numpy(), strict=True))
        return terms, reward.numpy(), terminated.numpy()

    def observations(self, t: int) -> dict[str, np.ndarray]:
        import mujoco_warp as mjw
        import warp as wp

        fx, task, ctx = self.fx, self.task, self.ctx
        state = {k: fx["post/data/" + k][t] for k in ("qpos", "qvel", "qacc_warmstart")}
        state["qfrc_applied"] = fx["post/data/qfrc_applied"][t]
        state["ctrl"] = self.ctrl(fx["post/data/ctrl"][t])
        state["xfrc_applied"] = self.bodies(fx["post/data/xfrc_applied"][t])
        state["action"] = fx["post/action/action"][t]
        state["episode_length"] = fx["post/episode_length"][t]
        state["command"] = fx["post/command/vel_command_b"][t]
        state["air_time"] = fx["post/sensor/feet_ground_contact/current_air_time"][t]
        if self.rough:
            state["terrain_level"] = fx["post/terrain/levels"][t]
            state["terrain_origin"] = fx["post/terrain/env_origins"][t]
        task.load_state(ctx, state)
        mjw.forward(ctx.model, ctx.data)
        obs = {g: wp.zeros((self.n, d), dtype=float) for g, d in task.spec.observation_dims.items()}
        task.observe(ctx, obs)
        return {g: a.numpy() for g, a in obs.items()}

    def obs_columns(self, group: str) -> dict[str, tuple[slice, float]]:
        """MJLab's term -> (our columns of `group` ("actor" = our "policy"), the term's
        scale: MJLab's recorded term outputs are before it, our observations after)."""
        out, i = {}, 0
        for term in self.fx.meta["observations"][group]["terms"]:
            d = int(np.prod(term["dim"]))
            assert term["clip"] is None
            out[term["name"]] = (slice(i, i + d), 1.0 if term["scale"] is None else term["scale"])
            i += d
        assert i == self.task.spec.observation_dims["policy" if group == "actor" else group]
        return out


def forces(log_forces: np.ndarray) -> np.ndarray:
    """|f| per foot [N, F] from MJLab's foot_contact_forces (sign(f) log1p|f|, [N, 3F])."""
    f = np.sign(log_forces) * np.expm1(np.abs(log_forces))
    return np.linalg.norm(f.reshape(f.shape[0], -1, 3), axis=-1)


def rough_overrides(fx) -> dict:
    """Task overrides that build a rough task on the terrain MJLab compiled for the recording
    (`TerrainGeometry`: its geoms, heightfields and grid of spawn origins) with the recorded
    out_of_terrain_bounds margin."""
    from unilab_envs.terrain import TerrainGeometry, TerrainLayout
    from unilab_envs.terrain.geometry import GEOM_FIELDS

    gen = fx.meta["terrain"]["generator"]
    rows, cols = fx["terrain/origins"].shape[:2]
    assert gen["curriculum"] and cols == len(gen["sub_terrains"])
    proportions = np.array([s["proportion"] for s in gen["sub_terrains"].values()])
    lo, hi = gen["difficulty_range"]
    layout = TerrainLayout(
        origins=fx["terrain/origins"].astype(np.float64),
        tile_types=np.tile(np.arange(cols), (rows, 1)),
        difficulty=np.repeat(
            (lo + (hi - lo) * np.arange(rows) / max(rows - 1, 1))[:, None], cols, 1
        ),
        type_names=tuple(gen["sub_terrains"]),
        spawn_weights=proportions / proportions.sum(),
        extent=(rows * gen["size"][0] / 2, cols * gen["size"][1] / 2),
    )
    (group,) = np.unique(fx["terrain/geom_group"])
    terrain = TerrainGeometry(
        geoms={k: fx["terrain/geom_" + k] for k in GEOM_FIELDS},
        hfields={k: fx["terrain/hfield_" + k] for k in ("size", "nrow", "ncol", "data")},
        layout=layout,
        border_width=gen["border_width"],
        geom_group=int(group),
    )
    (oob,) = [t for t in fx.termination_terms() if t["name"] == "out_of_terrain_bounds"]
    return {
        "terrain": terrain,
        "out_of_bounds_margin": oob["params"]["margin"],
        "max_init_terrain_level": fx.meta["terrain"]["max_init_terrain_level"],
        "nconmax": fx.meta["sim"]["nconmax"],  # the recording's (G1: raised for this terrain)
    }


def _replay_fixture(task: str, fixture: str, robot: str):
    """A module-scoped pytest fixture: the `Replay` of `fixture` on `task`."""
    return pytest.fixture(scope="module", name=fixture.removesuffix("_flat"))(
        lambda: Replay(task, fixture, robot)
    )


class Errors:
    """Max abs error per term over the steps; the first step beyond tolerance is reported."""

    def __init__(self, label: str) -> None:
        self.label, self.max, self.failures = label, {}, []

    def check(self, term: str, t: int, ours, mjlab, atol: float) -> None:
        ours, mjlab = np.asarray(ours, np.float64), np.asarray(mjlab, np.float64)
        err = np.abs(ours - mjlab)
        e = float(err.max()) if err.size else 0.0
        self.max[term] = max(self.max.get(term, 0.0), e)
        if not e <= atol:  # NaN fails too
            w = int(np.unravel_index(np.nanargmax(err), err.shape)[0]) if err.size else 0
            self.failures.append(
                f"{term} at recorded step {t}: max |UniLab - MJLab| = {e:.3g} > {atol:g} "
                f"(world {w}: UniLab {ours[w].tolist()}, MJLab {mjlab[w].tolist()})"
            )

    def assert_ok(self) -> None:
        print(f"\n{self.label}: max abs error per term")
        for term, e in self.max.items():
            print(f"  {term:40s} {e:.3g}")
        assert not self.failures, "\n".join(self.failures[:10])


go1 = _replay_fixture("go1-velocity-flat", "go1_flat", "go1")


g1 = _replay_fixture("g1-velocity-flat", "g1_flat", "g1")


def check_model(replay: Replay) -> None:
    """The per-world model after the startup events: the COM, the friction, and what
    set_const derives from them (inverse weights, subtree masses, actuator_acc0)."""
    fx, err = replay.fx, Errors(f"{replay.task.spec.name} model after startup")
    model = replay.ctx.model
    for name in replay.task.spec.model_batch_fields:
        ours = getattr(model, name).numpy()
        mjlab = fx["model/" + name]
        if name.startswith("body_"):
            mjlab = replay.bodies(mjlab)
        elif name.startswith("geom_"):
            mjlab = replay.geoms(mjlab)
        elif name.startswith("actuator_"):
            mjlab = replay.ctrl(mjlab)
        err.check(name, 0, ours.reshape(mjlab.shape), mjlab, 1e-5 * max(1.0, np.abs(mjlab).max()))
    err.assert_ok()


def check_rewards(replay: Replay) -> None:
    fx, err = replay.fx, Errors(f"{replay.task.spec.name} rewards and terminations")
    recorded = {t["name"] for t in fx.reward_terms() if t["weight"] != 0.0}
    assert recorded == set(replay.task.spec.log_terms), "the task's terms are not MJLab's"
    max_steps = replay.task.spec.max_episode_steps
    for t in range(fx.num_steps):
        terms, reward, terminated = replay.rewards(t)
        hf = replay.on_heightfield
        mjlab_reward = fx["reward"][t]
        for name, value in terms.items():
            # our log = weight * value * step_dt; MJLab's rew_weighted = weight * value
            mjlab = fx["rew_weighted/" + name][t]
            if name == "soft_landing" and hf.any():
                # Landing forces on heightfields: HF_FORCE_RTOL (the foot contact sets
                # differ there); the reward sum is compared without this term for them.
                rel = np.abs(value / STEP_DT - mjlab) / np.maximum(np.abs(mjlab), 1e-5)
                err.check(
                    name + " on heightfields (relative)", t, rel[hf], 0 * rel[hf], HF_FORCE_RTOL
                )
                reward = np.where(hf, reward - value, reward)
                mjlab_reward = np.where(
                    hf, mjlab_reward - mjlab * np.float32(STEP_DT), mjlab_reward
                )
                value, mjlab = value[~hf], mjlab[~hf]
            tol = ATOL["reward"] + RTOL_REWARD * float(np.abs(mjlab).max(initial=0.0))
            err.check(name, t, value / STEP_DT, mjlab, tol)
        largest = max(float(np.abs(fx["rew_weighted/" + k][t]).max()) for k in terms)
        tol = (ATOL["reward"] + RTOL_REWARD * largest) * STEP_DT
        err.check("reward (sum)", t, reward, mjlab_reward, tol)
        # fell_over (and, rough Go1, illegal_contact: fell_over is off there)
        err.check("terminated", t, terminated, fx["terminated"][t], 0)
        if replay.rough:
            oob = replay.ctx.time_out.numpy()
            err.check("out_of_terrain_bounds", t, oob, fx["term/out_of_terrain_bounds"][t], 0)
        # time_out is the env's truncation at max_episode_steps, on the same episode length
        err.check(
            "time_out", t, fx["mid/episode_length"][t] >= max_steps, fx["term/time_out"][t], 0
        )
        # foot_swing_height's state after the reward (it is not touched again in the step)
        peak = fx["post/reward_state/foot_swing_height/peak_heights"][t + 1]
        err.check("foot_swing_height peaks", t, replay.task.peak_height.numpy(), peak, 1e-6)
    err.assert_ok()


def check_observations(replay: Replay) -> None:
    fx, err = replay.fx, Errors(f"{replay.task.spec.name} observations")
    done = fx["terminated"] | fx["truncated"]
    for t in range(fx.num_steps + 1):
        obs = replay.observations(t)
        for group, ours in (("actor", obs["policy"]), ("critic", obs["critic"])):
            for name, (cols, scale) in replay.obs_columns(group).items():
                mjlab = fx[f"obs_term/{group}/{name}"][t].reshape(replay.n, -1) * np.float32(scale)
                atol = ATOL["obs_contact_forces" if name == "foot_contact_forces" else "obs"]
                if name in ("foot_contact", "foot_contact_forces"):
                    # MJLab caches contact sensor data from the rewards' read until a sensor
                    # reset: in a step without any reset these terms repeat the reward-time
                    # (one substep stale) values. UniLab reads the data after forward, which
                    # is what MJLab observes in every step with a reset (at 4096 envs, every
                    # step). Compared here with MJLab's formula on MJLab's post-forward data.
                    found, force = replay.contact_obs(fx["post/data/sensordata"][t])
                    fresh = found if name == "foot_contact" else force
                    hf = replay.on_heightfield
                    if name == "foot_contact_forces" and hf.any():
                        # Feet on heightfield tiles: see HF_FORCE_RTOL.
                        f_ours, f_mjlab = forces(ours[hf][:, cols]), forces(fresh[hf])
                        err.check(f"{group}/{name} |f| on heightfields (relative)", t,
                                  np.abs(f_ours - f_mjlab) / np.maximum(f_mjlab, 1.0), np.zeros_like(f_mjlab), HF_FORCE_RTOL)  # fmt: skip
                    keep = ~hf if name == "foot_contact_forces" else np.ones(replay.n, bool)
                    if t > 0 and done[t - 1].any():
                        err.check(
                            f"{group}/{name} (recorded)", t, ours[keep][:, cols], mjlab[keep], atol
                        )
                    ours, mjlab = ours[keep], fresh[keep]
                err.check(f"{group}/{name}", t, ours[:, cols], mjlab, atol)
        heights = fx["post/sensor/foot_height_scan/heights"][t]
        err.check(
            "foot heights kept for the rewards", t, replay.task.foot_height.numpy(), heights, 1e-6
        )
    err.assert_ok()


def test_go1_model_constants_match_mjlab(go1):
    check_model(go1)


def test_go1_rewards_and_terminations_match_mjlab(go1):
    check_rewards(go1)


def test_go1_observations_match_mjlab(go1):
    check_observations(go1)


def test_mjlab_contact_cache_quirk_is_in_the_recording(go1):
    # What the comment in check_observations states, checked on the recording itself: the
    # critic's contact terms equal the reward-time data in steps without a reset.
    fx = go1.fx
    done = fx["terminated"] | fx["truncated"]
    for t in range(fx.num_steps):
        source = "post/data/sensordata" if done[t].any() else "mid/data/sensordata"
        sd = fx[source][t + 1 if done[t].any() else t]
        found, _ = go1.contact_obs(sd)
        np.testing.assert_array_equal(found, fx["obs_term/critic/foot_contact"][t + 1], f"step {t}")


def test_load_state_rejects_unknown_names_and_shapes(go1):
    with pytest.raises(ValueError, match=r"unknown state names.*'qpos_b'"):
        go1.task.load_state(go1.ctx, {"qpos_b": np.zeros((go1.n, 19))})
    with pytest.raises(ValueError, match="'command': shape"):
        go1.task.load_state(go1.ctx, {"command": np.zeros((go1.n, 2))})


def test_g1_model_constants_match_mjlab(g1):
    check_model(g1)


def test_g1_rewards_and_terminations_match_mjlab(g1):
    check_rewards(g1)


def test_g1_observations_match_mjlab(g1):
    check_observations(g1)


def test_g1_self_collision_sensor_matches_mjlab(g1):
    # The rewards read a recorded history (loaded like the contact timers); this checks the
    # sensor that fills it: our self-collision |force| after the last substep's forward
    # against the newest entry of MJLab's history at reward time.
    fx, ctx = g1.fx, g1.ctx
    err = Errors("g1-velocity-flat self-collision sensor")
    _, adr, _ = g1.sensors["self_collision_pelvis_force"]
    for t in range(fx.num_steps):
        g1.forward_before_last_substep(t)
        ours = np.linalg.norm(ctx.data.sensordata.numpy()[:, adr : adr + 3], axis=-1)
        mjlab = np.linalg.norm(fx["mid/sensor/self_collision/force_history"][t][:, 0, 0], axis=-1)
        err.check("|force| newest substep", t, ours, mjlab, 1e-2 * max(1.0, mjlab.max()))
    err.assert_ok()


# --------------------------------------------------------------------------- rough terrain


go1_rough = _replay_fixture("go1-velocity-rough", "go1_rough", "go1")


g1_rough = _replay_fixture("g1-velocity-rough", "g1_rough", "g1")


def check_terrain(replay: Replay) -> None:
    """The task built on the recorded terrain compiles MJLab's terrain exactly: every
    terrain geom's fields and every heightfield value, bit for bit; and it spawns the worlds
    on MJLab's terrain types."""
    import mujoco

    from unilab_envs.terrain.geometry import GEOM_FIELDS

    fx, mjm = replay.fx, replay.env.mjm
    ground = np.flatnonzero(
        mjm.geom_bodyid == mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_BODY, "terrain")
    )
    assert len(ground) == len(fx["terrain/geom_type"]) > 0
    for k in (*GEOM_FIELDS, "group"):
        np.testing.assert_array_equal(getattr(mjm, "geom_" + k)[ground], fx["terrain/geom_" + k], k)
    for k in ("size", "nrow", "ncol", "data"):
        np.testing.assert_array_equal(getattr(mjm, "hfield_" + k), fx["terrain/hfield_" + k], k)
    kinds = set(fx["terrain/geom_type"].tolist())
    assert {int(mujoco.mjtGeom.mjGEOM_BOX), int(mujoco.mjtGeom.mjGEOM_HFIELD)} <= kinds
    np.testing.assert_array_equal(replay.task.levels.types.numpy(), fx["terrain/types"])


def check_terrain_levels(replay: Replay) -> None:
    """terrain_levels_vel at each recorded reset: `TerrainLevels.move` on the reward-time
    state gives the level and origin MJLab moved the world to (a promotion past the top row
    draws a random level in both: only its range is checked)."""
    import warp as wp

    fx, task, ctx = replay.fx, replay.task, replay.ctx
    done = fx["terminated"] | fx["truncated"]
    rows = fx["terrain/origins"].shape[0]
    half_tile = fx.meta["terrain"]["generator"]["size"][0] / 2
    steps = np.flatnonzero(done.any(axis=1))
    assert len(steps) > 0, "the fixture should hold a reset"
    for t in steps:
        replay.rewards(t)  # loads the reward-time state, levels and origins
        mask = wp.array(done[t], dtype=wp.bool, device=ctx.device)
        stepped = wp.ones(1, dtype=wp.int32, device=ctx.device)
        task.levels.move(
            ctx.seed, ctx.rng_counter, mask, stepped, ctx.data.xpos, task._root, task.command
        )
        ours, origin = task.levels.levels.numpy(), task.levels.origin.numpy()
        mjlab, mjlab_origin = (
            fx["post/terrain/levels"][t + 1],
            fx["post/terrain/env_origins"][t + 1],
        )
        root = fx["mid/data/xpos"][t][
            :, fx.meta["model_names"]["body"].index("robot/" + task.robot.base_body)
        ]
        walked = np.linalg.norm(root[:, :2] - fx["mid/terrain/env_origins"][t][:, :2], axis=1)
        for w in np.flatnonzero(done[t]):
            if fx["mid/terrain/levels"][t][w] == rows - 1 and walked[w] > half_tile:
                assert 0 <= ours[w] < rows  # past the top: a random level
                continue
            assert ours[w] == mjlab[w], (t, w, ours[w], mjlab[w])
            np.testing.assert_array_equal(origin[w], mjlab_origin[w])


def check_touch_sensors(replay: Replay) -> None:
    """The ground-touch sensors that fill `touch_force`: our |force| per geom after the last
    substep's forward against the newest entry of MJLab's histories at reward time."""
    import mujoco

    fx, task, ctx, mjm = replay.fx, replay.task, replay.ctx, replay.env.mjm
    err = Errors(f"{task.spec.name} ground-touch sensors")
    adr = [
        int(
            mjm.sensor_adr[
                mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_SENSOR, f"ground_touch_{g}_force")
            ]
        )
        for g in task._touch_geoms()
    ]
    touched = 0
    for t in range(fx.num_steps):
        replay.forward_before_last_substep(t)
        sd = ctx.data.sensordata.numpy()
        ours = np.stack([np.linalg.norm(sd[:, a : a + 3], axis=-1) for a in adr], axis=1)
        mjlab = replay.touch_force("mid", t)[:, :, 0]
        touched += int((mjlab > 0).sum())
        err.check("|force| newest substep", t, ours, mjlab, 1e-2 * max(1.0, mjlab.max()))
    assert touched > 0, "no ground touch in the recording: the check would be empty"
    err.assert_ok()


def test_go1_rough_terrain_is_mjlabs(go1_rough):
    check_terrain(go1_rough)


def test_go1_rough_model_constants_match_mjlab(go1_rough):
    check_model(go1_rough)


def test_go1_rough_rewards_and_terminations_match_mjlab(go1_rough):
    check_rewards(go1_rough)


def test_go1_rough_observations_match_mjlab(go1_rough):
    check_observations(go1_rough)


def test_go1_rough_terrain_levels_match_mjlab(go1_rough):
    check_terrain_levels(go1_rough)


def test_go1_rough_touch_sensors_match_mjlab(go1_rough):
    check_touch_sensors(go1_rough)


def test_g1_rough_terrain_is_mjlabs(g1_rough):
    check_terrain(g1_rough)


def test_g1_rough_model_constants_match_mjlab(g1_rough):
    check_model(g1_rough)


def test_g1_rough_rewards_and_terminations_match_mjlab(g1_rough):
    check_rewards(g1_rough)


def test_g1_rough_observations_match_mjlab(g1_rough):
    check_observations(g1_rough)


def test_g1_rough_terrain_levels_match_mjlab(g1_rough):
    check_terrain_levels(g1_rough)
