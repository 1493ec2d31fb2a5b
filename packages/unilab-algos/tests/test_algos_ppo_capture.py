"""The captured update path (`PPOConfig.capture="cuda_graph"`): eager with a reason where capture
is impossible, the captured path's static buffers, warm-up and replay run by `RerunBackend`
(bitwise equal to eager on CPU), the fallback when a capture raises, and the real capture on a
GPU."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from _capture_helpers import RefusingBackend
from _ppo_helpers import scripted_collect, small_ppo

from unilab_algos import PPO, CaptureMode, NetworkConfig, PPOConfig, RNDConfig
from unilab_algos.common import RerunBackend

N, T, A = 8, 6, 2
DIMS = {"policy": 3, "critic": 4}


def _cfg(capture: str = "none", **kw) -> PPOConfig:
    net = NetworkConfig(hidden=(16,))
    base = dict(actor=net, critic=net, num_epochs=2, num_mini_batches=3, capture=capture)
    base.update(kw)
    return PPOConfig(**base)


def _make(cfg: PPOConfig, device: str = "cpu", grad_sync=None, backend=None) -> PPO:
    return small_ppo(cfg, DIMS, A, N, T, device, grad_sync=grad_sync, graph_backend=backend)


def _update(ppo: PPO):
    return ppo.capture_status["update"]


def _iteration(ppo: PPO, seed: int) -> dict:
    scripted_collect(ppo, DIMS, T, seed)
    return ppo.update()


def test_cpu_falls_back_to_eager_with_a_reason():
    with pytest.warns(UserWarning, match="CUDA graphs need a CUDA device"):
        ppo = _make(_cfg("cuda_graph"))
    assert str(_update(ppo)).startswith("eager: CUDA graphs need a CUDA device")
    with pytest.warns(UserWarning) as rec:
        rnn = NetworkConfig(hidden=(8,), rnn_type="gru", rnn_hidden=8)
        other = _make(_cfg("cuda_graph", actor=rnn, lr_on_device=False, remainder="spread"))
    text = str(rec[0].message)
    for reason in ("lr_on_device=False", "recurrent", "remainder='spread'"):
        assert reason in text and reason in _update(other).reason
    assert _update(other).mode is CaptureMode.EAGER
    assert _update(_make(_cfg())).mode is CaptureMode.OFF
    m = _iteration(ppo, 1)  # still trains, eagerly
    assert m["mini_batches"] == 6
    with pytest.raises(ValueError, match="capture"):
        _cfg("graphs")


def test_auto_is_the_default_and_falls_back_quietly():
    assert PPOConfig().capture == "auto"
    assert PPOConfig.rsl_rl().capture == "none"  # RSL-RL's update, bit for bit
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "auto" must not warn where capture is impossible
        ppo = _make(_cfg("auto"))
        rnn = NetworkConfig(hidden=(8,), rnn_type="gru", rnn_hidden=8)
        rec = _make(_cfg("auto", actor=rnn))
    assert str(_update(ppo)).startswith("eager: CUDA graphs need a CUDA device")
    assert "recurrent" in _update(rec).reason
    assert _iteration(ppo, 2)["mini_batches"] == 6


class _Recorder:
    def __init__(self):
        self.calls = 0

    def __call__(self, params, extra):
        self.calls += 1
        return extra


def _assert_same_training_state(a: PPO, b: PPO) -> None:
    for x, y in zip(a.replicated_modules(), b.replicated_modules(), strict=True):
        for (k, v), (_, w) in zip(x.state_dict().items(), y.state_dict().items(), strict=True):
            assert torch.equal(v, w), k
    assert a.learning_rate == b.learning_rate


@pytest.mark.parametrize("kw", [{}, {"advantage_norm_per_mini_batch": True}, {"rnd": "on"}])
def test_captured_path_equals_eager_bitwise(kw):
    """The captured update (index_select into static buffers, grad_sync between the two bodies,
    metrics in the static accumulator, two warm-up calls, capture, replays) and the captured
    rollout (where it applies: not with RND), with the bodies re-run where CUDA would replay
    them, equal eager."""
    if kw.get("rnd"):
        kw = {"rnd": RNDConfig(num_outputs=4, predictor_hidden=(8,), target_hidden=(8,))}
    rec_a, rec_b = _Recorder(), _Recorder()
    backend = RerunBackend()
    eager = _make(_cfg(**kw), grad_sync=rec_a)
    static = _make(_cfg("cuda_graph", **kw), grad_sync=rec_b, backend=backend)
    assert _update(static).mode is CaptureMode.PENDING
    for it in range(2):
        ma, mb = _iteration(eager, it), _iteration(static, it)
        assert ma == mb
    assert _update(static).mode is CaptureMode.CAPTURED
    rollout = static.capture_status["rollout"]
    assert rollout.mode is (CaptureMode.EAGER if "rnd" in kw else CaptureMode.CAPTURED)
    # per body: 2 warm-up calls, 1 capture, 9 replays over 12 mini-batches (update: 2 bodies)
    # and over 12 env steps (rollout: 3 bodies)
    bodies = 2 + (0 if "rnd" in kw else 3)
    assert backend.calls == {"warmup": 2 * bodies, "capture": bodies, "replay": 9 * bodies}
    assert rec_a.calls == rec_b.calls == 2 * 6
    _assert_same_training_state(eager, static)
    # a checkpoint load replaces the Adam state tensors: warm-up and capture again
    static.load_state_dict(copy.deepcopy(eager.state_dict()))  # (no aliased Adam tensors)
    assert _update(static).mode is CaptureMode.PENDING
    assert _iteration(eager, 5) == _iteration(static, 5)
    assert backend.calls["capture"] == bodies + 2 and _update(static).mode is CaptureMode.CAPTURED


def test_a_failed_capture_finishes_eagerly_warns_and_stays_eager():
    eager = _make(_cfg())
    static = _make(
        _cfg("cuda_graph"), backend=RefusingBackend("apply", "CUDA error: operation not permitted")
    )
    with pytest.warns(UserWarning, match="PPO update CUDA graphs off, running eagerly"):
        ma, mb = _iteration(eager, 0), _iteration(static, 0)
    assert ma == mb
    status = _update(static)
    assert status.mode is CaptureMode.FALLBACK
    assert status.reason.startswith("capture of apply failed (RuntimeError: CUDA error")
    assert _iteration(eager, 1) == _iteration(static, 1)
    _assert_same_training_state(eager, static)
    assert _update(static).mode is CaptureMode.FALLBACK


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_graph_capture_matches_eager_on_gpu():
    eager = _make(_cfg(), device="cuda")
    graph = _make(_cfg("cuda_graph"), device="cuda")
    assert _update(graph).mode is CaptureMode.PENDING
    assert _update(_make(_cfg("auto"), device="cuda")).mode is CaptureMode.PENDING
    for it in range(3):
        ma, mb = _iteration(eager, it), _iteration(graph, it)
        assert mb["mini_batches"] == 6
        for k in ("value", "surrogate", "entropy", "kl", "learning_rate"):
            assert mb[k] == pytest.approx(ma[k], rel=1e-4, abs=1e-6), k
    assert _update(graph).mode is CaptureMode.CAPTURED, _update(graph)
    for x, y in zip(eager.replicated_modules(), graph.replicated_modules(), strict=True):
        for (k, v), (_, w) in zip(x.state_dict().items(), y.state_dict().items(), strict=True):
            torch.testing.assert_close(w, v, rtol=1e-4, atol=1e-5, msg=k)
    # a checkpoint load replaces the Adam state tensors: the learner re-captures
    graph.load_state_dict(eager.state_dict())
    assert _update(graph).mode is CaptureMode.PENDING
    _iteration(graph, 9)
    assert _update(graph).mode is CaptureMode.CAPTURED
