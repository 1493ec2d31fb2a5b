"""RSL-RL 5.4.2's OnPolicyRunner, data-parallel with unilab-dist on 2 CPU processes:

torchrun --standalone --nproc-per-node 2 train_rsl_rl.py
"""

import hashlib

import torch
from rsl_rl.env import VecEnv
from tensordict import TensorDict

import unilab_dist as ud
from unilab_dist.contrib.rsl_rl import DataParallelRunner


class PointMass(VecEnv):
    """N point masses on a line, pushed by a force; the reward keeps them near 0."""

    def __init__(self, num_envs: int, seed: int) -> None:
        self.num_envs, self.num_actions, self.max_episode_length = num_envs, 1, 50
        self.device, self.cfg = "cpu", {}
        self.gen = torch.Generator().manual_seed(seed)  # env i of this rank: seed + i
        self.state = torch.randn(num_envs, 2, generator=self.gen)
        self.episode_length_buf = torch.zeros(num_envs, dtype=torch.long)

    def get_observations(self) -> TensorDict:
        return TensorDict({"policy": self.state.clone()}, batch_size=[self.num_envs])

    def step(self, actions: torch.Tensor):
        x, v = self.state.unbind(-1)
        v = v + 0.1 * actions.clamp(-1.0, 1.0).squeeze(-1)
        x = x + 0.1 * v
        self.state = torch.stack([x, v], dim=-1)
        self.episode_length_buf += 1
        time_outs = self.episode_length_buf >= self.max_episode_length
        self.state[time_outs] = torch.randn(int(time_outs.sum()), 2, generator=self.gen)
        self.episode_length_buf[time_outs] = 0
        return self.get_observations(), -(x**2), time_outs.long(), {"time_outs": time_outs}


train_cfg = {
    "seed": 1,
    "num_steps_per_env": 16,
    "save_interval": 100,
    "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
    "actor": {
        "class_name": "MLPModel",
        "hidden_dims": [32, 32],
        "obs_normalization": True,
        "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 1.0},
    },
    "critic": {"class_name": "MLPModel", "hidden_dims": [32, 32], "obs_normalization": True},
    "algorithm": {
        "class_name": "PPO",
        "num_learning_epochs": 2,
        "num_mini_batches": 2,
        "advantage_normalization": "global",  # or "per_rank", as RSL-RL does
        "rnd_cfg": None,
        "symmetry_cfg": None,
    },
}
NUM_ENVS = 64
ctx = ud.DistContext.from_env()  # RANK, LOCAL_RANK, ...; device cuda:LOCAL_RANK or cpu
rank = ctx.rank
env = PointMass(NUM_ENVS, seed=ud.seed_for_rank(train_cfg["seed"], rank, envs_per_rank=NUM_ENVS))
runner = DataParallelRunner(env, train_cfg, log_dir=None, device=str(ctx.device))
runner.learn(num_learning_iterations=5)

alg = runner.alg
ud.check_replicas({"actor": alg.actor, "critic": alg.critic}, [alg.optimizer])  # raises if not
state = [*alg.actor.state_dict().values(), *alg.critic.state_dict().values()]
digest = hashlib.sha256(b"".join(t.cpu().numpy().tobytes() for t in state)).hexdigest()
report = (
    f"rank {rank}: seed {runner.seed}, replicas identical, state sha256 {digest[:16]}\n"
    f"rank {rank}: collectives {ud.accounting.snapshot()}\n"
)
print(report, end="", flush=True)  # one write: the ranks' lines never interleave
ud.shutdown()
