"""Network builders shared by the learners."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from torch import nn

__all__ = ["ACTIVATIONS", "activation_module", "mlp"]

ACTIVATIONS: dict[str, type[nn.Module]] = {
    "elu": nn.ELU,
    "selu": nn.SELU,
    "relu": nn.ReLU,
    "lrelu": nn.LeakyReLU,
    "leaky_relu": nn.LeakyReLU,
    "tanh": nn.Tanh,
    "sigmoid": nn.Sigmoid,
    "silu": nn.SiLU,
    "swish": nn.SiLU,
    "crelu": nn.CELU,
    "gelu": nn.GELU,
    "mish": nn.Mish,
    "softplus": nn.Softplus,
    "identity": nn.Identity,
}
"""Activation names accepted by `mlp` (RSL-RL's names plus a few)."""


def activation_module(name: str) -> nn.Module:
    """A fresh activation module for `name` (see `ACTIVATIONS`)."""
    try:
        return ACTIVATIONS[name.lower()]()
    except (KeyError, AttributeError):
        raise ValueError(
            f"unknown activation {name!r}; expected one of {sorted(ACTIVATIONS)}"
        ) from None


def mlp(
    in_dim: int,
    hidden: Sequence[int],
    out_dim: int,
    activation: str = "elu",
    *,
    last_activation: str | None = None,
) -> nn.Sequential:
    """A multi-layer perceptron `in_dim -> hidden... -> out_dim`.

    Linear layers alternate with activations; the last layer is linear unless
    `last_activation` is given. Layers are registered as "0", "1", ... exactly as in
    `rsl_rl.modules.MLP`, so state dicts are interchangeable (`0.weight`, `2.weight`, ...).
    Input `(..., in_dim)`, output `(..., out_dim)`. `hidden` may be empty (one linear layer).
    """
    for name, v in (("in_dim", in_dim), ("out_dim", out_dim)):
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    hidden = list(hidden)
    if any(not isinstance(h, int) or isinstance(h, bool) or h <= 0 for h in hidden):
        raise ValueError(f"hidden sizes must be positive ints, got {hidden!r}")
    layers: list[nn.Module] = []
    dims = [in_dim, *hidden]
    for a, b in pairwise(dims):
        layers += [nn.Linear(a, b), activation_module(activation)]
    layers.append(nn.Linear(dims[-1], out_dim))
    if last_activation is not None:
        layers.append(activation_module(last_activation))
    return nn.Sequential(*layers)
