"""Collective accounting: how many collectives and bytes each named phase of a trainer moves.

    from unilab_dist import accounting

    accounting.reset()
    with accounting.phase("update"):
        grad_sync(params, None)          # recorded under "update"
    accounting.snapshot()  # {"update": {"collectives": 1, "bytes": 1_048_576}}

Every unilab_dist collective that really runs (a process group with more than one rank) records
one entry; the identity paths at world size 1 record nothing. Bytes are the payload of the
collective on this rank (elements x element size), not the wire traffic of the algorithm.

Timing, for profiling: inside `with accounting.timing(device):` each collective also waits for
`device` before and after it and adds its seconds to its phase (`seconds()`); the seconds
include waiting for the slowest rank. The waits serialize the device, so timing is off unless
asked for; a collective issued while a CUDA stream is being captured is counted, not timed.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import torch

__all__ = ["DEFAULT_PHASE", "CollectiveAccounting", "accounting"]

DEFAULT_PHASE = "default"


class CollectiveAccounting:
    """Counts collectives and payload bytes per named phase (process-wide, thread-safe).

    Phases nest: the innermost `phase(name)` receives the records. Outside any phase the
    records go to `DEFAULT_PHASE` ("default").
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local = threading.local()
        self._counts: dict[str, list[int]] = {}
        self._seconds: dict[str, float] = {}
        self.timed_device: torch.device | None = None
        """The device `timing` waits for around each collective; None: collectives untimed."""

    def _stack(self) -> list[str]:
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    @property
    def current_phase(self) -> str:
        """The phase new records go to."""
        stack = self._stack()
        return stack[-1] if stack else DEFAULT_PHASE

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Attribute the collectives run inside the block to phase `name`."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"phase name must be a non-empty str, got {name!r}")
        stack = self._stack()
        stack.append(name)
        try:
            yield
        finally:
            stack.pop()

    @contextlib.contextmanager
    def timing(self, device: torch.device | str) -> Iterator[None]:
        """Time every collective run inside the block (process-wide, see the module docstring):
        each waits for `device` (`torch.cuda.synchronize` on a CUDA device; CPU work is already
        done) before and after it, and its seconds go to its phase in `seconds()`."""
        previous = self.timed_device
        self.timed_device = torch.device(device)
        try:
            yield
        finally:
            self.timed_device = previous

    def record(self, nbytes: int, count: int = 1) -> None:
        """Add `count` collectives moving `nbytes` payload bytes to the current phase."""
        if nbytes < 0 or count < 0:
            raise ValueError(f"nbytes and count must be >= 0, got {nbytes} and {count}")
        name = self.current_phase
        with self._lock:
            entry = self._counts.setdefault(name, [0, 0])
            entry[0] += int(count)
            entry[1] += int(nbytes)

    def record_seconds(self, seconds: float) -> None:
        """Add the `seconds` a timed collective took to the current phase."""
        if not seconds >= 0:
            raise ValueError(f"seconds must be >= 0, got {seconds}")
        name = self.current_phase
        with self._lock:
            self._seconds[name] = self._seconds.get(name, 0.0) + float(seconds)

    def seconds(self) -> dict[str, float]:
        """A copy: phase -> seconds of its timed collectives (phases with none are absent)."""
        with self._lock:
            return dict(self._seconds)

    def snapshot(self) -> dict[str, dict[str, int]]:
        """A copy: phase -> {"collectives": int, "bytes": int}."""
        with self._lock:
            return {k: {"collectives": v[0], "bytes": v[1]} for k, v in self._counts.items()}

    def reset(self) -> None:
        """Forget all records (phases in progress stay open)."""
        with self._lock:
            self._counts.clear()
            self._seconds.clear()


accounting = CollectiveAccounting()
"""The process-wide accounting object every unilab_dist collective records into."""
