"""Feed-forward and time-step mini-batch generators over a [T, N] rollout."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import attrs
import torch
from tensordict import TensorDictBase

from ._checks import gather, positive_int

__all__ = ["FeedForwardBatcher", "feed_forward_batches", "timestep_batches"]

Shuffle = Literal["per_iteration", "per_epoch", "none"]
Remainder = Literal["drop", "spread"]


def _positive(_inst: object, attribute: attrs.Attribute, value: object) -> None:
    positive_int(value, attribute.name)


@attrs.frozen(kw_only=True)
class FeedForwardBatcher:
    """How a flat rollout of `num_samples = T*N` entries is cut into mini-batches.

    Flat index = ``t * N + env`` (``data.flatten(0, 1)``). Batches come epoch-major:
    ``num_epochs`` x ``num_mini_batches`` index tensors (int64) on the requested device.

    - `shuffle="per_iteration"`: one random permutation drawn (lazily, at the first batch) per
      call and reused by every epoch, so all epochs see the same mini-batches in the same order
      (RSL-RL 5.4.2). `"per_epoch"`: a fresh permutation each epoch. `"none"`: in order.
    - `remainder="drop"`: every mini-batch has ``num_samples // M`` samples and the flat tail
      ``[M * (num_samples // M), num_samples)`` is never used (RSL-RL: the last envs of the
      last step). `"spread"`: every sample is used once per epoch; the first
      ``num_samples % M`` mini-batches hold one sample more.

    With `shuffle="per_iteration"` and `remainder="drop"` the indices equal RSL-RL 5.4.2's
    ``torch.randperm(M * (N*T // M))`` slices for the same generator state.
    """

    num_mini_batches: int = attrs.field(validator=_positive)
    num_epochs: int = attrs.field(validator=_positive)
    shuffle: Shuffle = attrs.field(
        default="per_iteration",
        validator=attrs.validators.in_(("per_iteration", "per_epoch", "none")),
    )
    remainder: Remainder = attrs.field(
        default="drop", validator=attrs.validators.in_(("drop", "spread"))
    )

    @classmethod
    def rsl_rl(cls, num_mini_batches: int, num_epochs: int) -> FeedForwardBatcher:
        """RSL-RL 5.4.2's feed-forward generator: one permutation per update, tail dropped."""
        return cls(
            num_mini_batches=num_mini_batches,
            num_epochs=num_epochs,
            shuffle="per_iteration",
            remainder="drop",
        )

    def batch_sizes(self, num_samples: int) -> list[int]:
        """Sizes of the `num_mini_batches` mini-batches of one epoch."""
        self._check(num_samples)
        q, r = divmod(num_samples, self.num_mini_batches)
        if self.remainder == "drop":
            return [q] * self.num_mini_batches
        return [q + 1] * r + [q] * (self.num_mini_batches - r)

    def indices(
        self,
        num_samples: int,
        generator: torch.Generator | None = None,
        device: torch.device | str | None = None,
    ) -> Iterator[torch.Tensor]:
        """Yield the flat index tensor of each mini-batch, epoch-major.

        `generator` (on `device`) drives the permutations; None uses torch's default generator
        of that device, as RSL-RL does. Nothing is drawn before the first `next()`.
        """
        sizes = self.batch_sizes(num_samples)  # validates now, not at the first next()
        device = torch.device("cpu") if device is None else torch.device(device)
        return self._generate(sizes, generator, device)

    def _generate(
        self, sizes: list[int], generator: torch.Generator | None, device: torch.device
    ) -> Iterator[torch.Tensor]:
        used = sum(sizes)
        perm: torch.Tensor | None = None
        for _epoch in range(self.num_epochs):
            if self.shuffle == "none":
                perm = torch.arange(used, device=device)
            elif perm is None or self.shuffle == "per_epoch":
                perm = torch.randperm(used, generator=generator, device=device)
            yield from torch.split(perm, sizes)

    def batches(
        self, data: TensorDictBase, generator: torch.Generator | None = None
    ) -> Iterator[TensorDictBase]:
        """Yield TensorDict mini-batches [B] of `data` ([T, N], flattened, or already [T*N])."""
        flat = _flatten(data)
        for idx in self.indices(flat.batch_size[0], generator=generator, device=flat.device):
            yield gather(flat, idx)

    def _check(self, num_samples: int) -> None:
        positive_int(num_samples, "num_samples")
        if self.num_mini_batches > num_samples:
            raise ValueError(
                f"num_mini_batches={self.num_mini_batches} is larger than the number of "
                f"samples {num_samples}; every mini-batch needs at least one sample"
            )


def feed_forward_batches(
    num_samples: int,
    num_mini_batches: int,
    num_epochs: int,
    shuffle: Shuffle = "per_iteration",
    remainder: Remainder = "drop",
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
) -> Iterator[torch.Tensor]:
    """Function form of ``FeedForwardBatcher(...).indices(num_samples, generator, device)``."""
    batcher = FeedForwardBatcher(
        num_mini_batches=num_mini_batches,
        num_epochs=num_epochs,
        shuffle=shuffle,
        remainder=remainder,
    )
    return batcher.indices(num_samples, generator=generator, device=device)


def timestep_batches(data: TensorDictBase, num_epochs: int = 1) -> Iterator[TensorDictBase]:
    """Distillation batches: ``data[t]`` ([N]) for t = 0..T-1, in order, repeated per epoch."""
    positive_int(num_epochs, "num_epochs")
    if len(data.batch_size) < 2:
        raise ValueError(f"timestep_batches: expected data [T, N], got {tuple(data.batch_size)}")
    for _epoch in range(num_epochs):
        for t in range(data.batch_size[0]):
            yield data[t]


def _flatten(data: TensorDictBase) -> TensorDictBase:
    if not isinstance(data, TensorDictBase):
        raise TypeError(f"expected a TensorDict, got {type(data).__name__}")
    if len(data.batch_size) == 2:
        return data.flatten(0, 1)
    if len(data.batch_size) == 1:
        return data
    raise ValueError(f"expected data [T, N] or [T*N], got batch size {tuple(data.batch_size)}")
