"""Domain randomization drawn per reset (friction, masses, actuator gains) and pushes: the
public home of `DomainRandomization` and `Randomizer`, which live in the env core
(`_core/randomization.py`, beside the env that applies them)."""

from __future__ import annotations

from unilab_envs._core.randomization import DomainRandomization as DomainRandomization
from unilab_envs._core.randomization import Randomizer as Randomizer

__all__ = ["DomainRandomization", "Randomizer"]
