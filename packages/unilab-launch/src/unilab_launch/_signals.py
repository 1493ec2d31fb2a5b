"""The signal policy of a launch, in one place: who stops the run on Ctrl-C and SIGTERM.

- The launcher (and code around it, such as `unilab train`, which holds a run folder's lock):
  inside `interrupt_on_signals()`, the first SIGINT or SIGTERM raises `LaunchInterrupted` in the
  main thread; later ones are ignored until the block ends, so a second Ctrl-C cannot break off
  the stop under way. `launch` stops every agent and worker, then re-raises it with the run's
  folder; the caller's `finally` blocks run.
- Agents and workers ignore SIGINT (`ignore_terminal_interrupt`): a Ctrl-C in the terminal
  reaches every process of the foreground group, and the launcher alone turns it into one stop
  of the whole run. SIGTERM stops an agent's workers and ends the agent (`_agent.py`); a
  worker's SIGTERM keeps Python's default (the process ends).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["LaunchInterrupted", "ignore_terminal_interrupt", "interrupt_on_signals"]


class LaunchInterrupted(KeyboardInterrupt):
    """The launcher got SIGINT (Ctrl-C) or SIGTERM; every worker that was started was stopped.

    A `KeyboardInterrupt`, so code that handles Ctrl-C handles SIGTERM the same way.

    Attributes:
        signal: "SIGINT" or "SIGTERM".
        run_dir: the launch's folder (logs), None when no launch was under way.
    """

    def __init__(self, signal: str, run_dir: Path | None = None) -> None:
        where = f"; all workers were stopped (logs: {run_dir})" if run_dir is not None else ""
        super().__init__(f"interrupted by {signal}{where}")
        self.signal = signal
        self.run_dir = run_dir


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def interrupt_on_signals() -> Iterator[None]:
    """Inside the block, the first SIGINT or SIGTERM raises `LaunchInterrupted` in the main
    thread and later ones are ignored. Nested blocks share the first signal. Outside the main
    thread (where Python delivers no signal) the block changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in _STOP_SIGNALS}
    if any(getattr(handler, "unilab_launch_policy", False) for handler in previous.values()):
        yield  # an outer block already holds the policy
        return
    received: list[int] = []

    def on_signal(signum: int, _frame: Any) -> None:
        if not received:
            received.append(signum)
            raise LaunchInterrupted(signal.Signals(signum).name)

    on_signal.unilab_launch_policy = True  # type: ignore[attr-defined]
    for sig in _STOP_SIGNALS:
        if previous[sig] is not signal.SIG_IGN:  # a background job keeps ignoring Ctrl-C
            signal.signal(sig, on_signal)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def ignore_terminal_interrupt() -> None:
    """For agents and workers: a Ctrl-C reaching the whole terminal group is the launcher's."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
