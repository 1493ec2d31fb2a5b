"""The episode means a curriculum reads and the learner metrics' names in the log; the
episode statistics themselves are `unilab_integration._episodes`' (training, evaluation and
play share them)."""

from __future__ import annotations

from .._episodes import EpisodeStats, means_from_sums

__all__ = ["EpisodeStats", "curriculum_metrics", "learner_key", "means_from_sums"]


def curriculum_metrics(means: dict[str, float], keys: tuple[str, ...]) -> dict[str, float]:
    """The episode means a curriculum reads, under the env's own names.

    `means` holds `episode/<x>` (return, length) and `episode_term/<term>` entries; a curriculum
    names its metrics as the env does (`"return"`, `"track_lin_vel"`). A metric of which no
    episode ended this iteration is NaN, which a curriculum treats as "no change".
    """
    out = {}
    for key in keys:
        value = means.get(f"episode_term/{key}", means.get(f"episode/{key}", float("nan")))
        out[key] = value
    return out


def learner_key(key: str) -> str:
    """Learner metric names in the log: `lr` and `kl` top level, the rest under `learner/`."""
    if key in ("lr", "kl"):
        return key
    if key == "learning_rate":
        return "lr"
    return key if key.startswith("learner/") else f"learner/{key}"
