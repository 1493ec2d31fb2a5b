"""`policy_module()` export: torch.onnx.export (TorchScript exporter) of the policy with its
normalizer, run with onnxruntime and compared with torch (feed-forward, GRU, LSTM, student)."""

from __future__ import annotations

import io
import warnings

import pytest
import torch

from unilab_algos import PPO, Distillation, DistillationConfig, NetworkConfig, PPOConfig

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

D, A, B = 5, 3, 7


def _export(module: torch.nn.Module, args: tuple, names: list[str], outs: list[str]):
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TorchScript-exporter deprecation notices
        torch.onnx.export(
            module,
            args,
            buf,
            dynamo=False,
            input_names=names,
            output_names=outs,
            dynamic_axes={names[0]: {0: "batch"}},
        )
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(buf.getvalue(), opts, providers=["CPUExecutionProvider"])


def _trained_normalizer_ppo(net: NetworkConfig) -> PPO:
    torch.manual_seed(0)
    cfg = PPOConfig(actor=net, critic=net, critic_obs=("policy",))
    ppo = PPO({"policy": (D,)}, A, cfg)
    ppo.actor.update_normalizer(torch.randn(64, D) * 3.0 + 2.0)
    assert ppo.actor.obs_normalizer.mean.abs().min() > 0.5  # non-trivial statistics
    return ppo


def test_feed_forward_policy_matches_onnxruntime():
    ppo = _trained_normalizer_ppo(NetworkConfig(hidden=(16, 8)))
    policy = ppo.policy_module().eval()
    obs = torch.randn(B, D) * 3.0 + 2.0
    sess = _export(policy, (obs[:2],), ["obs"], ["actions"])
    got = sess.run(None, {"obs": obs.numpy()})[0]
    with torch.no_grad():
        want = policy(obs)
        unnormalized = ppo.actor.mlp(obs)
    assert got.shape == (B, A)
    torch.testing.assert_close(torch.from_numpy(got), want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(want, ppo.actor(obs).detach())  # export == deterministic actor
    assert not torch.allclose(want, unnormalized, atol=1e-3)  # the normalizer is in the graph


@pytest.mark.parametrize("rnn", ["gru", "lstm"])
def test_recurrent_policy_matches_onnxruntime(rnn):
    net = NetworkConfig(hidden=(8,), rnn_type=rnn, rnn_hidden=6, rnn_layers=2)
    ppo = _trained_normalizer_ppo(net)
    policy = ppo.policy_module().eval()
    obs = torch.randn(B, D) * 3.0 + 2.0
    h = torch.randn(2, B, 6)
    states = (h,) if rnn == "gru" else (h, torch.randn(2, B, 6))
    names = ["obs", "h"] + (["c"] if rnn == "lstm" else [])
    outs = ["actions", "h_out"] + (["c_out"] if rnn == "lstm" else [])
    sess = _export(policy, (obs, *states), names, outs)
    got = sess.run(None, {n: t.numpy() for n, t in zip(names, (obs, *states), strict=True)})
    with torch.no_grad():
        want = policy(obs, *states)
    assert len(got) == len(want) == len(names)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(torch.from_numpy(g), w, rtol=1e-5, atol=1e-5)
    # two steps through onnxruntime equal two steps of the rollout-mode actor from the same state
    ppo.actor.memory.set_state(states[0] if rnn == "gru" else states)
    with torch.no_grad():
        ppo.actor(obs)
        second = ppo.actor(obs)
    feeds = {"obs": obs.numpy(), **{n: g for n, g in zip(names[1:], got[1:], strict=True)}}
    torch.testing.assert_close(
        torch.from_numpy(sess.run(None, feeds)[0]), second, rtol=1e-5, atol=1e-5
    )


def test_distillation_student_matches_onnxruntime():
    torch.manual_seed(1)
    cfg = DistillationConfig(student=NetworkConfig(hidden=(8,)), teacher=NetworkConfig(hidden=(8,)))
    d = Distillation({"policy": (D,)}, A, cfg)
    d.student.update_normalizer(torch.randn(32, D) - 4.0)
    policy = d.policy_module().eval()
    obs = torch.randn(B, D) - 4.0
    sess = _export(policy, (obs,), ["obs"], ["actions"])
    with torch.no_grad():
        want = d.student(obs)
    got = torch.from_numpy(sess.run(None, {"obs": obs.numpy()})[0])
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
