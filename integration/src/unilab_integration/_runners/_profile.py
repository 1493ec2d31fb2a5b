"""`runner.profile`: per-iteration seconds of the runner's phases, synchronized between them.

When on, the runner calls `lap(name)` at the end of each phase of an iteration; `lap` waits
for the device (`torch.cuda.synchronize`), books the seconds since the previous lap to `name`
and starts the next phase. The env step is timed through the env's public
`step_profiled(action, lap)` (phases `env_physics`, `env_evaluate`) where its features say
`profiled_step`; another env (a user env) is timed as one phase, `env`. On more than one rank
with an eager learner update, the injected collectives (`grad_sync`, `reduce_sum`) are
wrapped: each call is timed between two synchronizations and booked to `sync`, out of the
phase it ran in. A captured update runs its collectives inside the graph replay, where the
host cannot see them: no `sync` phase then.

`metrics(iteration_s)` gives `profile/<phase>_s` for each phase of the iteration and
`profile/other_s`, the iteration's seconds less the phases'. The values are the rank's own
(the runner logs rank 0's). Synchronizing serializes the GPU: a profiled iteration is slower.
With profile off, `lap` returns at once and `env_step` is the env's own `step`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from unilab_algos import Learner

from .._env_features import env_features

__all__ = ["PhaseTimer", "TimedCollective", "update_captured"]


class PhaseTimer:
    """Phase seconds of one iteration on one rank (see the module docstring).

    `enabled`: runner.profile. `env`: the rank's env, whose step `env_step` times.
    """

    def __init__(self, device: torch.device, enabled: bool, env: Any) -> None:
        self.device = device
        self.enabled = enabled
        self.time_collectives = False  # set per iteration by the runner (`update_captured`)
        self.totals: dict[str, float] = {}
        self._pending = 0.0  # collective seconds since the last lap
        self._last = 0.0
        self.env_step: Callable[[torch.Tensor], Any] = env.step
        self.note: str | None = None  # what rank 0 prints at start about the env's phases
        if enabled:
            if env_features(env).profiled_step:
                self.env_step = lambda action: env.step_profiled(action, self.lap)
            else:
                self.env_step = self._plain_step(env.step)
                self.note = (
                    f"runner.profile: the env ({type(env).__name__}) has no "
                    "step_profiled(action, lap), so its step is timed as one phase, "
                    "profile/env_s (a unilab_envs VecEnv splits it into env_physics and "
                    "env_evaluate)"
                )

    def _plain_step(self, step: Callable[[torch.Tensor], Any]) -> Callable[[torch.Tensor], Any]:
        def timed(action: torch.Tensor) -> Any:
            out = step(action)
            self.lap("env")
            return out

        return timed

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def start(self) -> float:
        """Open an iteration: clear the totals; returns its start (`time.perf_counter`)."""
        if self.enabled:
            self._sync()
            self.totals = {}
            self._pending = 0.0
        self._last = time.perf_counter()
        return self._last

    def lap(self, name: str) -> None:
        """Close the phase `name` (seconds since the previous lap, less timed collectives)."""
        if not self.enabled:
            return
        self._sync()
        now = time.perf_counter()
        self.totals[name] = self.totals.get(name, 0.0) + now - self._last - self._pending
        if self.time_collectives:
            self.totals["sync"] = self.totals.get("sync", 0.0) + self._pending
        self._pending = 0.0
        self._last = now

    def collective(self, fn: Callable[..., Any]) -> Any:
        """Run `fn()` (an injected collective), timed between two synchronizations when the
        timer times collectives and the stream is not being captured into a CUDA graph."""
        if not (self.enabled and self.time_collectives) or _capturing(self.device):
            return fn()
        self._sync()
        start = time.perf_counter()
        out = fn()
        self._sync()
        self._pending += time.perf_counter() - start
        return out

    def metrics(self, iteration_s: float) -> dict[str, float]:
        """{profile/<phase>_s} of the iteration, and profile/other_s = iteration_s less them."""
        if not self.enabled:
            return {}
        totals = dict(self.totals)
        if self.time_collectives:
            totals.setdefault("sync", 0.0)
        out = {f"profile/{name}_s": seconds for name, seconds in totals.items()}
        out["profile/other_s"] = iteration_s - sum(totals.values())
        return out

    def wrap(self, fn: Any) -> Any:
        """`fn` (an injected grad_sync or reduce_sum, or None) timed by this timer; `fn`
        itself when profiling is off."""
        return fn if fn is None or not self.enabled else TimedCollective(fn, self)


class TimedCollective:
    """An injected collective (`GradAllReduce`, `sum_reducer`) that `PhaseTimer` times; its
    attributes (a `sum_reducer`'s `rank` and `world_size`) read through."""

    def __init__(self, fn: Any, timer: PhaseTimer) -> None:
        self.fn, self.timer = fn, timer

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.timer.collective(lambda: self.fn(*args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        if name in ("fn", "timer"):  # not set yet (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self.fn, name)


def update_captured(learner: Learner) -> bool:
    """Whether the learner's update runs (or is about to run) as a CUDA-graph replay."""
    status = learner.capture_status.get("update")
    return status is not None and status.active


def _capturing(device: torch.device) -> bool:
    return device.type == "cuda" and torch.cuda.is_current_stream_capturing()
