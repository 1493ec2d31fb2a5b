"""A log line before and after the first compilation of an env's MuJoCo Warp kernels.

Warp compiles a module's kernels on their first launch in a process, unless the module's
binary is already in `wp.config.kernel_cache_dir` (~/.cache/warp/<version>, or
`WARP_CACHE_PATH`), where it then puts it. On CPU that takes tens of seconds for a small
task, minutes for a large one. Warp writes into that folder only when it compiles (a build
folder when a module's compilation starts, the module's folder when it ends), so a new entry
there while the env first runs its kernels is a compilation, and no new entry means that
every kernel came from the cache (or was already loaded in this process).

The lines are INFO records of the `unilab_envs` logger: out of a library user's way unless
logging is configured; the `unilab` command shows them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator

import warp as wp

logger = logging.getLogger("unilab_envs")

POLL_S = 0.1


def _entries(folder: str | None) -> frozenset[str]:
    if not folder:
        return frozenset()
    try:
        return frozenset(os.listdir(folder))
    except OSError:
        return frozenset()


def shown_path(path: str) -> str:
    home = os.path.expanduser("~")
    return "~" + path[len(home) :] if home != "/" and path.startswith(home + os.sep) else path


class CompileNotice:
    """Watches warp's kernel cache through the phases in which an env first launches its
    kernels (construction, the first reset, the first step).

    On the first new cache entry (seen by a polling thread, or at the end of a phase) it logs
    "compiling MuJoCo Warp kernels for <task> (first run; cached in <dir>) ..."; `finish()`,
    after the first step, logs "compiled MuJoCo Warp kernels for <task> in <s> s" with the time
    of the phases that compiled. Nothing at all when nothing compiled.
    """

    def __init__(self, task: str) -> None:
        self.task = task
        self.seconds = 0.0
        self.announced = False
        self.finished = False
        self._lock = threading.Lock()

    def _announce(self, folder: str) -> None:
        with self._lock:
            if self.announced:
                return
            self.announced = True
        logger.info(
            "compiling MuJoCo Warp kernels for %s (first run; cached in %s) ...",
            self.task,
            shown_path(folder),
        )

    @contextlib.contextmanager
    def phase(self) -> Iterator[None]:
        """Watch the cache while the body runs (nothing once `finish()` was called)."""
        folder = wp.config.kernel_cache_dir
        if self.finished or not folder:
            yield
            return
        before = _entries(folder)
        stop = threading.Event()

        def watch() -> None:
            while not stop.wait(POLL_S):
                if _entries(folder) - before:
                    self._announce(folder)
                    return

        watcher = threading.Thread(target=watch, name="unilab-envs-compile-notice", daemon=True)
        start = time.monotonic()
        watcher.start()
        try:
            yield
        finally:
            stop.set()
            watcher.join()
            if _entries(folder) - before:
                self._announce(folder)
                self.seconds += time.monotonic() - start

    def finish(self) -> None:
        """Log the compile time, if anything compiled; stop watching."""
        if self.finished:
            return
        self.finished = True
        if self.announced:
            logger.info("compiled MuJoCo Warp kernels for %s in %.1f s", self.task, self.seconds)
