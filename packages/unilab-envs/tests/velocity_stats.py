"""Statistics of the random draws of `quadruped-velocity` and `humanoid-velocity`: the reset
state and the commands, over many worlds on warp's CPU device. They guard what the draws are
distributed as, whatever stream or order draws them (`test_envs_velocity_stats.py`).

`record(task)` computes them; `python packages/unilab-envs/tests/velocity_stats.py` writes
them to `tests/data/velocity/stats.json` (recorded from the tasks' own command and reset
kernels). Per task and curriculum level (`LEVELS`: the first and the last level index):
    "reset/root_pos" [3] (m), "reset/yaw" [1] (rad, in (-pi, pi]), "reset/root_lin_vel" [3]
    (world frame, m/s), "reset/root_ang_vel" [3] (the free joint's, body frame, rad/s),
    "reset/joint_pos" [J] (rad), "reset/joint_vel" [J] (rad/s): the state after `env.reset()`;
    "reset/command" [3]: the command drawn at the reset; "step/command" [3]: the command after
    one step with `resample_s` below the step (every world's command times out and is redrawn).
Each is {"mean", "std", "min", "max"} per component, and "num_worlds" the sample size.
"""

from __future__ import annotations

import json
from pathlib import Path

import mujoco
import numpy as np
import torch

import unilab_envs

TASKS = ("quadruped-velocity", "humanoid-velocity")
NUM_ENVS, SEED = 4096, 5
LEVELS = ("first", "last")  # the curriculum's first and last level index
RESAMPLE_S = 0.01  # s; below the 0.02 s control step: every step redraws every command
PATH = Path(__file__).parent / "data" / "velocity" / "stats.json"


def _summary(x: np.ndarray) -> dict[str, list[float]]:
    x = np.asarray(x, np.float64).reshape(len(x), -1)
    return {
        "mean": x.mean(0).tolist(),
        "std": x.std(0).tolist(),
        "min": x.min(0).tolist(),
        "max": x.max(0).tolist(),
    }


def _joint_addresses(env) -> tuple[int, int, np.ndarray, np.ndarray]:
    """qpos / qvel addresses of the base's free joint and of the robot's driven joints."""
    mjm, robot = env.mjm, env.task.robot
    base = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_BODY, robot.base_body)
    free = next(
        j
        for j in range(mjm.njnt)
        if mjm.jnt_bodyid[j] == base and mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE
    )
    jids = [mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_JOINT, n) for n in robot.joint_names]
    return (
        int(mjm.jnt_qposadr[free]),
        int(mjm.jnt_dofadr[free]),
        mjm.jnt_qposadr[jids],
        mjm.jnt_dofadr[jids],
    )


def make_at_level(task: str, level: str):
    """`task` with NUM_ENVS worlds on the CPU, its curriculum at `level` (`LEVELS`)."""
    env = unilab_envs.make(task, num_envs=NUM_ENVS, device="cpu", seed=SEED, resample_s=RESAMPLE_S)
    env.curriculum.index = 0 if level == "first" else env.curriculum.num_levels - 1
    return env


def reset_sample(env) -> dict[str, np.ndarray]:
    """`env.reset()`'s draws, one row per world: the "reset/..." keys of the module
    docstring."""
    qb, vb, qadr, dadr = _joint_addresses(env)
    reset = env.reset()
    qpos, qvel = env.ctx.data.qpos.numpy().copy(), env.ctx.data.qvel.numpy().copy()
    quat = qpos[:, qb + 3 : qb + 7]  # (w, x, y, z)
    yaw = np.arctan2(
        2.0 * (quat[:, 0] * quat[:, 3] + quat[:, 1] * quat[:, 2]),
        1.0 - 2.0 * (quat[:, 2] ** 2 + quat[:, 3] ** 2),
    )
    return {
        "reset/root_pos": qpos[:, qb : qb + 3],
        "reset/yaw": yaw,
        "reset/root_lin_vel": qvel[:, vb : vb + 3],
        "reset/root_ang_vel": qvel[:, vb + 3 : vb + 6],
        "reset/joint_pos": qpos[:, qadr],
        "reset/joint_vel": qvel[:, dadr],
        "reset/command": reset["obs", "critic"][:, 6:9].numpy(),
    }


def record_level(task: str, level: str) -> dict[str, dict[str, list[float]]]:
    """The statistics of `task` at one curriculum level (module docstring)."""
    env = make_at_level(task, level)
    out = {key: _summary(x) for key, x in reset_sample(env).items()}
    td = env.step(torch.zeros(NUM_ENVS, env.action_dim))
    out["step/command"] = _summary(td["obs", "critic"][:, 6:9].numpy())
    return out


def record(task: str) -> dict:
    return {"num_worlds": NUM_ENVS} | {level: record_level(task, level) for level in LEVELS}


def main() -> None:
    PATH.parent.mkdir(parents=True, exist_ok=True)
    stats = {task: record(task) for task in TASKS}
    PATH.write_text(json.dumps(stats, indent=1) + "\n")
    print(PATH)


if __name__ == "__main__":
    main()
