"""Recurrent mini-batches: env slices of a [T, N] rollout, split into padded trajectories."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Literal, TypeVar

import attrs
import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.utils import NestedKey

from ._checks import positive_int

__all__ = [
    "RecurrentBatcher",
    "recurrent_batches",
    "split_and_pad_trajectories",
    "trajectory_starts",
    "unpad_trajectories",
]

X = TypeVar("X", torch.Tensor, TensorDictBase)


def _positive(_inst: object, attribute: attrs.Attribute, value: object) -> None:
    positive_int(value, attribute.name)


def _key_tuple(keys: NestedKey | Sequence[NestedKey]) -> tuple[NestedKey, ...]:
    """A sequence of keys; a bare string is one key (not its characters)."""
    return (keys,) if isinstance(keys, str) else tuple(keys)


def trajectory_starts(dones: torch.Tensor) -> torch.Tensor:
    """Bool [T, N]: True where a trajectory starts (t = 0, or the previous step was done)."""
    dones = _dones_2d(dones)
    starts = torch.ones_like(dones)
    starts[1:] = dones[:-1]
    return starts


def split_and_pad_trajectories(x: X, dones: torch.Tensor) -> tuple[X, torch.Tensor]:
    """Split `x` [T, N, ...] at `dones` [T, N] into trajectories, zero-padded to length T.

    `dones[-1]` is treated as True. Trajectories are ordered env-major (all of env 0's, then
    env 1's, ...). Returns `(padded [T, n_traj, ...], masks [T, n_traj] bool)` where
    ``masks[i, j]`` is True for the first ``len_j`` steps of trajectory j. Same output as
    RSL-RL 5.4.2's ``split_and_pad_trajectories`` (which always pads to T), without its
    per-trajectory Python split; one host sync reads the number of trajectories.
    `x` may be a tensor or a TensorDict with batch size [T, N].
    """
    dones = _dones_2d(dones)
    num_steps, num_envs = dones.shape
    if tuple(x.shape[:2]) != (num_steps, num_envs):
        raise ValueError(
            f"split_and_pad_trajectories: x is {tuple(x.shape)}, dones {tuple(dones.shape)}; "
            "the first two dimensions must agree"
        )
    time_idx, traj_idx, n_traj = _layout(dones)
    flat = x.transpose(0, 1).flatten(0, 1)  # env-major [N*T, ...]
    if isinstance(x, TensorDictBase):
        padded = TensorDict(
            {},
            batch_size=[num_steps, n_traj],
            device=x.device,
        )
        for key, leaf in flat.items(include_nested=True, leaves_only=True):
            padded.set(key, _scatter(leaf, time_idx, traj_idx, num_steps, n_traj))
    else:
        padded = _scatter(flat, time_idx, traj_idx, num_steps, n_traj)
    masks = torch.zeros(num_steps, n_traj, dtype=torch.bool, device=dones.device)
    masks[time_idx, traj_idx] = True
    return padded, masks


def unpad_trajectories(x: X, masks: torch.Tensor) -> X:
    """Inverse of `split_and_pad_trajectories`: [T, n_traj, ...] -> [T, envs, ...].

    `masks` must cover whole envs (all trajectories of each env in the batch), as the
    mini-batches of `recurrent_batches` do.
    """
    if tuple(x.shape[:2]) != tuple(masks.shape):
        raise ValueError(
            f"unpad_trajectories: x is {tuple(x.shape)}, masks {tuple(masks.shape)}; "
            "the first two dimensions must agree"
        )
    num_steps = masks.shape[0]
    valid = x.transpose(0, 1)[masks.transpose(0, 1)]  # env-major [envs*T, ...]
    if valid.shape[0] % num_steps:
        raise ValueError(
            f"unpad_trajectories: {valid.shape[0]} valid steps are not a whole number of "
            f"envs of {num_steps} steps"
        )
    return valid.unflatten(0, (-1, num_steps)).transpose(0, 1)


@attrs.frozen(kw_only=True)
class RecurrentBatcher:
    """How a [T, N] rollout is cut into recurrent mini-batches along the env axis.

    `remainder="drop"`: mini-batch i holds envs ``[i*q, (i+1)*q)``, q = N // M, and the last
    ``N % M`` envs never train (RSL-RL 5.4.2). `"spread"`: every env is used; the first
    ``N % M`` mini-batches hold one env more. Batches are contiguous env slices in the same
    order every epoch and draw no random numbers (RSL-RL does not shuffle them either).
    """

    num_mini_batches: int = attrs.field(validator=_positive)
    num_epochs: int = attrs.field(validator=_positive)
    remainder: Literal["drop", "spread"] = attrs.field(
        default="drop", validator=attrs.validators.in_(("drop", "spread"))
    )
    pad_keys: tuple[NestedKey, ...] = attrs.field(default=("obs",), converter=_key_tuple)
    """Entries split into padded trajectories (every one must exist in the data)."""
    hidden_keys: tuple[NestedKey, ...] = attrs.field(default=("hidden",), converter=_key_tuple)
    """Stored recurrent states; keys absent from the data are skipped."""

    @classmethod
    def rsl_rl(cls, num_mini_batches: int, num_epochs: int, **kwargs) -> RecurrentBatcher:
        """RSL-RL 5.4.2's recurrent generator (envs beyond M * (N // M) dropped)."""
        return cls(
            num_mini_batches=num_mini_batches, num_epochs=num_epochs, remainder="drop", **kwargs
        )

    def env_slices(self, num_envs: int) -> list[tuple[int, int]]:
        """`(start, stop)` env range of each mini-batch of one epoch."""
        positive_int(num_envs, "num_envs")
        m = self.num_mini_batches
        if m > num_envs:
            raise ValueError(
                f"num_mini_batches={m} is larger than the number of envs {num_envs}; "
                "recurrent mini-batches split along envs"
            )
        q, r = divmod(num_envs, m)
        if self.remainder == "drop":
            sizes = [q] * m
        else:
            sizes = [q + 1] * r + [q] * (m - r)
        bounds, start = [], 0
        for size in sizes:
            bounds.append((start, start + size))
            start += size
        return bounds

    def batches(self, data: TensorDictBase, dones: torch.Tensor) -> Iterator[TensorDict]:
        """Yield one TensorDict (batch size []) per mini-batch, epoch-major, with entries

        - ``"data"`` [T, E]: every entry of the env slice, unpadded (actions, values, ...),
          copied (never a view of `data`);
        - ``"padded"`` [T, n_traj]: the `pad_keys` entries split at dones and zero-padded,
          under their original keys (e.g. ``("padded", "obs", "policy")``);
        - ``"masks"`` [T, n_traj] bool: valid steps of each trajectory;
        - ``"initial"`` [n_traj]: the `hidden_keys` entries at each trajectory's first step
          (the state entering it), under their original keys; keys absent from `data` are
          skipped;
        - ``"env_ids"`` [E] int64: the envs of this mini-batch.

        Trajectories are env-major. `unpad_trajectories(out, batch["masks"])` maps an RNN
        output [T, n_traj, ...] back to [T, E, ...].
        """
        if len(data.batch_size) != 2:
            raise ValueError(f"recurrent_batches: expected data [T, N], got {data.batch_size}")
        dones = _dones_2d(dones)
        if tuple(dones.shape) != tuple(data.batch_size):
            raise ValueError(
                f"recurrent_batches: dones {tuple(dones.shape)} do not match data "
                f"{tuple(data.batch_size)}"
            )
        present = set(data.keys(include_nested=True))
        missing = [k for k in self.pad_keys if k not in present]
        if missing:
            raise ValueError(f"recurrent_batches: pad_keys {missing} are not in the data")
        slices = self.env_slices(data.batch_size[1])
        return self._generate(data, dones, slices)

    def _generate(
        self, data: TensorDictBase, dones: torch.Tensor, slices: list[tuple[int, int]]
    ) -> Iterator[TensorDict]:
        pad_keys = list(self.pad_keys)
        hidden_keys = [k for k in self.hidden_keys if k in data.keys(include_nested=True)]
        padded, masks = split_and_pad_trajectories(data.select(*pad_keys), dones)
        starts = trajectory_starts(dones)
        starts_em = starts.transpose(0, 1)  # [N, T]
        initial = data.select(*hidden_keys).transpose(0, 1)[starts_em]  # [n_traj]
        # Trajectory offsets of each env slice; one small host read per call.
        per_env = torch.cat((starts_em.new_zeros(1, dtype=torch.long), starts_em.sum(1).cumsum(0)))
        per_env = per_env.tolist()
        device = dones.device
        for _epoch in range(self.num_epochs):
            for a, b in slices:
                first, last = per_env[a], per_env[b]
                env_ids = torch.arange(a, b, device=device)
                # A copy, not a view: usable by autograd even if `data` was written under
                # torch.inference_mode() (as the other generators' gathers are).
                sliced = data.apply(
                    lambda x, ids=env_ids: x.index_select(1, ids),
                    batch_size=[data.batch_size[0], b - a],
                )
                yield TensorDict(
                    {
                        "data": sliced,
                        "padded": padded[:, first:last],
                        "masks": masks[:, first:last],
                        "initial": initial[first:last],
                        "env_ids": env_ids,
                    },
                    batch_size=[],
                )


def recurrent_batches(
    data: TensorDictBase,
    dones: torch.Tensor,
    num_mini_batches: int,
    num_epochs: int,
    remainder: Literal["drop", "spread"] = "drop",
    pad_keys: Sequence[NestedKey] = ("obs",),
    hidden_keys: Sequence[NestedKey] = ("hidden",),
) -> Iterator[TensorDict]:
    """Function form of ``RecurrentBatcher(...).batches(data, dones)``."""
    batcher = RecurrentBatcher(
        num_mini_batches=num_mini_batches,
        num_epochs=num_epochs,
        remainder=remainder,
        pad_keys=pad_keys,
        hidden_keys=hidden_keys,
    )
    return batcher.batches(data, dones)


def _dones_2d(dones: torch.Tensor) -> torch.Tensor:
    if dones.dim() == 3 and dones.shape[-1] == 1:  # RSL-RL's [T, N, 1]
        dones = dones.squeeze(-1)
    if dones.dim() != 2:
        raise ValueError(f"dones must be [T, N], got {tuple(dones.shape)}")
    return dones.bool()


def _layout(dones: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Env-major (time index, trajectory index) of every step, and the trajectory count."""
    starts_em = trajectory_starts(dones).transpose(0, 1).reshape(-1)  # [N*T]
    traj_idx = starts_em.long().cumsum(0) - 1
    n_traj = int(traj_idx[-1].item()) + 1
    positions = torch.arange(starts_em.numel(), device=dones.device)
    start_pos = positions[starts_em]  # flat position where each trajectory starts
    time_idx = positions - start_pos[traj_idx]
    return time_idx, traj_idx, n_traj


def _scatter(
    flat: torch.Tensor, time_idx: torch.Tensor, traj_idx: torch.Tensor, steps: int, n: int
) -> torch.Tensor:
    out = flat.new_zeros((steps, n, *flat.shape[1:]))
    out[time_idx, traj_idx] = flat
    return out
