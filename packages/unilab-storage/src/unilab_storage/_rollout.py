"""`RolloutStorage`: a preallocated [T, N] TensorDict filled one environment step at a time."""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase

from ._checks import check_leaves, leaf_specs, positive_int, resolve_device

__all__ = ["RolloutStorage"]


class RolloutStorage:
    """On-policy rollout buffer of `num_steps` x `num_envs` transitions.

    `template` is one step's TensorDict: every tensor leaf is `[N, ...]` (N = `num_envs`) and
    may sit under any nested key, e.g. ``("obs", "policy")`` [N, 48], ``("obs", "critic")``
    [N, 60], ``"actions"`` [N, A], ``"log_prob"`` [N], ``"mean"``/``"std"`` [N, A],
    ``"values"`` [N], ``"rewards"`` [N], ``"dones"`` [N] bool, ``"time_outs"`` [N] bool and
    recurrent states such as ``("hidden", "actor")`` [N, layers, H] (env dimension first).
    The storage allocates zeros of shape `[T, N, ...]` with the template's dtypes on `device`
    (default: the template's device).

    `add(step)` copies one step in place at the cursor `step`. Only the template's keys are
    checked and written, so derived entries (``data["advantages"] = ...``) may be set on
    `data` after the rollout; they are overwritten by whoever sets them next. `clear()` only
    rewinds the cursor (as RSL-RL does); the memory is reused.
    """

    def __init__(
        self,
        num_steps: int,
        num_envs: int,
        template: TensorDictBase,
        device: torch.device | str | None = None,
    ) -> None:
        self.num_steps = positive_int(num_steps, "num_steps")
        self.num_envs = positive_int(num_envs, "num_envs")
        self._specs = leaf_specs(template, self.num_envs, "RolloutStorage")
        self.device = resolve_device(device, template)
        data = TensorDict({}, batch_size=[self.num_steps, self.num_envs], device=self.device)
        for key, (shape, dtype) in self._specs.items():
            data.set(
                key,
                torch.zeros(
                    (self.num_steps, self.num_envs, *shape), dtype=dtype, device=self.device
                ),
            )
        self.data: TensorDict = data
        """All T x N entries, batch size [T, N]; rows >= `step` hold stale or zero values."""
        self._leaves = [(key, data.get(key)) for key in self._specs]
        self.step = 0
        """Write cursor: the number of steps added since the last `clear()`."""

    @property
    def keys(self) -> list:
        """The template's leaf keys, in template order."""
        return list(self._specs)

    @property
    def is_full(self) -> bool:
        """True once `num_steps` steps were added."""
        return self.step >= self.num_steps

    def add(self, step: TensorDictBase) -> None:
        """Copy one step (leaves [N, ...], same keys, dtypes and device as the template) in place.

        Raises OverflowError when full, ValueError/TypeError naming the key on a mismatch.
        """
        if self.step >= self.num_steps:
            raise OverflowError(
                f"RolloutStorage is full ({self.num_steps} steps); call clear() before add()"
            )
        check_leaves(step, self._specs, self.num_envs, self.device, "RolloutStorage.add")
        t = self.step
        for key, buf in self._leaves:
            buf[t].copy_(step.get(key))
        self.step = t + 1

    def clear(self) -> None:
        """Rewind the cursor to 0 (contents are kept and overwritten by the next rollout)."""
        self.step = 0

    def __repr__(self) -> str:
        return (
            f"RolloutStorage(num_steps={self.num_steps}, num_envs={self.num_envs}, "
            f"step={self.step}, device={self.device}, keys={self.keys})"
        )
