"""FastSAC learns a small continuous-control task written in torch (seconds on CPU)."""

from __future__ import annotations

import torch
from tensordict import TensorDict

from unilab_algos.fastsac import FastSAC, FastSACConfig


class PointReach:
    """1-D point mass: obs [pos, goal], pos += 0.3 * action, reward -|pos - goal|, 10 steps."""

    def __init__(self, n: int, gen: torch.Generator) -> None:
        self.n, self.gen = n, gen
        self.t = torch.zeros(n, dtype=torch.long)
        self.pos, self.goal = self._draw(), self._draw()

    def _draw(self) -> torch.Tensor:
        return torch.rand(self.n, generator=self.gen) * 2 - 1

    def obs(self) -> TensorDict:
        return TensorDict({"obs": {"policy": torch.stack([self.pos, self.goal], -1)}}, [self.n])

    def step(self, action: torch.Tensor) -> TensorDict:
        self.pos = (self.pos + 0.3 * action[:, 0]).clamp(-2, 2)
        reward = -(self.pos - self.goal).abs()
        self.t += 1
        final = torch.stack([self.pos, self.goal], -1)
        trunc = self.t >= 10
        reset = trunc
        self.pos = torch.where(reset, self._draw(), self.pos)
        self.goal = torch.where(reset, self._draw(), self.goal)
        self.t = torch.where(reset, 0, self.t)
        return TensorDict(
            {
                "obs": {"policy": torch.stack([self.pos, self.goal], -1)},
                "final_obs": {"policy": final},
                "reward": reward,
                "terminated": torch.zeros(self.n, dtype=torch.bool),
                "truncated": trunc,
                "done": trunc,
            },
            [self.n],
        )


def _evaluate(learner: FastSAC) -> float:
    env = PointReach(256, torch.Generator().manual_seed(123))
    total = 0.0
    for _ in range(10):
        total += env.step(learner.act(env.obs(), deterministic=True))["reward"].mean().item()
    return total / 10


def test_fastsac_learns_point_reach():  # one thread: conftest's autouse fixture
    torch.manual_seed(0)
    cfg = FastSACConfig(
        batch_size=256,
        num_updates=2,
        policy_frequency=2,
        gamma=0.9,
        actor_hidden=(64, 64),
        critic_hidden=(64, 64),
        num_atoms=51,
        v_min=-10.0,
        v_max=1.0,
        critic_obs=("policy",),
        learning_starts=5,
        transitions_per_env=200,
        actor_lr=1e-3,
        critic_lr=1e-3,
        capture=False,
    )
    env = PointReach(32, torch.Generator().manual_seed(0))
    learner = FastSAC({"policy": (2,)}, 1, cfg, num_envs=32)
    before = _evaluate(learner)
    obs = env.obs()
    for _ in range(200):
        action = learner.act(obs)
        step = env.step(action)
        learner.observe(obs, action, step)
        learner.update()
        obs = step
    after = _evaluate(learner)
    # Standing still scores about -0.67 per step; reaching the goal in ~3 steps about -0.15.
    assert before < -0.5
    assert after > -0.3, (before, after)
    assert learner.critic_updates == 2 * (200 - 4)
