"""Episode statistics accumulated on the device and reduced across ranks once per iteration."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

__all__ = ["EpisodeStats"]


class EpisodeStats:
    """Sums of finished episodes' return, length and per-term sums (float64, on `device`).

    `add(step)` reads the env step TensorDict (`"done"` [N], `("episode", name)` [N], valid
    where done) without a host sync; `local_sums()` returns plain floats for one reduction:
    `episode/count`, `episode/return_sum`, `episode/length_sum` and `episode_term/<name>_sum`.
    Count-weighted global means follow as sum over ranks / count over ranks.
    """

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._names: list[str] = []
        self._sums: torch.Tensor | None = None  # [2 + terms]: return, length, terms...
        self._count = torch.zeros((), dtype=torch.float64, device=device)

    def _ensure(self, step: TensorDictBase) -> None:
        if self._sums is not None:
            return
        episode = step.get("episode", None)
        keys = [] if episode is None else sorted(episode.keys())
        terms = [k for k in keys if k not in ("return", "length")]
        self._names = ["return", "length", *terms]
        self._sums = torch.zeros(len(self._names), dtype=torch.float64, device=self.device)

    def add(self, step: TensorDictBase) -> None:
        self._ensure(step)
        assert self._sums is not None
        if "episode" not in step:
            return
        done = step["done"].reshape(-1).to(torch.float64)
        episode = step["episode"]
        cols = [episode[n].reshape(-1) for n in self._names]
        if len({c.dtype for c in cols}) == 1:  # the usual case: one stack, one cast
            values = torch.stack(cols).to(torch.float64)
        else:  # mixed dtypes: cast each (exact for any integer column)
            values = torch.stack([c.to(torch.float64) for c in cols])
        self._sums += values @ done
        self._count += done.sum()

    def reset(self) -> None:
        if self._sums is not None:
            self._sums.zero_()
        self._count.zero_()

    def local_sums(self) -> dict[str, float]:
        """This rank's sums since the last reset (one host read)."""
        if self._sums is None:
            return {"episode/count": 0.0, "episode/return_sum": 0.0, "episode/length_sum": 0.0}
        values = torch.cat([self._count.reshape(1), self._sums]).tolist()
        out = {"episode/count": values[0]}
        for name, value in zip(self._names, values[1:]):
            key = (
                f"episode/{name}_sum"
                if name in ("return", "length")
                else f"episode_term/{name}_sum"
            )
            out[key] = value
        return out


def means_from_sums(sums: dict[str, float], prefix: str = "episode") -> dict[str, float]:
    """Global means from globally summed `EpisodeStats.local_sums()` (NaN when no episode ended).

    `prefix` names the family: "episode" (training episodes) or "eval" (`PolicyEvaluator`'s
    `eval/count`, `eval/<x>_sum`, `eval_term/<t>_sum`).
    """
    count = sums.get(f"{prefix}/count", 0.0)
    out = {f"{prefix}/count": count}
    for key, value in sums.items():
        if key.endswith("_sum") and key.startswith((f"{prefix}/", f"{prefix}_term/")):
            out[key[: -len("_sum")]] = value / count if count > 0 else float("nan")
    return out


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
