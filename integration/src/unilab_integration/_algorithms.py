"""The algorithms the CLI knows: their configs per preset, their learners and runner kind.

unilab_algos is imported lazily (inside the functions) so that `import unilab_integration`
stays cheap and side-effect free.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

__all__ = ["ALGORITHMS", "AlgorithmSpec", "algorithm_spec", "algos_class"]


@attrs.frozen(kw_only=True)
class AlgorithmSpec:
    """One algorithm: `kind` is "on-policy" or "off-policy"; `presets` it supports."""

    name: str
    kind: str
    description: str
    presets: tuple[str, ...]
    _config_factory: Callable[[str], Any] = attrs.field(alias="config_factory")

    def make_config(self, preset: str) -> Any:
        if preset not in self.presets:
            raise ValueError(
                f"preset '{preset}' is not available for --algo {self.name}; "
                f"its presets: {', '.join(self.presets)}"
            )
        return self._config_factory(preset)


def algos_class(name: str) -> Any:
    """`unilab_algos.<name>`, imported on first use."""
    import unilab_algos

    return getattr(unilab_algos, name)


def _ppo_config(preset: str) -> Any:
    from unilab_algos import PPOConfig

    return PPOConfig.rsl_rl() if preset == "rsl_rl" else PPOConfig()


def _distill_config(preset: str) -> Any:
    DistillationConfig = algos_class("DistillationConfig")

    if preset == "rsl_rl":
        return DistillationConfig.rsl_rl()
    return DistillationConfig()


def _fastsac_config(preset: str) -> Any:
    return algos_class("FastSACConfig")()


ALGORITHMS: dict[str, AlgorithmSpec] = {
    "ppo": AlgorithmSpec(
        name="ppo",
        kind="on-policy",
        description="Proximal Policy Optimization (on-policy, RSL-RL compatible preset)",
        presets=("default", "rsl_rl"),
        config_factory=_ppo_config,
    ),
    "distill": AlgorithmSpec(
        name="distill",
        kind="on-policy",
        description="Student-teacher distillation from a PPO checkpoint (runner.teacher=PATH)",
        presets=("default", "rsl_rl"),
        config_factory=_distill_config,
    ),
    "fastsac": AlgorithmSpec(
        name="fastsac",
        kind="off-policy",
        description="FastSAC (off-policy, replay shard per rank, Holosoma defaults)",
        presets=("default",),
        config_factory=_fastsac_config,
    ),
}


def algorithm_spec(name: str) -> AlgorithmSpec:
    """The spec of algorithm `name` (ValueError listing the known ones otherwise)."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ValueError(
            f"unknown algorithm '{name}'; algorithms: {', '.join(ALGORITHMS)}"
        ) from None
