"""Mirror (symmetry) maps and the two uses RSL-RL 5.4.2 makes of them in PPO.

A `SignedPermutation` maps the last axis of a tensor: `out[..., i] = sign[i] * x[..., index[i]]`.
A `Mirror` holds one per observation group and one for the actions; the learner receives it by
injection (the robot and task decide the maps). Both operations below are pure tensor ops on the
batch's device (`index_select`, multiply, `cat`): no host read, capturable in a CUDA graph, and
within one rank (no collective).

- `augment`: the mini-batch doubled, original samples first, mirrored samples after; the
  rollout tensors (old log-probs, values, advantages, returns) repeated with `repeat_rollout`,
  as RSL-RL does, so the mirrored samples reuse the original sample's old log-prob and value.
- `mirror_loss`: `mse(mean(mirror_obs(o)), mirror_act(mean(o)).detach())`, RSL-RL's loss on the
  policy mean; zero for an exactly symmetric policy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs
import torch

__all__ = [
    "Mirror",
    "SignedPermutation",
    "augment",
    "mirror_loss",
    "mirror_mse",
    "repeat_rollout",
]


def _check_perm(inst: SignedPermutation, _attr: attrs.Attribute, value: tuple[int, ...]) -> None:
    if sorted(value) != list(range(len(value))):
        raise ValueError(f"index must be a permutation of 0..{len(value) - 1}, got {value!r}")


@attrs.frozen(kw_only=True)
class SignedPermutation:
    """`index[i]` is the source of entry i, `sign[i]` (+1 or -1) its sign."""

    index: tuple[int, ...] = attrs.field(converter=tuple, validator=_check_perm)
    sign: tuple[float, ...] = attrs.field(converter=tuple)

    @sign.validator
    def _check_sign(self, _attr: attrs.Attribute, value: tuple[float, ...]) -> None:
        if len(value) != len(self.index) or any(s not in (1.0, -1.0) for s in value):
            raise ValueError(f"sign must hold {len(self.index)} entries of +1 or -1, got {value!r}")

    _tensors: dict = attrs.field(factory=dict, init=False, eq=False, repr=False)
    """(index, sign) tensors per (device, dtype): made on the first call (outside a CUDA-graph
    capture, which cannot copy from the host), read by every later one."""

    def __len__(self) -> int:
        return len(self.index)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != len(self.index):
            raise ValueError(f"mirror of width {len(self.index)} got a last axis of {x.shape[-1]}")
        key = (x.device, x.dtype)
        if key not in self._tensors:
            idx = torch.tensor(self.index, device=x.device)
            self._tensors[key] = (idx, torch.tensor(self.sign, dtype=x.dtype, device=x.device))
        idx, sign = self._tensors[key]
        return x.index_select(-1, idx) * sign


@attrs.frozen(kw_only=True)
class Mirror:
    """The maps a learner receives: `obs` per observation group, `action` for the actions."""

    obs: Mapping[str, SignedPermutation]
    action: SignedPermutation

    def observations(self, obs: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        missing = [k for k in obs if k not in self.obs]
        if missing:
            raise KeyError(f"no observation mirror for group(s) {missing}; add them to Mirror.obs")
        return {k: self.obs[k](v) for k, v in obs.items()}


def augment(
    mirror: Mirror, obs: Mapping[str, torch.Tensor], actions: torch.Tensor
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """`[original; mirrored]` along the batch axis for every group and the actions."""
    mirrored = mirror.observations(obs)
    out = {k: torch.cat((v, mirrored[k]), dim=0) for k, v in obs.items()}
    return out, torch.cat((actions, mirror.action(actions)), dim=0)


def repeat_rollout(x: torch.Tensor, copies: int = 2) -> torch.Tensor:
    """A rollout tensor repeated along the batch axis to match an augmented batch."""
    return x.repeat(copies, *([1] * (x.dim() - 1)))


def mirror_loss(
    mirror: Mirror,
    mean: Callable[[Mapping[str, torch.Tensor]], torch.Tensor],
    obs: Mapping[str, torch.Tensor],
) -> torch.Tensor:
    """RSL-RL's mirror loss for the policy mean `mean(obs)` (the target side detached)."""
    return mirror_mse(mirror, mean(mirror.observations(obs)), mean(obs))


def mirror_mse(mirror: Mirror, mirrored_mean: torch.Tensor, mean: torch.Tensor) -> torch.Tensor:
    """`mse(mirrored_mean, mirror.action(mean).detach())`: the mirror loss from the policy
    means of the mirrored observations and of the original ones, [B, A] each."""
    return torch.nn.functional.mse_loss(mirrored_mean, mirror.action(mean).detach())
