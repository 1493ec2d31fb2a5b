"""Episode statistics: the one accumulator of training's episode metrics, the periodic
evaluation (`runner.eval.interval`), `unilab play` and `unilab eval`."""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["EpisodeStats", "means_from_sums"]


class EpisodeStats:
    """Sums over the episodes that end in a stream of env steps, on `device` in float64.

    `add(step)` reads an env step TensorDict (`"done"` [N] bool, `("episode", name)` [N]:
    `return`, `length` and the task's per-term episode sums, valid where done) without a host
    sync; `local_sums(prefix)` returns plain floats for one reduction: `<prefix>/count`,
    `<prefix>/return_sum`, `<prefix>/length_sum` and `<prefix>_term/<name>_sum`, the terms in
    the env's order. Count-weighted global means follow as sum over ranks / count over ranks
    (`means_from_sums`).

    Which ended episodes count: every one, or with `first_only` each world's first (fresh
    episodes from the reset: no bias toward short, failed ones). With `num_envs` given,
    `counted` [N] bool marks the worlds that have finished an episode (`first_only` needs it).
    With `keep`, `values[name]` also lists each counted episode's value, in the order they
    ended (world order within a step); that reads the host once per step.
    """

    def __init__(
        self,
        device: Any,
        *,
        num_envs: int | None = None,
        first_only: bool = False,
        keep: bool = False,
    ) -> None:
        if first_only and num_envs is None:
            raise ValueError("EpisodeStats(first_only=True) needs num_envs, the worlds it follows")
        self.device = device
        self.first_only = first_only
        self.keep = keep
        self.counted: torch.Tensor | None = None
        if num_envs is not None:
            self.counted = torch.zeros(num_envs, dtype=torch.bool, device=device)
        self.names: list[str] = []
        self.values: dict[str, list[float]] = {}
        self._sums: torch.Tensor | None = None  # [2 + terms]: return, length, terms...
        self._count = torch.zeros((), dtype=torch.float64, device=device)

    def ended(self, step: Any) -> torch.Tensor:
        """[N] bool: the worlds whose episode ended in `step` and counts (marks them counted)."""
        done = step["done"]
        if self.counted is None:
            return done
        ended = done & ~self.counted if self.first_only else done
        self.counted |= done
        return ended

    def add(self, step: Any) -> torch.Tensor:
        """Add the counted episodes that end in `step`; returns `ended(step)`."""
        ended = self.ended(step)
        if "episode" not in step.keys():  # noqa: SIM118 (TensorDict has no `in`)
            return ended
        episode = step["episode"]
        if self._sums is None:
            terms = [k for k in episode.keys() if k not in ("return", "length")]  # noqa: SIM118
            self.names = ["return", "length", *terms]
            self._sums = torch.zeros(len(self.names), dtype=torch.float64, device=self.device)
        mask = ended.reshape(-1).to(torch.float64)
        cols = [episode[n].reshape(-1) for n in self.names]
        if len({c.dtype for c in cols}) == 1:  # the usual case: one stack, one cast
            values = torch.stack(cols).to(torch.float64)
        else:  # mixed dtypes: cast each (exact for any integer column)
            values = torch.stack([c.to(torch.float64) for c in cols])
        self._sums += values @ mask
        self._count += mask.sum()
        if self.keep and bool(ended.any()):
            rows = values[:, ended.reshape(-1)].tolist()
            for name, row in zip(self.names, rows):
                self.values.setdefault(name, []).extend(row)
        return ended

    def reset(self) -> None:
        """Zero the sums (the next iteration's); `counted` and `values` stay."""
        if self._sums is not None:
            self._sums.zero_()
        self._count.zero_()

    def local_sums(self, prefix: str = "episode") -> dict[str, float]:
        """This rank's sums since the last reset (one host read)."""
        if self._sums is None:
            return {
                f"{prefix}/count": 0.0,
                f"{prefix}/return_sum": 0.0,
                f"{prefix}/length_sum": 0.0,
            }
        values = torch.cat([self._count.reshape(1), self._sums]).tolist()
        out = {f"{prefix}/count": values[0]}
        for name, value in zip(self.names, values[1:]):
            group = prefix if name in ("return", "length") else f"{prefix}_term"
            out[f"{group}/{name}_sum"] = value
        return out


def means_from_sums(sums: dict[str, float], prefix: str = "episode") -> dict[str, float]:
    """Global means from globally summed `EpisodeStats.local_sums(prefix)` (NaN when no
    episode ended): `<prefix>/count`, `<prefix>/<x>` and `<prefix>_term/<t>`.

    `prefix` names the family: "episode" (training episodes) or "eval" (the periodic
    evaluation's).
    """
    count = sums.get(f"{prefix}/count", 0.0)
    out = {f"{prefix}/count": count}
    for key, value in sums.items():
        if key.endswith("_sum") and key.startswith((f"{prefix}/", f"{prefix}_term/")):
            out[key[: -len("_sum")]] = value / count if count > 0 else float("nan")
    return out
