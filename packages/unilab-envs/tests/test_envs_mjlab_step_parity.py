"""Step parity with MJLab 1.6.0: from each recorded state and action, UniLab's own `env.step`
reproduces MJLab's recorded next state and observations.

The term-by-term replay (test_envs_mjlab_parity.py) evaluates the task's terms on recorded
states; this runs the whole control step (action to control, the physics substeps and
decimation, contact timers, rewards, terminations, command and push timers, observations) from
MJLab's state after recorded step t-1 (`post/*`, tools/parity/README.md) with MJLab's action of
step t, and compares what it leaves with MJLab's state after step t.

Compared per world, in the steps where no random event touches that world: no reset (the
reset draws differ), no interval push (MJLab's push timer is not recorded: ours is set past
the step) and no command resample. Every world's termination is compared; the rewards are the
replay's (term by term, on the recorded states).

Tolerances: the replay's (`ATOL`) for what the physics does not move; for positions and
velocities, a fraction of what MJLab's step changed in them (`PHYSICS_RTOL`, on heightfield
tiles `HF_FORCE_RTOL`; the reasons are beside them). Contact observations as the replay
compares them (MJLab's contact cache), left out on heightfield tiles with what follows the
contact flags (`CONTACT_FLAG_TERMS`).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_envs_mjlab_parity import ATOL, HF_FORCE_RTOL, Errors, Replay

# UniLab's command flags (mdp/commands.py) from MJLab's command state.
FLAG_HEADING, FLAG_STANDING, FLAG_FORWARD = 1, 2, 4


def command_flags(fx, t: int) -> np.ndarray:
    c = "post/command/"
    return (
        FLAG_HEADING * fx[c + "is_heading_env"][t]
        + FLAG_STANDING * fx[c + "is_standing_env"][t]
        + FLAG_FORWARD * fx[c + "is_forward_env"][t]
    ).astype(np.int32)


def step_from_recording(replay: Replay, t: int):
    """Load MJLab's state after recorded step t - 1 and run UniLab's `env.step` with MJLab's
    action of step t; return the step's output."""
    fx, task = replay.fx, replay.task
    # the MJWarp state, the action, command and air times, then forward and observe: the
    # observation-time state, and (rough) the terrain scan the next rewards read
    replay.observations(t)
    sensor = "post/sensor/feet_ground_contact/"
    state = {
        "last_action": fx["post/action/action"][t],
        "heading_target": fx["post/command/heading_target"][t],
        "command_time_left": fx["post/command/time_left"][t],
        "push_time_left": np.full(replay.n, 1e6, np.float32),
        "command_flags": command_flags(fx, t),
        "contact_time": fx[sensor + "current_contact_time"][t],
        "foot_height": fx["post/sensor/foot_height_scan/heights"][t],
        "peak_height": fx["post/reward_state/foot_swing_height/peak_heights"][t],
    }
    if task.config.self_collision_subtree is not None:
        history = fx["post/sensor/self_collision/force_history"][t]
        state["self_collision_force"] = np.linalg.norm(history[:, 0], axis=-1)
    if replay.rough:
        state["touch_force"] = replay.touch_force("post", t)
    task.load_state(replay.ctx, state)
    return replay.env.step(torch.as_tensor(fx["action"][t]))


# Observation terms read from the positions (qpos) and from the velocities (qvel).
POSITION_TERMS = ("projected_gravity", "joint_pos", "height_scan", "foot_height")
VELOCITY_TERMS = ("base_lin_vel", "base_ang_vel", "joint_vel")
# The physics of the step, on flat ground and box tiles: its four substeps' constraint solves
# stop at 10 iterations (often at that limit) in both, and MuJoCo Warp 4.0 and the
# recording's 3.11 differ there (contact forces to ~0.01 N: ATOL["obs_contact_forces"]), so
# the change the step makes to qpos and qvel agrees only to a fraction of itself (measured
# 2e-5: joint velocities 1.3e-4 off after a change of 10 rad/s) on top of ATOL["obs"].
# On heightfield tiles the contact sets themselves differ (HF_FORCE_RTOL): the step's change
# agrees to HF_FORCE_RTOL of itself (measured 0.32 on Go1's random_rough tile, 0.64 on G1's).
PHYSICS_RTOL = 1e-4


# Left out on heightfield tiles: what follows the contact flags (timers, swing peaks, contact
# observations), which differ there with the contact sets (HF_FORCE_RTOL).
CONTACT_FLAG_TERMS = ("air_time", "contact_time", "peak_height", "foot_air_time", "foot_contact")


class StepErrors(Errors):
    """`Errors` for one world at a time, with a tolerance per world."""

    def check_world(self, term: str, t: int, w: int, ours, mjlab, atol: float) -> None:
        ours, mjlab = np.asarray(ours, np.float64), np.asarray(mjlab, np.float64)
        e = float(np.abs(ours - mjlab).max(initial=0.0))
        self.max[term] = max(self.max.get(term, 0.0), e)
        if not e <= atol:  # NaN fails too
            self.failures.append(
                f"{term} at recorded step {t}, world {w}: max |UniLab - MJLab| = {e:.3g} > "
                f"{atol:.3g} (UniLab {ours.tolist()}, MJLab {mjlab.tolist()})"
            )


def check_step(replay: Replay) -> None:
    fx, task, ctx = replay.fx, replay.task, replay.ctx
    err = StepErrors(f"{task.spec.name} env.step from MJLab's states")
    done = fx["terminated"] | fx["truncated"]
    quiet = ~(done | fx["pushed"] | fx["resampled"])
    hf = replay.on_heightfield
    assert quiet.sum() >= fx.num_steps * replay.n // 2, "too few quiet steps to compare"
    rtol = np.where(hf, HF_FORCE_RTOL, PHYSICS_RTOL)
    sensor = "post/sensor/feet_ground_contact/"
    qpos, qvel = fx["post/data/qpos"], fx["post/data/qvel"]
    for t in range(fx.num_steps):
        out = step_from_recording(replay, t)
        err.check("terminated", t, out["terminated"].numpy(), fx["terminated"][t], 0)
        # per world: ATOL["obs"] + rtol x what MJLab's step changed in the positions, velocities
        tol_p = ATOL["obs"] + rtol * np.abs(qpos[t + 1] - qpos[t]).max(axis=1)
        tol_v = ATOL["obs"] + rtol * np.abs(qvel[t + 1] - qvel[t]).max(axis=1)
        found, force = replay.contact_obs(fx["post/data/sensordata"][t + 1])
        pairs = {
            "episode_length": (ctx.episode_length.numpy(), fx["post/episode_length"][t + 1]),
            "command": (task.command.numpy(), fx["post/command/vel_command_b"][t + 1]),
            "command_time_left": (
                task.command_time_left.numpy(),
                fx["post/command/time_left"][t + 1],
            ),
            "heading_target": (
                task.heading_target.numpy(),
                fx["post/command/heading_target"][t + 1],
            ),
            "air_time": (task.air_time.numpy(), fx[sensor + "current_air_time"][t + 1]),
            "contact_time": (task.contact_time.numpy(), fx[sensor + "current_contact_time"][t + 1]),
            "peak_height": (
                task.peak_height.numpy(),
                fx["post/reward_state/foot_swing_height/peak_heights"][t + 1],
            ),
            "qpos": (ctx.data.qpos.numpy(), qpos[t + 1]),
            "qvel": (ctx.data.qvel.numpy(), qvel[t + 1]),
        }
        for group, key in (("actor", "policy"), ("critic", "critic")):
            ours = out["obs", key].numpy()
            for name, (cols, scale) in replay.obs_columns(group).items():
                mjlab = fx[f"obs_term/{group}/{name}"][t + 1].reshape(replay.n, -1)
                if name in ("foot_contact", "foot_contact_forces"):
                    # MJLab's contact cache (see check_observations): its formula on its
                    # post-forward data
                    mjlab = found if name == "foot_contact" else force
                pairs[f"obs {group}/{name}"] = (ours[:, cols], mjlab * np.float32(scale))
        for w in np.flatnonzero(quiet[t]):
            for label, (ours, mjlab) in pairs.items():
                name = label.rsplit("/", 1)[-1]
                atol = ATOL["obs"]
                if name in ("qpos", *POSITION_TERMS) or (name == "command" and hf[w]):
                    atol = tol_p[w]  # the heading command's yaw rate follows the base heading
                elif name in ("qvel", *VELOCITY_TERMS):
                    atol = tol_v[w]
                elif name == "foot_contact_forces":
                    atol = ATOL["obs_contact_forces"]
                if hf[w] and name in (*CONTACT_FLAG_TERMS, "foot_contact_forces"):
                    continue
                err.check_world(label, t, w, ours[w], mjlab[w], atol)
    err.assert_ok()


@pytest.mark.parametrize(
    ("task", "fixture", "robot"),
    [
        ("go1-velocity-flat", "go1_flat", "go1"),
        ("g1-velocity-flat", "g1_flat", "g1"),
        ("go1-velocity-rough", "go1_rough", "go1"),
        ("g1-velocity-rough", "g1_rough", "g1"),
    ],
)
def test_step_from_mjlab_states_matches_mjlab(task, fixture, robot):
    check_step(Replay(task, fixture, robot))
