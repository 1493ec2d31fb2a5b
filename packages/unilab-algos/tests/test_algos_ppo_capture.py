"""The captured update path (`PPOConfig.capture="cuda_graph"`): eager fallback with a reason,
the static-buffer step logic (bitwise equal to eager on CPU), and the real capture on a GPU."""

from __future__ import annotations

import warnings

import pytest
import torch
from _ppo_helpers import scripted_collect, small_ppo

from unilab_algos import PPO, NetworkConfig, PPOConfig, RNDConfig
from unilab_algos.ppo._capture import CapturedStep

N, T, A = 8, 6, 2
DIMS = {"policy": 3, "critic": 4}


def _cfg(capture: str = "none", **kw) -> PPOConfig:
    net = NetworkConfig(hidden=(16,))
    base = dict(actor=net, critic=net, num_epochs=2, num_mini_batches=3, capture=capture)
    base.update(kw)
    return PPOConfig(**base)


def _make(cfg: PPOConfig, device: str = "cpu", grad_sync=None) -> PPO:
    return small_ppo(cfg, DIMS, A, N, T, device, grad_sync=grad_sync)


def _iteration(ppo: PPO, seed: int) -> dict:
    scripted_collect(ppo, DIMS, T, seed)
    return ppo.update()


def test_cpu_falls_back_to_eager_with_a_reason():
    with pytest.warns(UserWarning, match="CUDA graphs need a CUDA device"):
        ppo = _make(_cfg("cuda_graph"))
    assert ppo.capture_status.startswith("eager: CUDA graphs need a CUDA device")
    with pytest.warns(UserWarning) as rec:
        rnn = NetworkConfig(hidden=(8,), rnn_type="gru", rnn_hidden=8)
        other = _make(_cfg("cuda_graph", actor=rnn, lr_on_device=False, remainder="spread"))
    text = str(rec[0].message)
    for reason in ("lr_on_device=False", "recurrent", "remainder='spread'"):
        assert reason in text and reason in other.capture_status
    assert _make(_cfg()).capture_status == "off"
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
    assert ppo.capture_status.startswith("eager: CUDA graphs need a CUDA device")
    assert "recurrent" in rec.capture_status
    assert _iteration(ppo, 2)["mini_batches"] == 6


class _Recorder:
    def __init__(self):
        self.calls = 0

    def __call__(self, params, extra):
        self.calls += 1
        return extra


@pytest.mark.parametrize("kw", [{}, {"advantage_norm_per_mini_batch": True}, {"rnd": "on"}])
def test_static_buffer_path_equals_eager_bitwise(monkeypatch, kw):
    """The captured driver (index_select into static buffers, grad_sync between the two halves,
    metrics in the static accumulator), run without the CUDA-graph calls, equals eager."""
    if kw.get("rnd"):
        kw = {"rnd": RNDConfig(num_outputs=4, predictor_hidden=(8,), target_hidden=(8,))}
    monkeypatch.setattr(CapturedStep, "_step", CapturedStep._eager)
    rec_a, rec_b = _Recorder(), _Recorder()
    eager = _make(_cfg(**kw), grad_sync=rec_a)
    static = _make(_cfg(**kw), grad_sync=rec_b)
    static.capture_status = "pending"  # force the captured driver on CPU
    for it in range(2):
        ma, mb = _iteration(eager, it), _iteration(static, it)
        assert ma == mb
    assert isinstance(static._graphs, CapturedStep) and static._graphs.static.batch_size[0] == 16
    assert rec_a.calls == rec_b.calls == 2 * 6
    for x, y in zip(eager.replicated_modules(), static.replicated_modules(), strict=True):
        for (k, v), (_, w) in zip(x.state_dict().items(), y.state_dict().items(), strict=True):
            assert torch.equal(v, w), k
    assert eager.learning_rate == static.learning_rate


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_graph_capture_matches_eager_on_gpu():
    eager = _make(_cfg(), device="cuda")
    graph = _make(_cfg("cuda_graph"), device="cuda")
    assert graph.capture_status == "pending"
    assert _make(_cfg("auto"), device="cuda").capture_status == "pending"
    for it in range(3):
        ma, mb = _iteration(eager, it), _iteration(graph, it)
        assert mb["mini_batches"] == 6
        for k in ("value", "surrogate", "entropy", "kl", "learning_rate"):
            assert mb[k] == pytest.approx(ma[k], rel=1e-4, abs=1e-6), k
    assert graph.capture_status == "captured", graph.capture_status
    for x, y in zip(eager.replicated_modules(), graph.replicated_modules(), strict=True):
        for (k, v), (_, w) in zip(x.state_dict().items(), y.state_dict().items(), strict=True):
            torch.testing.assert_close(w, v, rtol=1e-4, atol=1e-5, msg=k)
    # a checkpoint load replaces the Adam state tensors: the learner re-captures
    graph.load_state_dict(eager.state_dict())
    assert graph.capture_status == "pending"
    _iteration(graph, 9)
    assert graph.capture_status == "captured"
