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
        self.env = unilab_envs.make(task_name, num_envs=n, seed=0, obs_noise=False)
        self.env.reset()
        self.task, self.ctx, mjm = self.env.task, self.env.ctx, self.env.mjm
        names = fx.meta["model_names"]

        def our_id(obj, name):
            return -1 if name is None else mujoco.mj_name2id(mjm, obj, name.removeprefix("robot/"))

        bodies = np.array([our_id(mujoco.mjtObj.mjOBJ_BODY, b) for b in names["body"]])
        self.body_src = np.flatnonzero(bodies >= 0)  # MJLab's terrain body has no counterpart
        self.body_dst = bodies[self.body_src]
        geoms = [our_id(mujoco.mjtObj.mjOBJ_GEOM, g) for g in names["geom"]]
        # The floor geom is MJLab's "terrain" (on a body of its own), ours on the world body;
        # unnamed (visual) geoms sit at the same positions.
        assert len(geoms) == mjm.ngeom
        assert all(g in (i, -1) for i, g in enumerate(geoms[1:], start=1)), geoms
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
        self.task.load_state(
            self.ctx,
            {
                "geom_friction": fx["model/geom_friction"],
                "body_ipos": self.bodies(fx["model/body_ipos"]),
                "encoder_bias": fx["robot/encoder_bias"],
            },
        )

    # MJLab layout -> ours
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

    # the task's values for one recorded step
    def rewards(self, t: int) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        import mujoco_warp as mjw
        import warp as wp

        fx, task, ctx = self.fx, self.task, self.ctx
        task.load_state(
            ctx,
            {
                "qpos": fx["substep_last/qpos"][t],
                "qvel": fx["substep_last/qvel"][t],
                "ctrl": self.ctrl(fx["substep_last/ctrl"][t]),
            },
        )
        mjw.forward(ctx.model, ctx.data)  # the derived fields MJLab's rewards read
        sensor = "mid/sensor/feet_ground_contact/"
        state = {}
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
                "foot_height": fx["mid/sensor/foot_height_scan/heights"][t],
                "peak_height": fx["mid/reward_state/foot_swing_height/peak_heights"][t],
            },
        )
        n = self.n
        reward = wp.zeros(n, dtype=float)
        terminated = wp.zeros(n, dtype=wp.bool)
        log = wp.zeros((len(task.spec.log_terms), n), dtype=float)
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
        task.load_state(ctx, state)
        mjw.forward(ctx.model, ctx.data)
        obs = {g: wp.zeros((self.n, d), dtype=float) for g, d in task.spec.observation_dims.items()}
        task.observe(ctx, obs)
        return {g: a.numpy() for g, a in obs.items()}

    def obs_columns(self, group: str) -> dict[str, slice]:
        """MJLab's term -> our columns of `group` ("actor" = our "policy")."""
        out, i = {}, 0
        for term in self.fx.meta["observations"][group]["terms"]:
            d = int(np.prod(term["dim"]))
            out[term["name"]] = slice(i, i + d)
            i += d
        assert i == self.task.spec.observation_dims["policy" if group == "actor" else group]
        return out


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


@pytest.fixture(scope="module")
def go1():
    return Replay("go1-velocity-flat", "go1_flat", "go1")


@pytest.fixture(scope="module")
def g1():
    return Replay("g1-velocity-flat", "g1_flat", "g1")


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
        for name, value in terms.items():
            # our log = weight * value * step_dt; MJLab's rew_weighted = weight * value
            err.check(name, t, value / STEP_DT, fx["rew_weighted/" + name][t], ATOL["reward"])
        err.check("reward (sum)", t, reward, fx["reward"][t], ATOL["reward"] * STEP_DT)
        err.check("fell_over", t, terminated, fx["term/fell_over"][t], 0)
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
            for name, cols in replay.obs_columns(group).items():
                mjlab = fx[f"obs_term/{group}/{name}"][t].reshape(replay.n, -1)
                atol = ATOL["obs_contact_forces" if name == "foot_contact_forces" else "obs"]
                if name in ("foot_contact", "foot_contact_forces"):
                    # MJLab caches contact sensor data from the rewards' read until a sensor
                    # reset: in a step without any reset these terms repeat the reward-time
                    # (one substep stale) values. UniLab reads the data after forward, which
                    # is what MJLab observes in every step with a reset (at 4096 envs, every
                    # step). Compared here with MJLab's formula on MJLab's post-forward data.
                    found, force = replay.contact_obs(fx["post/data/sensordata"][t])
                    fresh = found if name == "foot_contact" else force
                    if t > 0 and done[t - 1].any():
                        err.check(f"{group}/{name} (recorded)", t, ours[:, cols], mjlab, atol)
                    mjlab = fresh
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
    import mujoco_warp as mjw

    fx, task, ctx = g1.fx, g1.task, g1.ctx
    err = Errors("g1-velocity-flat self-collision sensor")
    _, adr, _ = g1.sensors["self_collision_pelvis_force"]
    for t in range(fx.num_steps):
        task.load_state(
            ctx,
            {
                "qpos": fx["substep_last/qpos"][t],
                "qvel": fx["substep_last/qvel"][t],
                "ctrl": g1.ctrl(fx["substep_last/ctrl"][t]),
            },
        )
        mjw.forward(ctx.model, ctx.data)
        ours = np.linalg.norm(ctx.data.sensordata.numpy()[:, adr : adr + 3], axis=-1)
        mjlab = np.linalg.norm(fx["mid/sensor/self_collision/force_history"][t][:, 0, 0], axis=-1)
        err.check("|force| newest substep", t, ours, mjlab, 1e-2 * max(1.0, mjlab.max()))
    err.assert_ok()
