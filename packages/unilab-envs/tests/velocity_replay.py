"""A checkpoint of `quadruped-velocity` and `humanoid-velocity` and what the steps after it
return: `env.state_dict()` after `WARMUP` steps of fixed random actions from a fixed seed (on
warp's CPU device, the tasks' defaults), then `STEPS` more steps' observations, rewards,
per-term logs and terminations. In these steps no world resets, no command times out and
no push comes: nothing is drawn but the observation noise, so a change to how the tasks
draw their resets and commands leaves them as recorded, and a checkpoint saved by the tasks
before still loads (`test_envs_velocity_replay.py`).

`python packages/unilab-envs/tests/velocity_replay.py` writes `tests/data/velocity/
replay-<task>.npz`: "state/<name>" (the state_dict's arrays), "state_steps", "curriculum"
(its JSON), "action" [T, N, A] and "obs/<group>", "reward", "log/<term>", "terminated",
"truncated" [T, N, ...].
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

import unilab_envs

TASKS = ("quadruped-velocity", "humanoid-velocity")
NUM_ENVS, WARMUP, STEPS, SEED = 4, 20, 10, 3
DATA = Path(__file__).parent / "data" / "velocity"


def fixture_path(task: str) -> Path:
    return DATA / f"replay-{task}.npz"


def make(task: str):
    return unilab_envs.make(task, num_envs=NUM_ENVS, device="cpu", seed=SEED)


def actions(env, count: int, gen: torch.Generator) -> list[torch.Tensor]:
    return [torch.rand(NUM_ENVS, env.action_dim, generator=gen) * 2 - 1 for _ in range(count)]


def run(env, acts) -> dict[str, np.ndarray]:
    """The outputs of `env.step` for each action, stacked."""
    out: dict[str, list[np.ndarray]] = {}
    for action in acts:
        td = env.step(action)
        row = {"reward": td["reward"], "terminated": td["terminated"]}
        row["truncated"] = td["truncated"]
        row |= {f"obs/{g}": td["obs", g] for g in env.observation_shapes}
        row |= {f"log/{k}": td["log", k] for k in td["log"].keys()}  # noqa: SIM118
        for key, value in row.items():
            out.setdefault(key, []).append(value.numpy().copy())
    return {key: np.stack(values) for key, values in out.items()}


def load(task: str):
    """An env of `task` with the recorded checkpoint loaded, the recorded actions and outputs."""
    data = dict(np.load(fixture_path(task)))
    env = make(task)
    env.reset()
    state = {
        "task": task,
        "num_envs": NUM_ENVS,
        "arrays": {k[6:]: torch.from_numpy(v) for k, v in data.items() if k.startswith("state/")},
        "steps": int(data["state_steps"]),
        "curriculum": json.loads(str(data["curriculum"])),
    }
    env.load_state_dict(state)
    expected = {k: v for k, v in data.items() if not k.startswith(("state", "curriculum"))}
    return env, [torch.from_numpy(a) for a in data["action"]], expected


def main() -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    for task in TASKS:
        env, gen = make(task), torch.Generator().manual_seed(SEED)
        env.reset()
        run(env, actions(env, WARMUP, gen))
        state = env.state_dict()
        acts = actions(env, STEPS, gen)
        trace = run(env, acts)
        assert not trace["terminated"].any() and not trace["truncated"].any()
        data = {f"state/{k}": v.numpy() for k, v in state["arrays"].items()}
        data |= {"state_steps": np.asarray(state["steps"])}
        data |= {"curriculum": np.asarray(json.dumps(state["curriculum"]))}
        data |= {"action": np.stack([a.numpy() for a in acts]), **trace}
        np.savez_compressed(fixture_path(task), **data)
        print(fixture_path(task), fixture_path(task).stat().st_size)


if __name__ == "__main__":
    main()
