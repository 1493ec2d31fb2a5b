"""`runner.profile`: per-iteration seconds of the runner's phases, synchronized between them.

The runner marks the end of each phase of an iteration with `clock.lap(name)` (`inference`,
`env`, `storage`, `returns`, `update`). When profiling, `lap` waits for the device
(`torch.cuda.synchronize`), books the seconds since the previous lap to `name` and starts the
next phase. On more than one rank the iteration runs inside `clock.collectives()`, that is
`unilab_dist.accounting.timing(device)`: unilab_dist times each collective between two waits,
and `lap` books those seconds to `sync`, out of the phase they ran in. With profile off, `lap`
returns at once and `collectives()` times nothing: an unprofiled run never waits.

What happens inside a phase is for a torch profiler: the env's step and the learners' updates
open named ranges (`unilab/env_step`, `unilab/env_physics`, `unilab/update`, ...) while one
records (docs/integration.md, "Profiling").

`metrics(iteration_s)` gives `profile/<phase>_s` for each phase of the iteration and
`profile/other_s`, the iteration's seconds less the phases'. The values are the rank's own
(the runner logs rank 0's). Synchronizing serializes the GPU: a profiled iteration is slower.
"""

from __future__ import annotations

import contextlib
import time

import torch

import unilab_dist

__all__ = ["PhaseClock"]


class PhaseClock:
    """Phase seconds of one iteration on one rank (see the module docstring).

    `enabled`: runner.profile. `collectives`: time the collectives as the phase `sync`
    (more than one rank).
    """

    def __init__(self, device: torch.device, enabled: bool, collectives: bool = False) -> None:
        self.device = device
        self.enabled = enabled
        self.timed_collectives = enabled and collectives
        self.totals: dict[str, float] = {}
        self._last = 0.0
        self._collective_s = 0.0  # the accounting's timed seconds at the last lap

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def start(self) -> float:
        """Open an iteration: clear the totals; returns its start (`time.perf_counter`)."""
        if self.enabled:
            self._sync()
            self.totals = {}
            self._collective_s = _timed_seconds()
        self._last = time.perf_counter()
        return self._last

    def collectives(self) -> contextlib.AbstractContextManager:
        """The context the iteration's work runs in: collectives timed when the clock times
        them, else nothing."""
        if self.timed_collectives:
            return unilab_dist.accounting.timing(self.device)
        return contextlib.nullcontext()

    def lap(self, name: str) -> None:
        """Close the phase `name`: the seconds since the previous lap, less timed collectives."""
        if not self.enabled:
            return
        self._sync()
        now = time.perf_counter()
        pending = 0.0
        if self.timed_collectives:
            total = _timed_seconds()
            pending, self._collective_s = total - self._collective_s, total
            self.totals["sync"] = self.totals.get("sync", 0.0) + pending
        self.totals[name] = self.totals.get(name, 0.0) + now - self._last - pending
        self._last = now

    def metrics(self, iteration_s: float) -> dict[str, float]:
        """{profile/<phase>_s} of the iteration, and profile/other_s = iteration_s less them."""
        if not self.enabled:
            return {}
        totals = dict(self.totals)
        if self.timed_collectives:
            totals.setdefault("sync", 0.0)
        out = {f"profile/{name}_s": seconds for name, seconds in totals.items()}
        out["profile/other_s"] = iteration_s - sum(totals.values())
        return out


def _timed_seconds() -> float:
    return sum(unilab_dist.accounting.seconds().values())
