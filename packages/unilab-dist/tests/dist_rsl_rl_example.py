"""unilab-dist dropped into RSL-RL 5.4.2's PPO (the code shown in docs/dist-in-rsl-rl.md).

Two changes to a stock multi-GPU RSL-RL run:
1. Global observation normalization: RSL-RL's `EmpiricalNormalization.update` uses the local
   batch only, so the normalizers of different ranks drift apart and the replicas no longer
   compute the same function. `GlobalEmpiricalNormalization` merges the batches of all ranks
   exactly (count, mean, M2 in float64, one all-gather) before updating its buffers.
2. The flat gradient all-reduce: `UniLabPPO.reduce_parameters` uses `GradAllReduce`, which
   keeps ranks in step when some `.grad` are None on one rank only (stock RSL-RL then packs
   different layouts), and `broadcast_parameters` sends parameters AND buffers through flat
   per-dtype buffers instead of pickled state dicts.
"""

from __future__ import annotations

import torch
from rsl_rl.algorithms import PPO
from rsl_rl.modules import EmpiricalNormalization

import unilab_dist as ud


class GlobalEmpiricalNormalization(EmpiricalNormalization):
    """`EmpiricalNormalization` whose statistics are those of every rank's observations.

    Same buffers (`_mean`, `_var`, `_std`, `count`), so checkpoints stay compatible; the merge
    itself runs in float64. Identical to the stock class in a run of one process.
    """

    @torch.jit.unused
    def update(self, x: torch.Tensor) -> None:
        if not self.training:
            return
        if self.until is not None and self.count >= self.until:  # count is global: all agree
            return
        state = ud.RunningMoments(tuple(self._mean.shape[1:]), device=x.device)
        state.count = self.count.to(x.device, torch.float64)
        state.mean = self._mean[0].to(torch.float64)
        state.m2 = self._var[0].to(torch.float64) * state.count
        state.update(x)  # merges this rank's batch with all other ranks' batches
        self.count.fill_(int(state.count.item()))
        self._mean.copy_(state.mean.unsqueeze(0))
        self._var.copy_(state.var.unsqueeze(0))
        self._std.copy_(state.std.unsqueeze(0))


def install_global_normalizer(model: torch.nn.Module) -> None:
    """Swap an RSL-RL model's `obs_normalizer` for the global one, keeping its state."""
    old = getattr(model, "obs_normalizer", None)
    if isinstance(old, EmpiricalNormalization):
        new = GlobalEmpiricalNormalization(old._mean.shape[1:], old.eps, old.until)
        new.load_state_dict(old.state_dict())
        model.obs_normalizer = new.to(old._mean.device)


class UniLabPPO(PPO):
    """RSL-RL's PPO with global normalizers and unilab-dist's broadcast and flat all-reduce."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        install_global_normalizer(self.actor)
        install_global_normalizer(self.critic)
        self.grad_sync = ud.GradAllReduce()

    def broadcast_parameters(self) -> None:
        modules = [self._raw_actor, self._raw_critic]
        if self.rnd:
            modules.append(self.rnd.predictor)
        ud.broadcast_module_state(modules)  # parameters and buffers (normalizers), flat

    def reduce_parameters(self) -> None:
        params = [*self.actor.parameters(), *self.critic.parameters()]
        if self.rnd:
            params += list(self.rnd.parameters())  # the frozen target is skipped
        self.grad_sync(params)
