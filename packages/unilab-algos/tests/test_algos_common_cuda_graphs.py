"""The capture helper (`unilab_algos.common.cuda_graphs`) on CPU, with injected backends:
warm-up count, capture, replay into the same outputs, fallback with a reason, statuses."""

from __future__ import annotations

import pytest
import torch
from _capture_helpers import RefusingBackend

from unilab_algos.common import CaptureMode, CaptureStatus, CudaGraphs, RerunBackend


def test_status_check_and_text():
    assert CaptureStatus.check(False, ["x"]) == CaptureStatus(CaptureMode.OFF)
    eager = CaptureStatus.check(True, ["no CUDA", "recurrent"])
    assert (eager.mode, eager.reason, str(eager)) == (
        CaptureMode.EAGER,
        "no CUDA; recurrent",
        "eager: no CUDA; recurrent",
    )
    pending = CaptureStatus.check(True, [])
    assert str(pending) == "pending" and pending.active
    assert CaptureStatus(CaptureMode.CAPTURED).active
    assert not eager.active and not CaptureStatus(CaptureMode.FALLBACK, "x").active


def _counter_set(backend, warmup=2, status=None, **kw):
    """A set of two bodies over a static input: `a` doubles it into a new tensor, `b` adds
    `a`'s output into an accumulator (state that persists across calls, as optimizer steps)."""
    graphs = CudaGraphs(
        "test part",
        status or CaptureStatus(CaptureMode.PENDING),
        torch.device("cpu"),
        warmup=warmup,
        backend=backend,
        **kw,
    )
    x = torch.zeros(3)
    acc = torch.zeros(3)
    holder = {}

    def a():
        return {"y": x * 2}

    def b():
        acc.add_(holder["y"])

    return graphs, graphs.body(a, "a"), graphs.body(b, "b"), x, acc, holder


def _bodies(backend, **kw):
    graphs, a, b, _x, _acc, holder = _counter_set(backend, **kw)
    return graphs, a, b, holder


def test_warmup_then_capture_then_replay_into_the_same_outputs():
    backend = RerunBackend()
    graphs, a, b, x, acc, holder = _counter_set(backend, warmup=2)
    outs = []
    for step in range(6):
        x.fill_(float(step))
        out = a()
        holder["y"] = out["y"]
        outs.append(out)
        b()
        expect = CaptureMode.PENDING if step < 2 else CaptureMode.CAPTURED
        assert graphs.status.mode is expect, step
    assert backend.calls == {"warmup": 4, "capture": 2, "replay": 6}
    # warm-up calls return fresh outputs; from the capture on, the same tensors every call
    assert outs[0] is not outs[1] and all(o is outs[2] for o in outs[2:])
    assert outs[5]["y"].tolist() == [10.0] * 3
    assert acc.tolist() == [2.0 * sum(range(6))] * 3  # every call ran its body exactly once


def test_a_part_is_captured_only_once_every_body_is():
    graphs, a, b, holder = _bodies(RerunBackend(), warmup=1)
    for _ in range(3):
        holder["y"] = a()["y"]
    assert graphs.status.mode is CaptureMode.PENDING  # b still warming up
    b()
    b()
    assert graphs.status.mode is CaptureMode.CAPTURED


def test_a_failed_capture_falls_back_for_good_with_the_reason():
    backend = RefusingBackend("b")
    graphs, a, b, x, acc, holder = _counter_set(backend, warmup=1)
    x.fill_(1.0)
    holder["y"] = a()["y"]  # warm-up calls
    b()
    holder["y"] = a()["y"]  # a is captured; b's capture raises
    assert a.graph is not None and graphs.status.mode is CaptureMode.PENDING
    with pytest.warns(UserWarning, match="test part CUDA graphs off, running eagerly"):
        b()
    status = graphs.status
    assert status.mode is CaptureMode.FALLBACK and not status.active
    assert status.reason == (
        "capture of b failed (RuntimeError: operation not permitted when stream is capturing)"
    )
    assert acc.tolist() == [4.0] * 3  # the failed call still ran b, eagerly
    assert a.graph is None and b.graph is None  # a's graph is dropped too
    before = dict(backend.calls)
    for _ in range(3):
        holder["y"] = a()["y"]
        b()
    assert backend.calls == before  # plain eager calls from now on
    assert acc.tolist() == [10.0] * 3


def test_an_eager_failure_after_a_failed_capture_names_both_and_the_hint():
    graphs = CudaGraphs(
        "test part",
        CaptureStatus(CaptureMode.PENDING),
        torch.device("cpu"),
        warmup=0,
        backend=RefusingBackend("body"),
        hint="train with capture off",
    )

    def body():
        raise ValueError("bad shape")

    g = graphs.body(body)
    too = r"failed too \(ValueError: bad shape\); train with capture off"
    with (
        pytest.warns(UserWarning, match="operation not permitted"),
        pytest.raises(RuntimeError, match=too),
    ):
        g()
    assert graphs.status.mode is CaptureMode.FALLBACK


def test_not_active_runs_the_body_plainly_and_reset_captures_again():
    backend = RerunBackend()
    _off, a, _b, _holder = _bodies(backend, status=CaptureStatus(CaptureMode.OFF))
    assert a()["y"].shape == (3,)
    assert backend.calls == {"warmup": 0, "capture": 0, "replay": 0}
    graphs, a, b, holder = _bodies(backend, warmup=0)
    holder["y"] = a()["y"]
    b()
    assert graphs.status.mode is CaptureMode.CAPTURED
    graphs.reset()
    assert graphs.status.mode is CaptureMode.PENDING and a.graph is None
    holder["y"] = a()["y"]
    assert backend.calls["capture"] == 3


class _Pools(RerunBackend):
    def __init__(self):
        super().__init__()
        self.pools = []

    def new_pool(self):
        self.pools.append(object())
        return self.pools[-1]

    def capture(self, fn, pool, device):
        self.seen = [*getattr(self, "seen", []), pool]
        return super().capture(fn, pool, device)


@pytest.mark.parametrize("shared", [True, False])
def test_one_memory_pool_for_the_set_or_one_per_body(shared):
    backend = _Pools()
    _graphs, a, b, holder = _bodies(backend, warmup=0, shared_pool=shared)
    holder["y"] = a()["y"]
    b()
    assert len(backend.pools) == (1 if shared else 2)
    assert (backend.seen[0] is backend.seen[1]) is shared


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_backend_captures_and_replays_for_real():
    graphs = CudaGraphs("gpu part", CaptureStatus(CaptureMode.PENDING), "cuda", warmup=2)
    x = torch.zeros(1024, device="cuda")
    acc = torch.zeros(1024, device="cuda")

    def body():
        acc.add_(x * 2)
        return acc.sum()

    g = graphs.body(body)
    for step in range(6):
        x.fill_(float(step))
        out = g()
    torch.cuda.synchronize()
    assert graphs.status.mode is CaptureMode.CAPTURED and g.graph is not None
    assert float(out) == pytest.approx(1024 * 2.0 * sum(range(6)))
