"""RSL-RL 5.4.2's `OnPolicyRunner`, data-parallel through unilab-dist, on CPU (gloo) and GPU.

    from unilab_dist.contrib.rsl_rl import DataParallelRunner

    runner = DataParallelRunner(env, train_cfg, log_dir=None, device=device)
    runner.learn(num_learning_iterations=100)

launched with one process per GPU or CPU worker (`torchrun --nproc-per-node 2 train.py`).
Compared with RSL-RL's own multi-GPU path:

- The process group: RSL-RL's runner insists on `cuda:LOCAL_RANK` and NCCL. Here a CUDA
  device goes through RSL-RL's own setup and its NCCL group is adopted; a CPU device gets a
  gloo group (`unilab_dist.init_distributed`).
- Observation normalizers: every model with `obs_normalization=True` gets the statistics of all
  ranks' observations, merged exactly (count, mean, M2 in float64, Chan's formula) into RSL-RL's
  own `EmpiricalNormalization` buffers, so checkpoints and export are unchanged. Models that see
  the same observation groups (actor and critic, usually) share one all-gather per env step.
- Advantages: `advantage_normalization="global"` (the default here) normalizes with the mean and
  standard deviation of every rank's advantages (one all-gather per iteration);
  `"per_rank"` keeps RSL-RL's per-rank normalization. `normalize_advantage_per_mini_batch=True`
  stays per rank and per mini-batch, as in RSL-RL.
- Gradients: `GradAllReduce` (one flat collective per mini-batch; a `None` grad counts as zeros
  on every rank). RSL-RL's own KL all-reduce and learning-rate broadcast (schedule "adaptive")
  stay as they are.
- Parameters and buffers (normalizers included) are broadcast from rank 0 at the start, in one
  flat collective per dtype.
- Seeds: rank r seeds `random`, numpy and torch with
  `seed_for_rank(train_cfg["seed"], r, envs_per_rank=env.num_envs)`; seed the env of rank r with
  the same value (`runner.seed`) and env i of it with `seed + i`, and no two envs share a seed.

Needs rsl-rl-lib 5.4.2 (`pip install "unilab-dist[rsl-rl]"`). RND is not supported.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version

import torch

import unilab_dist as ud

RSL_RL_VERSION = "5.4.2"

try:
    _found = version("rsl-rl-lib")
except PackageNotFoundError:
    _found = None
if _found is None or not _found.startswith("5.4."):
    raise ImportError(
        f"unilab_dist.contrib.rsl_rl needs rsl-rl-lib {RSL_RL_VERSION}, found "
        f'{_found or "none"}: pip install "unilab-dist[rsl-rl]"'
    )

from rsl_rl.algorithms import PPO  # noqa: E402 (after the version check, which names the fix)
from rsl_rl.modules import EmpiricalNormalization  # noqa: E402
from rsl_rl.runners import OnPolicyRunner  # noqa: E402

__all__ = ["ADVANTAGE_NORMALIZATIONS", "DataParallelPPO", "DataParallelRunner"]

ADVANTAGE_NORMALIZATIONS = ("global", "per_rank")


def fold_into(norm: EmpiricalNormalization, batch: ud.RunningMoments) -> None:
    """Merge `batch` (all ranks' moments of one step) into an `EmpiricalNormalization`'s buffers,
    with RSL-RL's rules: only in training mode, and only while `count < until`."""
    if not norm.training or (norm.until is not None and norm.count >= norm.until):
        return
    state = ud.RunningMoments(tuple(norm._mean.shape[1:]), device=norm._mean.device)
    state.count = norm.count.to(torch.float64)
    state.mean = norm._mean[0].to(torch.float64)
    state.m2 = norm._var[0].to(torch.float64) * state.count
    merged = state.merge(batch)
    norm.count.fill_(int(merged.count.item()))
    norm._mean.copy_(merged.mean.unsqueeze(0))
    norm._var.copy_(merged.var.unsqueeze(0))
    norm._std.copy_(merged.std.unsqueeze(0))


@contextlib.contextmanager
def stock_normalizer_updates_off(*models: torch.nn.Module) -> Iterator[None]:
    """RSL-RL's `update_normalization` does nothing inside the block (the global one ran)."""
    saved = [(m, m.obs_normalization) for m in models]
    for m, _ in saved:
        m.obs_normalization = False
    try:
        yield
    finally:
        for m, flag in saved:
            m.obs_normalization = flag


class DataParallelPPO(PPO):
    """RSL-RL's PPO with global normalizers, global advantages and unilab-dist's collectives.

    Takes PPO's arguments plus `advantage_normalization` ("global" or "per_rank"), which the
    runner reads from `train_cfg["algorithm"]` like every other PPO argument.
    """

    def __init__(self, *args, advantage_normalization: str = "global", **kwargs) -> None:
        if advantage_normalization not in ADVANTAGE_NORMALIZATIONS:
            raise ValueError(
                f"advantage_normalization must be one of {ADVANTAGE_NORMALIZATIONS}, "
                f"got {advantage_normalization!r}"
            )
        if kwargs.get("rnd_cfg"):
            raise ValueError("DataParallelPPO does not support RND: set algorithm.rnd_cfg=None")
        super().__init__(*args, **kwargs)
        self.advantage_normalization = advantage_normalization
        self.grad_sync = ud.GradAllReduce()

    def normalized_models(self) -> dict[tuple[str, ...], list[torch.nn.Module]]:
        """Models with an observation normalizer, by the observation groups they see."""
        found: dict[tuple[str, ...], list[torch.nn.Module]] = {}
        for model in (self._raw_actor, self._raw_critic):
            if getattr(model, "obs_normalization", False):
                found.setdefault(tuple(model.obs_groups), []).append(model)
        return found

    def process_env_step(self, obs, rewards, dones, extras) -> None:
        with ud.accounting.phase("rollout"):
            models = self.normalized_models()
            for groups, sharing in models.items():
                x = torch.cat([obs[group] for group in groups], dim=-1)
                batch = ud.RunningMoments.from_batch(x).all_merge()  # one all-gather
                for model in sharing:
                    fold_into(model.obs_normalizer, batch)
            flat = [m for sharing in models.values() for m in sharing]
            with stock_normalizer_updates_off(*flat):
                super().process_env_step(obs, rewards, dones, extras)

    def compute_returns(self, obs) -> None:
        with ud.accounting.phase("returns"):
            if (
                self.normalize_advantage_per_mini_batch
                or self.advantage_normalization == "per_rank"
            ):
                super().compute_returns(obs)
                return
            self.normalize_advantage_per_mini_batch = True  # skips RSL-RL's per-rank step
            try:
                super().compute_returns(obs)
            finally:
                self.normalize_advantage_per_mini_batch = False
            adv = self.storage.advantages
            moments = ud.RunningMoments((), device=adv.device)
            moments.update(adv.reshape(-1))  # one all-gather of (count, mean, M2)
            std = (moments.m2 / (moments.count - 1).clamp(min=1.0)).sqrt()  # unbiased, as torch.std
            self.storage.advantages = ((adv - moments.mean) / (std + 1e-8)).to(adv.dtype)

    def update(self) -> dict[str, float]:
        with ud.accounting.phase("update"):
            return super().update()

    def broadcast_parameters(self) -> None:
        with ud.accounting.phase("broadcast"):
            ud.broadcast_module_state([self._raw_actor, self._raw_critic])

    def reduce_parameters(self) -> None:
        self.grad_sync([*self.actor.parameters(), *self.critic.parameters()])


class DataParallelRunner(OnPolicyRunner):
    """`OnPolicyRunner` whose algorithm is `DataParallelPPO`, on CPU (gloo) or CUDA (NCCL).

    `train_cfg["algorithm"]["class_name"]` must be "PPO" (replaced by `DataParallelPPO`) or a
    subclass of `DataParallelPPO`. `train_cfg["seed"]` (default 0) is the base seed.
    """

    def __init__(self, env, train_cfg: dict, log_dir: str | None = None, device: str = "cpu"):
        alg = train_cfg["algorithm"]
        name = alg.get("class_name", "PPO")
        if name in ("PPO", "rsl_rl.algorithms:PPO", "rsl_rl.algorithms.PPO", PPO):
            alg["class_name"] = DataParallelPPO
        elif not (isinstance(name, type) and issubclass(name, DataParallelPPO)):
            raise ValueError(
                f"algorithm.class_name {name!r} is not PPO or a DataParallelPPO subclass: "
                "derive your algorithm from unilab_dist.contrib.rsl_rl.DataParallelPPO"
            )
        alg.setdefault("rnd_cfg", None)
        self.seed = ud.seed_for_rank(
            int(train_cfg.get("seed", 0)), ud.DistContext.from_env("cpu").rank, env.num_envs
        )
        ud.seed_everything(self.seed)
        super().__init__(env, train_cfg, log_dir=log_dir, device=device)

    def _configure_multi_gpu(self) -> None:
        """RSL-RL's setup for a CUDA device (its NCCL group is adopted); gloo for a CPU one."""
        if torch.device(self.device).type == "cuda":
            super()._configure_multi_gpu()
            self.ctx = ud.init_distributed(self.device)
            return
        self.ctx = ud.init_distributed(self.device)
        self.gpu_world_size = self.ctx.world_size
        self.gpu_global_rank = self.ctx.rank
        self.gpu_local_rank = self.ctx.local_rank
        self.is_distributed = self.ctx.world_size > 1
        self.cfg["multi_gpu"] = (
            {"global_rank": self.ctx.rank, "local_rank": self.ctx.local_rank,
             "world_size": self.ctx.world_size}
            if self.is_distributed else None
        )  # fmt: skip
