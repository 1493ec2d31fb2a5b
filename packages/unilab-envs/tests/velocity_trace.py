"""A recorded trace of `quadruped-velocity` and `humanoid-velocity`: what `env.step` returns
for fixed random actions from a fixed seed, on warp's CPU device with the tasks' defaults
(observation noise, curriculum and domain randomization included), except the quadruped's
0.4 s episodes: its worlds reach their time limit inside the trace (and reset), while a
humanoid world falls (a termination, and its reset) at step 34.

`record(task)` runs the trace; `python packages/unilab-envs/tests/velocity_trace.py` writes
it to `tests/data/velocity/<task>.npz` (the fixture `test_envs_velocity_trace.py` compares
the tasks with). Keys: "reset/obs/<group>" [N, D] after `env.reset()`, then per step t
(stacked over the T steps): "obs/<group>" [T, N, D], "reward" [T, N], "log/<term>" [T, N],
"terminated", "truncated" [T, N] (bool) and "action" [T, N, A].
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

import unilab_envs

TASKS = ("quadruped-velocity", "humanoid-velocity")
NUM_ENVS, STEPS, SEED = 4, 40, 2
EPISODE_LENGTH_S = {"quadruped-velocity": 0.4, "humanoid-velocity": 20.0}  # s
DATA = Path(__file__).parent / "data" / "velocity"


def fixture_path(task: str) -> Path:
    return DATA / f"{task}.npz"


def record(task: str, **overrides) -> dict[str, np.ndarray]:
    """The trace of `task` (module docstring); `overrides` go to `unilab_envs.make`."""
    overrides = {"episode_length_s": EPISODE_LENGTH_S[task], **overrides}
    env = unilab_envs.make(task, num_envs=NUM_ENVS, device="cpu", seed=SEED, **overrides)
    gen = torch.Generator().manual_seed(SEED)
    out: dict[str, list[np.ndarray]] = {}
    reset = env.reset()
    groups = list(reset["obs"].keys())  # (iterating a TensorDict walks its batch dimension)
    trace = {f"reset/obs/{g}": reset["obs", g].numpy().copy() for g in groups}
    for _ in range(STEPS):
        action = torch.rand(NUM_ENVS, env.action_dim, generator=gen) * 2 - 1
        td = env.step(action)
        row = {"action": action.numpy().copy(), "reward": td["reward"].numpy().copy()}
        row["terminated"] = td["terminated"].numpy().copy()
        row["truncated"] = td["truncated"].numpy().copy()
        row |= {f"obs/{g}": td["obs", g].numpy().copy() for g in groups}
        row |= {f"log/{k}": td["log", k].numpy().copy() for k in td["log"].keys()}  # noqa: SIM118
        for key, value in row.items():
            out.setdefault(key, []).append(value)
    trace |= {key: np.stack(values) for key, values in out.items()}
    return trace


def main() -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    for task in TASKS:
        trace = record(task)
        np.savez_compressed(fixture_path(task), **trace)
        print(fixture_path(task), {k: v.shape for k, v in trace.items()})


if __name__ == "__main__":
    main()
