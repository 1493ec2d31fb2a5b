"""Process facts on Linux: start times (against pid reuse) and parent-death signals."""

from __future__ import annotations

import ctypes
import sys

__all__ = ["parent_death_signal", "process_start_ticks"]

_PR_SET_PDEATHSIG = 1


def process_start_ticks(pid: int) -> int | None:
    """Start time of process `pid` in clock ticks since boot (Linux), to guard against pid reuse."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # the command name (field 2) may hold spaces; fields after the closing parenthesis are fixed
    return int(stat.rsplit(")", 1)[1].split()[19])


def parent_death_signal(sig: int) -> bool:
    """Ask the kernel to send `sig` to this process when its parent ends (Linux prctl).

    Returns False where that is not available (not Linux, no libc). A parent that ended before
    the call sends nothing: the caller compares `os.getppid()` before and after.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
