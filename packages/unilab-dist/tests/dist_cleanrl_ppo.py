"""A CleanRL-shaped PPO (one file, `Agent`, GAE, mini-batch Adam) on a small torch vector env,
with docs/dist.md's unilab-dist lines (`sync="unilab"`), without them (`sync="none"`) or with
torch's DistributedDataParallel instead (`sync="ddp"`). test_dist_cleanrl.py runs it.
"""

from __future__ import annotations

import random

import numpy as np
import torch
from torch import nn, optim
from torch.distributions.normal import Normal

import unilab_dist

NUM_ENVS, NUM_STEPS, MINIBATCHES, EPOCHS = 4, 16, 4, 2
GAMMA, LAM, CLIP, MAX_GRAD_NORM = 0.99, 0.95, 0.2, 0.5


class PointMassEnvs:
    """`num_envs` point masses on a line; env i draws its resets from seed + i."""

    def __init__(self, num_envs: int, seed: int) -> None:
        self.gens = [torch.Generator().manual_seed(seed + i) for i in range(num_envs)]
        self.state = torch.stack([torch.randn(2, generator=g) for g in self.gens])
        self.t = torch.zeros(num_envs, dtype=torch.long)

    def step(self, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x = self.state[:, 0] + 0.1 * self.state[:, 1]
        v = self.state[:, 1] + 0.1 * action.clamp(-1, 1)[:, 0]
        self.state, self.t = torch.stack([x, v], dim=1), self.t + 1
        done = self.t >= 20
        for i in torch.nonzero(done).flatten().tolist():
            self.state[i], self.t[i] = torch.randn(2, generator=self.gens[i]), 0
        return self.state.clone(), -(x**2), done.float()


class Agent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.critic = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 1))
        self.actor_mean = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 1))
        self.actor_logstd = nn.Parameter(torch.zeros(1, 1))

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def forward(self, x: torch.Tensor, action: torch.Tensor | None = None):
        mean = self.actor_mean(x)
        dist = Normal(mean, self.actor_logstd.expand_as(mean).exp())
        action = dist.sample() if action is None else action
        return action, dist.log_prob(action).sum(1), dist.entropy().sum(1), self.critic(x)


def train(sync: str, seed: int = 1, iterations: int = 3) -> dict[str, torch.Tensor]:
    """Train and return the agent's parameters and Adam's state, flattened."""
    if sync == "unilab":
        ctx = unilab_dist.init_distributed()  # torchrun's variables; one process without them
        seed = unilab_dist.seed_for_rank(seed, ctx.rank, envs_per_rank=NUM_ENVS)
    elif sync == "ddp":
        rank = torch.distributed.get_rank()
        seed = seed + rank * NUM_ENVS
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    envs = PointMassEnvs(NUM_ENVS, seed)
    agent = Agent()
    optimizer = optim.Adam(agent.parameters(), lr=3e-3, eps=1e-5)
    model = agent
    if sync == "unilab":
        unilab_dist.broadcast_module_state([agent])  # rank 0's initial parameters everywhere
        grad_sync = unilab_dist.GradAllReduce()
    elif sync == "ddp":
        model = nn.parallel.DistributedDataParallel(agent)

    obs = torch.zeros(NUM_STEPS, NUM_ENVS, 2)
    actions, logprobs = torch.zeros(NUM_STEPS, NUM_ENVS, 1), torch.zeros(NUM_STEPS, NUM_ENVS)
    rewards, dones = torch.zeros(NUM_STEPS, NUM_ENVS), torch.zeros(NUM_STEPS, NUM_ENVS)
    values = torch.zeros(NUM_STEPS, NUM_ENVS)
    next_obs, next_done = envs.state.clone(), torch.zeros(NUM_ENVS)
    for _ in range(iterations):
        for step in range(NUM_STEPS):
            obs[step], dones[step] = next_obs, next_done
            with torch.no_grad():
                action, logprob, _, value = agent(next_obs)
            values[step], actions[step], logprobs[step] = value.flatten(), action, logprob
            next_obs, rewards[step], next_done = envs.step(action)
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages, lastgaelam = torch.zeros_like(rewards), 0
            for t in reversed(range(NUM_STEPS)):
                nonterminal = 1.0 - (next_done if t == NUM_STEPS - 1 else dones[t + 1])
                nextvalues = next_value if t == NUM_STEPS - 1 else values[t + 1]
                delta = rewards[t] + GAMMA * nextvalues * nonterminal - values[t]
                advantages[t] = lastgaelam = delta + GAMMA * LAM * nonterminal * lastgaelam
            returns = advantages + values
        b_obs, b_actions = obs.reshape(-1, 2), actions.reshape(-1, 1)
        b_logprobs, b_adv = logprobs.reshape(-1), advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        batch = NUM_STEPS * NUM_ENVS
        for _ in range(EPOCHS):
            order = np.random.permutation(batch)
            for start in range(0, batch, batch // MINIBATCHES):
                mb = order[start : start + batch // MINIBATCHES]
                _, newlogprob, entropy, newvalue = model(b_obs[mb], b_actions[mb])
                ratio = (newlogprob - b_logprobs[mb]).exp()
                mb_adv = (b_adv[mb] - b_adv[mb].mean()) / (b_adv[mb].std() + 1e-8)
                pg_loss = torch.max(
                    -mb_adv * ratio, -mb_adv * ratio.clamp(1 - CLIP, 1 + CLIP)
                ).mean()
                v_loss = 0.5 * ((newvalue.flatten() - b_returns[mb]) ** 2).mean()
                loss = pg_loss - 0.01 * entropy.mean() + 0.5 * v_loss
                optimizer.zero_grad()
                loss.backward()
                if sync == "unilab":
                    grad_sync(list(agent.parameters()))  # mean over ranks, one collective
                nn.utils.clip_grad_norm_(agent.parameters(), MAX_GRAD_NORM)
                optimizer.step()
    state = [p.detach().flatten() for p in agent.parameters()]
    for p in agent.parameters():
        state += [
            optimizer.state[p]["exp_avg"].flatten(),
            optimizer.state[p]["exp_avg_sq"].flatten(),
        ]
    return {"state": torch.cat(state), "seed": torch.tensor(seed)}
