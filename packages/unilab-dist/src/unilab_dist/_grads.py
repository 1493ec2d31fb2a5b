"""Flat gradient all-reduce: `GradAllReduce`, the `grad_sync` of UniLab's learners.

RSL-RL's `PPO.reduce_parameters` concatenates the grads that are not None, all-reduces them and
writes them back. If ranks disagree on which grads are None (a branch of the loss not taken on
one rank), their flat buffers have different layouts and the ranks silently mix unrelated
numbers, or hang. `GradAllReduce` instead packs *zeros* for every parameter whose `.grad` is
None, so every rank contributes the same layout. By default every rank then ends with a
(possibly zero) averaged grad for every parameter; with `unused_grads="none"` a presence flag
per parameter rides in the same collective and a grad that no rank produced stays None, as
with DistributedDataParallel.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

import torch
import torch.distributed as dist

from ._collectives import comm_device, run_collective
from ._context import is_distributed

__all__ = ["GradAllReduce"]

_DEFAULT_BUCKET_BYTES = 256 * 2**20


class GradAllReduce:
    """Average `.grad` of a set of parameters across ranks through reused flat buffers.

    `grad_sync(params, extra)`:
      - params: the parameters, as a sequence (actor, critic, RND predictor, ... concatenated),
        a module, `module.named_parameters()` or a {name: parameter} mapping (the named forms
        let errors name the parameter); duplicates are synced once, parameters with
        requires_grad=False are skipped. All on one device.
      - extra: optional 1-D floating tensor of small values to average alongside (e.g. the KL,
        shape (k,)); it rides in the last gradient bucket, so no extra collective.
      - returns the averaged `extra` (same device/dtype as given) or None.

    Grads are averaged (sum / world_size). A None grad counts as zeros (on every rank), so
    ranks never disagree on the layout. `unused_grads` says what a parameter whose grad is None
    on *every* rank ends with:

      - "zeros" (default): a zero grad on every rank (the optimizer still steps it: Adam's
        moments decay, AdamW's weight decay shrinks it);
      - "none": grad None on every rank, so the optimizer skips it, as DistributedDataParallel
        with `find_unused_parameters=True` does. One presence flag per parameter rides in the
        last bucket (no extra collective), and reading the flags is one device-to-host copy:
        not for a call inside a CUDA graph.

    A parameter whose grad is None on some ranks only gets the average with zeros in both
    modes. Sparse grads (`nn.Embedding(sparse=True)`) are refused with a TypeError naming the
    parameter, on every call and with or without a process group (one behaviour for one
    process and many).

    Parameters are packed in order into buckets of at most `bucket_bytes` (a single parameter
    larger than that gets its own bucket) with one all-reduce per bucket; the default (256 MiB)
    keeps RL-sized models in one collective. Buffers are reused across calls with the same
    layout. Without a process group it is the identity on the grads (Nones are still left None)
    and returns `extra` unchanged.
    """

    def __init__(
        self,
        group: dist.ProcessGroup | None = None,
        bucket_bytes: int = _DEFAULT_BUCKET_BYTES,
        *,
        unused_grads: Literal["zeros", "none"] = "zeros",
    ) -> None:
        if isinstance(bucket_bytes, bool) or not isinstance(bucket_bytes, int):
            raise TypeError(f"bucket_bytes must be an int, got {type(bucket_bytes).__name__}")
        if bucket_bytes < 1:
            raise ValueError(f"bucket_bytes must be >= 1, got {bucket_bytes}")
        if unused_grads not in ("zeros", "none"):
            raise ValueError(f"unused_grads must be 'zeros' or 'none', got {unused_grads!r}")
        self.group = group
        self.bucket_bytes = bucket_bytes
        self.unused_grads = unused_grads
        self._buffers: dict[tuple, list[torch.Tensor]] = {}

    def _layout(
        self, params: list[torch.Tensor], extra_dtype: torch.dtype | None
    ) -> list[tuple[torch.dtype, list[int]]]:
        """Buckets as (dtype, indices into params); consecutive params of one dtype share one."""
        buckets: list[tuple[torch.dtype, list[int]]] = []
        size = 0
        for i, p in enumerate(params):
            nbytes = p.numel() * p.element_size()
            if buckets and buckets[-1][0] == p.dtype and size + nbytes <= self.bucket_bytes:
                buckets[-1][1].append(i)
                size += nbytes
            else:
                buckets.append((p.dtype, [i]))
                size = nbytes
        if extra_dtype is not None and (not buckets or buckets[-1][0] != extra_dtype):
            buckets.append((extra_dtype, []))
        return buckets

    def __call__(
        self, params: ParamsLike, extra: torch.Tensor | None = None
    ) -> torch.Tensor | None:
        plist = self._unique(params)
        if extra is not None:
            if not isinstance(extra, torch.Tensor) or extra.dim() != 1:
                raise ValueError(f"extra must be a 1-D tensor, got {_describe(extra)}")
            if not extra.is_floating_point():
                raise TypeError(f"extra must be floating point, got {extra.dtype}")
        if not is_distributed(self.group):
            return extra
        world = dist.get_world_size(self.group)
        if plist:
            device = plist[0].device
            for p in plist:
                if p.device != device:
                    raise ValueError(
                        f"all parameters must be on one device: {p.device} != {device}"
                    )
        else:
            device = comm_device(self.group)
        keep_none = self.unused_grads == "none"
        present = [p.grad is not None for p in plist]
        if keep_none:  # zeros to pack and to receive the average; a grad only if some rank had one
            grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in plist]
        else:
            for p in plist:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
            grads = [p.grad for p in plist]
        extra_numel = 0 if extra is None else extra.numel()
        flag_numel = len(plist) if keep_none else 0
        tail = extra_numel + flag_numel
        layout = self._layout(plist, None if extra is None else extra.dtype)
        key = (
            device,
            extra_numel,
            flag_numel,
            tuple((dt, tuple(plist[i].numel() for i in idx)) for dt, idx in layout),
        )
        buffers = self._buffers.get(key)
        if buffers is None:
            buffers = [
                torch.empty(
                    sum(plist[i].numel() for i in idx) + (tail if b == len(layout) - 1 else 0),
                    dtype=dt,
                    device=device,
                )
                for b, (dt, idx) in enumerate(layout)
            ]
            self._buffers = {key: buffers}  # keep one layout: the learner's
        extra_out = None
        for b, ((_dt, idx), buf) in enumerate(zip(layout, buffers, strict=True)):
            bucket_grads = [grads[i] for i in idx]
            sizes = [g.numel() for g in bucket_grads]
            n = sum(sizes)
            if bucket_grads:
                torch.cat([g.reshape(-1) for g in bucket_grads], out=buf[:n])
            last = b == len(layout) - 1
            if last and extra is not None:
                buf[n : n + extra_numel].copy_(extra.detach().reshape(-1))
            if last and keep_none:
                buf[n + extra_numel :].copy_(torch.tensor(present, dtype=buf.dtype))
            run_collective(
                "grad_all_reduce",
                buf.numel() * buf.element_size(),
                lambda buf=buf: dist.all_reduce(buf, dist.ReduceOp.SUM, self.group),
            )
            buf.div_(world)
            if bucket_grads:
                views = [
                    v.view_as(g) for v, g in zip(buf[:n].split(sizes), bucket_grads, strict=True)
                ]
                torch._foreach_copy_(bucket_grads, views)
            if last and extra is not None:
                extra_out = buf[n : n + extra_numel].to(
                    device=extra.device, dtype=extra.dtype, copy=True
                )
            if last and keep_none:
                anywhere = (buf[n + extra_numel :] > 0).tolist()  # the one host sync
                for p, g, here, there in zip(plist, grads, present, anywhere, strict=True):
                    if there and not here:  # another rank's grad: ours was zeros
                        p.grad = g
        return extra_out

    @staticmethod
    def _unique(params: ParamsLike) -> list[torch.Tensor]:
        seen: set[int] = set()
        out = []
        for label, p in _labelled(params):
            if p.grad is not None and p.grad.layout != torch.strided:
                raise TypeError(
                    f"{label} (shape {tuple(p.shape)}) has a {p.grad.layout} grad: "
                    "GradAllReduce averages dense grads only (nn.Embedding(sparse=True) makes "
                    "sparse ones; use sparse=False)"
                )
            if id(p) not in seen and p.requires_grad:  # frozen params (RND target) never get grads
                seen.add(id(p))
                out.append(p)
        return out


ParamsLike = (
    Iterable[torch.Tensor]
    | Iterable[tuple[str, torch.Tensor]]
    | Mapping[str, torch.Tensor]
    | torch.nn.Module
)


def _labelled(params: ParamsLike) -> list[tuple[str, torch.Tensor]]:
    """(how an error names it, parameter) for each of `params`: its name where one is given
    (a module, named_parameters(), a mapping), else `params[i]`."""
    if isinstance(params, torch.Tensor):
        raise TypeError("params must be a sequence of parameters, not a single tensor")
    if isinstance(params, torch.nn.Module):
        items = list(params.named_parameters())
    elif isinstance(params, Mapping):
        items = list(params.items())
    else:
        items = [
            (p[0], p[1])
            if isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str)
            else (f"params[{i}]", p)
            for i, p in enumerate(params)
        ]
    for _, p in items:
        if not isinstance(p, torch.Tensor):
            raise TypeError(f"params must hold tensors, got {type(p).__name__}")
    return items


def _describe(x: object) -> str:
    if isinstance(x, torch.Tensor):
        return f"tensor of shape {tuple(x.shape)}"
    return type(x).__name__
