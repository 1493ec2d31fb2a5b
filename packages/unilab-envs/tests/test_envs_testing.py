"""`unilab_envs.testing.check_vec_env` on a small torch env: what a violation reports."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from tensordict import TensorDict

from unilab_envs.testing import EnvContractError, check_vec_env


class CountingEnv:
    """A contract-abiding env without physics: one obs group `policy` (3,), reward 1 per step,
    episodes of 4 steps. `break_` names one way to violate the contract."""

    max_episode_steps = 4
    step_dt = 0.02
    action_dim = 2

    def __init__(self, num_envs: int = 3, break_: str = "") -> None:
        self.num_envs = num_envs
        self.device = torch.device("cpu")
        self.observation_shapes = {"policy": (3,)}
        self.break_ = break_
        self.t = torch.zeros(num_envs)

    def _obs(self) -> torch.Tensor:
        obs = self.t[:, None].expand(-1, 3).clone()
        if self.break_ == "obs dtype":
            return obs.double()
        if self.break_ == "obs shape":
            return obs[:, :2]
        return obs

    def reset(self) -> TensorDict:
        self.t.zero_()
        return TensorDict({"obs": {"policy": self._obs()}}, batch_size=[self.num_envs])

    def step(self, action: torch.Tensor) -> TensorDict:
        if action.shape != (self.num_envs, self.action_dim):
            raise ValueError(f"action shape {tuple(action.shape)}")
        self.t += 1
        truncated = self.t >= self.max_episode_steps
        n = self.num_envs
        final = self._obs()
        length = torch.where(truncated, self.t, 0.0)
        self.t[truncated] = 0
        reward = torch.ones(n)
        if self.break_ == "reward dtype":
            reward = reward.double()
        done = truncated.clone()
        if self.break_ == "done":
            done[0] = True
        return TensorDict(
            {
                "obs": {"policy": self._obs()},
                "final_obs": {"policy": final},
                "reward": reward,
                "terminated": torch.zeros(n, dtype=torch.bool),
                "truncated": truncated,
                "done": done,
                "episode": {"return": length.clone(), "length": length},
            },
            batch_size=[n],
        )


def test_a_conforming_env_passes_with_its_counts():
    counts = check_vec_env(CountingEnv(), steps=9)
    assert counts == {"steps": 9, "episodes": 6, "terminated": 0, "truncated": 6}


@pytest.mark.parametrize(
    ("break_", "message"),
    [
        (
            "obs dtype",
            "obs/policy: got shape (3, 3) torch.float64 on cpu, expected shape (3, 3) "
            "torch.float32 on cpu",
        ),
        (
            "obs shape",
            "obs/policy: got shape (3, 2) torch.float32 on cpu, expected shape (3, 3) "
            "torch.float32 on cpu",
        ),
        (
            "reward dtype",
            "reward: got shape (3,) torch.float64 on cpu, expected shape (3,) torch.float32",
        ),
        ("done", "done: differs from terminated | truncated"),
    ],
)
def test_a_violation_names_the_key_and_what_differs(break_, message):
    with pytest.raises(EnvContractError) as info:
        check_vec_env(CountingEnv(break_=break_), steps=3)
    assert message in str(info.value)


def test_violations_are_reported_under_python_O():
    # bare `assert`s vanish under -O; the check must still refuse a float64 observation
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import test_envs_testing as t\n"
        "from unilab_envs.testing import EnvContractError, check_vec_env\n"
        "try:\n"
        "    check_vec_env(t.CountingEnv(break_='obs dtype'), steps=2)\n"
        "except EnvContractError as e:\n"
        "    print('refused:', e)\n"
    )
    here = str(__import__("pathlib").Path(__file__).parent)
    out = subprocess.run(
        [sys.executable, "-O", "-c", code, here], capture_output=True, text=True, check=True
    )
    assert "refused: obs/policy: got shape (3, 3) torch.float64" in out.stdout
