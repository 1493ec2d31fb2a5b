"""CUDA-graph capture of a learner's hot-path step: one mechanism for every algorithm.

A learner writes its step as plain functions over static tensors (inputs copied in before the
call, outputs read after it) and registers each one as a body of a `CudaGraphs` set: PPO's
update (forward/backward; apply), PPO's rollout (act; normalizer moments; merge + reward),
FastSAC's update (forward/backward and apply, for each kind of step). Collectives stay eager,
between the bodies. Each body runs `warmup` times eagerly on a side stream (real steps that also
create optimizer state and library workspaces), is then captured (and run once), and replayed
from then on. If a capture raises, every body of the set runs eagerly for good, a warning says
why, and `CudaGraphs.status` is `fallback` with the reason. Which graph machinery is used is
injected (`GraphBackend`): CUDA's by default; `RerunBackend` runs the bodies instead of
replaying graphs, so the captured code path (static buffers, order, warm-up, fallback) runs and
is tested on any device.
"""

from __future__ import annotations

import contextlib
import enum
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import attrs
import torch

from .config import CAPTURE_SETTINGS, CaptureSetting, capture_setting

__all__ = [
    "CAPTURE_SETTINGS",
    "CaptureMode",
    "CaptureSetting",
    "CaptureStatus",
    "CudaBackend",
    "CudaGraphs",
    "GraphBackend",
    "Graphed",
    "RerunBackend",
    "capture_setting",
    "side_stream",
]


class CaptureMode(enum.Enum):
    """Where one captured part of a learner stands."""

    OFF = "off"  # not asked for (the config's capture setting)
    PENDING = "pending"  # will be captured after its eager warm-up calls
    CAPTURED = "captured"  # every body replays a graph
    EAGER = "eager"  # asked for, impossible with this config or device (see the reason)
    FALLBACK = "fallback"  # a capture raised: eager for good (see the reason)


@attrs.frozen
class CaptureStatus:
    """A `CaptureMode` and, for `eager` and `fallback`, why. `str()` gives e.g. `"captured"` or
    `"eager: CUDA graphs need a CUDA device, got cpu"`."""

    mode: CaptureMode
    reason: str = ""

    @classmethod
    def from_setting(
        cls, setting: CaptureSetting, reasons: Sequence[str], what: str
    ) -> CaptureStatus:
        """The status of a learner part from its config's `capture` setting: "none" -> `off`;
        "auto" -> `eager` (quietly) with the joined `reasons` if any, else `pending`;
        "cuda_graph" -> the same, warning (naming `what`) when it runs eagerly."""
        status = cls.check(setting != "none", reasons)
        if status.mode is CaptureMode.EAGER and setting == "cuda_graph":
            warnings.warn(f"{what} capture='cuda_graph' falls back to {status}", stacklevel=4)
        return status

    @classmethod
    def check(cls, requested: bool, reasons: Sequence[str]) -> CaptureStatus:
        """`off` when not requested, `eager` with the joined `reasons` if any, else `pending`."""
        if not requested:
            return cls(CaptureMode.OFF)
        if reasons:
            return cls(CaptureMode.EAGER, "; ".join(reasons))
        return cls(CaptureMode.PENDING)

    @property
    def active(self) -> bool:
        """True while the captured path runs (warming up or replaying graphs)."""
        return self.mode in (CaptureMode.PENDING, CaptureMode.CAPTURED)

    def __str__(self) -> str:
        return f"{self.mode.value}: {self.reason}" if self.reason else self.mode.value


@contextlib.contextmanager
def side_stream(device: torch.device) -> Iterator[torch.cuda.Stream]:
    """Run the block on a fresh CUDA stream ordered after the current stream's queued work, and
    make the current stream wait for it afterwards: the eager warm-up that CUDA-graph capture
    asks for (lazily created library state lands on a non-default stream, as during capture)."""
    cur = torch.cuda.current_stream(device)
    side = torch.cuda.Stream(device)
    side.wait_stream(cur)
    with torch.cuda.stream(side):
        yield side
    cur.wait_stream(side)


class GraphBackend(Protocol):
    """How bodies are warmed up, captured and replayed. `capture` records `fn` and runs it once
    (so a captured call has run its body, as a warm-up or replay call has); the graph it returns
    replays it, writing into the same output tensors."""

    needs_cuda: bool

    def new_pool(self) -> Any: ...

    def warmup(self, device: torch.device) -> contextlib.AbstractContextManager: ...

    def capture(
        self, fn: Callable[[], Any], pool: Any, device: torch.device
    ) -> tuple[Any, Any]: ...


class CudaBackend:
    """`torch.cuda.CUDAGraph`s, warmed up on a side stream."""

    needs_cuda = True

    def new_pool(self) -> Any:
        return torch.cuda.graph_pool_handle()

    def warmup(self, device: torch.device) -> contextlib.AbstractContextManager:
        return side_stream(device)

    def capture(self, fn: Callable[[], Any], pool: Any, device: torch.device) -> tuple[Any, Any]:
        torch.cuda.synchronize(device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool):
            out = fn()
        graph.replay()  # capturing records the kernels; this runs them
        return graph, out


class _Rerun:
    """A 'graph' that runs its body again and copies the result into the captured outputs."""

    def __init__(self, fn: Callable[[], Any], out: Any, calls: dict[str, int]) -> None:
        self.fn, self.out, self.calls = fn, out, calls

    def replay(self) -> None:
        self.calls["replay"] += 1
        out = self.fn()
        with torch.no_grad():
            _copy_into(self.out, out)


def _copy_into(dst: Any, src: Any) -> None:
    if isinstance(dst, torch.Tensor):
        if dst is src:
            return
        for dim, stride in enumerate(dst.stride()):  # a broadcast view (e.g. an expanded std):
            if stride == 0 and dst.shape[dim] > 1:  # write the memory it views, once
                dst, src = dst.narrow(dim, 0, 1), src.narrow(dim, 0, 1)
        dst.copy_(src)
    elif isinstance(dst, dict):
        for k, v in dst.items():
            _copy_into(v, src[k])
    elif isinstance(dst, list | tuple):
        for d, s in zip(dst, src, strict=True):
            _copy_into(d, s)
    elif dst is not None:
        raise TypeError(f"a graph body must return tensors (or dicts/lists of them), got {dst!r}")


class RerunBackend:
    """Runs each body where CUDA would replay its graph, and copies the results into the
    outputs of the 'capture' call: the captured path's static-buffer logic, call order,
    warm-up count and fallback on any device (CPU tests).
    `calls` counts (warm-up, capture, replay) calls, for tests."""

    needs_cuda = False

    def __init__(self) -> None:
        self.calls = {"warmup": 0, "capture": 0, "replay": 0}

    def new_pool(self) -> Any:
        return None

    @contextlib.contextmanager
    def warmup(self, device: torch.device) -> Iterator[None]:
        self.calls["warmup"] += 1
        yield

    def capture(self, fn: Callable[[], Any], pool: Any, device: torch.device) -> tuple[Any, Any]:
        self.calls["capture"] += 1
        out = fn()
        return _Rerun(fn, out, self.calls), out


class Graphed:
    """One body of a `CudaGraphs` set; calling it runs the body (eager, warm-up, capture or
    replay) and returns its outputs (the same tensors on every replay: read or clone them
    before the next call)."""

    def __init__(self, owner: CudaGraphs, fn: Callable[[], Any], name: str) -> None:
        self.owner, self.fn, self.name = owner, fn, name
        self.calls = 0
        self.graph: Any = None
        self.out: Any = None

    def __call__(self) -> Any:
        return self.owner.run(self)


class CudaGraphs:
    """The bodies of one captured part of a learner (module docstring).

    Args:
        label: the part's name in warnings, e.g. `"PPO update"`.
        status: the initial status (`CaptureStatus.check`); bodies of a set whose status is not
            active just run eagerly.
        device: the learner's device.
        warmup: eager calls of each body before its capture.
        shared_pool: one memory pool for all bodies (their replay order must then be fixed, as
            in PPO); else one each (FastSAC's two kinds of step interleave).
        backend: the graph machinery (default `CudaBackend()`).
        hint: appended to the error when the eager re-run after a failed capture fails too.
    """

    def __init__(
        self,
        label: str,
        status: CaptureStatus,
        device: torch.device,
        *,
        warmup: int,
        shared_pool: bool = True,
        backend: GraphBackend | None = None,
        hint: str = "",
    ) -> None:
        if warmup < 0:
            raise ValueError(f"warmup must be >= 0, got {warmup}")
        self.label = label
        self.device = torch.device(device)
        self.warmup = warmup
        self.backend: GraphBackend = backend if backend is not None else CudaBackend()
        self.shared_pool = shared_pool
        self.hint = hint
        self.bodies: list[Graphed] = []
        self._status = status
        self._pool: Any = None

    @property
    def status(self) -> CaptureStatus:
        return self._status

    def body(self, fn: Callable[[], Any], name: str = "") -> Graphed:
        """Register `fn` (no arguments: it reads static tensors) as a body of this set."""
        out = Graphed(self, fn, name or getattr(fn, "__name__", "body"))
        self.bodies.append(out)
        return out

    def reset(self) -> None:
        """Drop the graphs and warm up again (after a state load replaced tensors they read)."""
        for b in self.bodies:
            b.graph = b.out = None
            b.calls = 0
        self._pool = None
        if self._status.mode is CaptureMode.CAPTURED:
            self._status = CaptureStatus(CaptureMode.PENDING)

    def run(self, body: Graphed) -> Any:
        """Run one body (what calling it does)."""
        if not self._status.active:
            return body.fn()
        if body.graph is not None:
            body.graph.replay()
            return body.out
        if body.calls < self.warmup:
            body.calls += 1
            with self.backend.warmup(self.device):
                return body.fn()
        try:
            body.graph, body.out = self.backend.capture(body.fn, self._pool_for(), self.device)
        except Exception as err:  # any capture failure: eager for good, with the reason
            return self._fall_back(body, err)
        if all(b.graph is not None for b in self.bodies):
            self._status = CaptureStatus(CaptureMode.CAPTURED)
        return body.out

    def _pool_for(self) -> Any:
        if not self.shared_pool:
            return self.backend.new_pool()
        if self._pool is None:
            self._pool = self.backend.new_pool()
        return self._pool

    def _fall_back(self, body: Graphed, err: Exception) -> Any:
        reason = f"capture of {body.name} failed ({type(err).__name__}: {err})"
        self._status = CaptureStatus(CaptureMode.FALLBACK, reason)
        warnings.warn(f"{self.label} CUDA graphs off, running eagerly: {reason}", stacklevel=4)
        for b in self.bodies:
            b.graph = b.out = None
        self._pool = None
        try:
            return body.fn()  # finish this call eagerly from the static buffers
        except Exception as again:
            raise RuntimeError(
                f"{self.label}: {reason}, and the eager run after it failed too "
                f"({type(again).__name__}: {again}){'; ' + self.hint if self.hint else ''}"
            ) from err
