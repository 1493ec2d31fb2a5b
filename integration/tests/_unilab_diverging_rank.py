"""Imported by every worker through `runner.imports` in the replica-check test: on rank 1,
PPO's second update ends by nudging the critic's first weight, so the replicas differ from
iteration 2 on. The launcher process imports it too (RANK unset): nothing happens there. It is
a test fixture, not part of the package.
"""

import os

import torch

from unilab_algos import PPO

if os.environ.get("RANK") == "1":
    _update = PPO.update

    def _diverging_update(self):
        metrics = _update(self)
        self.diverging_updates = getattr(self, "diverging_updates", 0) + 1
        if self.diverging_updates == 2:
            with torch.no_grad():
                self.critic.mlp[0].weight.view(-1)[0] += 1e-3
        return metrics

    PPO.update = _diverging_update
