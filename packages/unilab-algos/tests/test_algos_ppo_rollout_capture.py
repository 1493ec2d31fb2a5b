"""The captured rollout (`PPOConfig.capture_rollout`): statuses with reasons, the captured path
run by `RerunBackend` (bitwise equal to eager on CPU), the fallback when a capture raises, and
the real capture on a GPU."""

from __future__ import annotations

import pytest
import torch
from _capture_helpers import RefusingBackend
from _ppo_helpers import DoubleSum, obs_td, scripted_collect, scripted_rollout, small_ppo, step_td

from unilab_algos import PPO, CaptureMode, NetworkConfig, PPOConfig, RNDConfig
from unilab_algos.common import RerunBackend
from unilab_algos.ppo.learner import WARMUP

N, T, A = 8, 6, 2
DIMS = {"policy": 3, "critic": 4}


def _cfg(**kw) -> PPOConfig:
    net = NetworkConfig(hidden=(16,))
    base = dict(actor=net, critic=net, num_epochs=2, num_mini_batches=3, capture="none")
    base.update(kw)
    return PPOConfig(**base)


def _make(cfg: PPOConfig, device: str = "cpu", reduce_sum=None, backend=None) -> PPO:
    ppo = small_ppo(cfg, DIMS, A, N, T, device, reduce_sum=reduce_sum, graph_backend=backend)
    ppo.train_mode()
    return ppo


def _status(ppo: PPO):
    return ppo.capture_status["rollout"]


def _rollout(ppo: PPO, seed: int, update: bool = True) -> dict:
    scripted_collect(ppo, DIMS, T, seed)
    return ppo.update() if update else {}


def _static_ppo() -> tuple[PPO, tuple]:
    """A learner on the captured rollout's path (bodies re-run) and a scripted stream."""
    ppo = _make(_cfg(capture="auto"), backend=RerunBackend())
    return ppo, scripted_rollout(N, T, DIMS, 0)


def _normalizer_state(ppo: PPO) -> dict[str, torch.Tensor]:
    out = {}
    for name, net in (("actor", ppo.actor), ("critic", ppo.critic)):
        for k, v in net.obs_normalizer.state_dict().items():
            out[f"{name}.{k}"] = v
    return out


def test_statuses_and_reasons():
    assert _status(_make(_cfg())).mode is CaptureMode.OFF  # capture="none"
    assert _status(_make(_cfg(capture="auto", capture_rollout=False))).mode is CaptureMode.OFF
    ppo = _make(_cfg(capture="auto"))
    assert str(_status(ppo)) == "eager: CUDA graphs need a CUDA device, got cpu"
    assert ppo._rollout is None
    rnn = NetworkConfig(hidden=(8,), rnn_type="gru", rnn_hidden=8)
    rnd = RNDConfig(num_outputs=4, predictor_hidden=(8,), target_hidden=(8,))
    other = _make(_cfg(capture="auto", actor=rnn, rnd=rnd))
    for reason in ("recurrent", "RND"):
        assert reason in _status(other).reason
    assert PPOConfig().capture_rollout and PPOConfig.rsl_rl().capture == "none"


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"obs_norm_scope": "local"},
        {"obs_norm_mode": "rsl_rl", "obs_norm_scope": "local"},
        {"bootstrap_time_outs": False},
    ],
)
def test_static_buffer_path_equals_eager_bitwise(kw):
    """The captured rollout's driver and bodies (static inputs, the collective between bodies B
    and C), with the bodies re-run where CUDA would replay them, store the same transitions and
    statistics as eager."""
    sums = DoubleSum(), DoubleSum()
    eager = _make(_cfg(**kw), reduce_sum=sums[0])
    static = _make(_cfg(capture="auto", **kw), reduce_sum=sums[1], backend=RerunBackend())
    for it in range(2):
        _rollout(eager, it, update=False)
        _rollout(static, it, update=False)
        assert _status(static).mode is CaptureMode.CAPTURED
        da, db = eager.storage.data, static.storage.data
        assert set(da.keys(True, True)) == set(db.keys(True, True))
        for key in da.keys(True, True):
            assert torch.equal(da[key], db[key]), key
        for k, v in _normalizer_state(eager).items():
            assert torch.equal(v, _normalizer_state(static)[k]), k
        torch.manual_seed(7)
        ma = eager.update()
        torch.manual_seed(7)  # the mini-batch permutation draws from the global RNG
        assert static.update() == ma
    assert sums[0].calls == sums[1].calls > 0


def test_eval_mode_and_other_shapes_take_the_eager_path():
    ppo, (obs, rew, dones, touts) = _static_ppo()
    with torch.no_grad():
        ppo.act(obs_td(obs, 0))
        assert ppo._pending_graphed
        ppo.process_env_step(step_td(obs, rew, dones, touts, 0))
        ppo.eval_mode()
        ppo.act(obs_td(obs, 1))
        assert not ppo._pending_graphed
        ppo.process_env_step(step_td(obs, rew, dones, touts, 1))
        ppo.train_mode()
        small = {k: v[:, :4] for k, v in obs.items()}
        assert not ppo._rollout.accepts(obs_td(small, 2))
    assert ppo.storage.step == 2


def test_changed_step_keys_are_a_clear_error():
    ppo, (obs, rew, dones, touts) = _static_ppo()
    with torch.no_grad():
        ppo.act(obs_td(obs, 0))
        ppo.process_env_step(step_td(obs, rew, dones, touts, 0))
        ppo.act(obs_td(obs, 1))
        step = step_td(obs, rew, dones, touts, 1)
        del step["truncated"]
        with pytest.raises(RuntimeError, match="'truncated' came or went"):
            ppo.process_env_step(step)


def test_a_failed_capture_finishes_the_step_eagerly_and_stays_eager():
    eager = _make(_cfg(), reduce_sum=DoubleSum())
    static = _make(
        _cfg(capture="auto"),
        reduce_sum=DoubleSum(),
        backend=RefusingBackend("moments", "no graphs here"),
    )
    with pytest.warns(UserWarning, match="PPO rollout CUDA graphs off, running eagerly"):
        _rollout(static, 0, update=False)
    _rollout(eager, 0, update=False)
    assert str(_status(static)) == (
        "fallback: capture of normalizer moments failed (RuntimeError: no graphs here)"
    )
    assert not static._pending_graphed  # the last steps took the eager path
    for key in eager.storage.data.keys(True, True):
        assert torch.equal(eager.storage.data[key], static.storage.data[key]), key
    assert static.capture_status["update"].active  # the update's capture is a separate part


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_captured_rollout_matches_eager_on_gpu():
    eager = _make(
        _cfg(capture="auto", capture_rollout=False), device="cuda", reduce_sum=DoubleSum()
    )
    graph = _make(_cfg(capture="auto"), device="cuda", reduce_sum=DoubleSum())
    assert (_status(eager).mode, _status(graph).mode) == (CaptureMode.OFF, CaptureMode.PENDING)
    assert T > WARMUP  # the first rollout captures
    _rollout(eager, 0, update=False)
    _rollout(graph, 0, update=False)
    assert _status(graph).mode is CaptureMode.CAPTURED, _status(graph)
    da, db = eager.storage.data, graph.storage.data
    # before any update, everything but the sampled actions is a function of the same inputs
    for key in (("obs", "policy"), ("obs", "critic"), "mean", "std", "values", "dones"):
        torch.testing.assert_close(db[key], da[key], rtol=1e-5, atol=1e-6, msg=str(key))
    for k, v in _normalizer_state(eager).items():
        torch.testing.assert_close(_normalizer_state(graph)[k], v, rtol=1e-9, atol=1e-9, msg=k)
    # log_prob belongs to the stored actions, and the graph's RNG advances every replay
    dist = torch.distributions.Normal(db["mean"], db["std"])
    torch.testing.assert_close(db["log_prob"], dist.log_prob(db["actions"]).sum(-1))
    assert not torch.equal(db["actions"][WARMUP + 1], db["actions"][WARMUP + 2])
    z = (db["actions"] - db["mean"]) / db["std"]
    assert z.abs().max() < 6 and abs(float(z.mean())) < 0.5
    # rewards: with the time-out bootstrap from the stored values
    torch.testing.assert_close(db["rewards"], da["rewards"], rtol=1e-5, atol=1e-5)
    for it in range(1, 3):  # trains on: finite, still captured
        m = graph.update() if it == 1 else _rollout(graph, it)
        assert all(torch.isfinite(torch.tensor(v)) for v in m.values() if isinstance(v, float))
    # a loaded state reaches the graph (parameters and statistics are copied in place)
    eager.update()
    _rollout(eager, 5)
    graph.load_state_dict(eager.state_dict())
    obs = {k: v.cuda() for k, v in scripted_rollout(N, T, DIMS, 7)[0].items()}
    with torch.no_grad():
        graph.act(obs_td(obs, 0))
        mean_g = graph._pending["mean"].clone()
        eager.act(obs_td(obs, 0))
    torch.testing.assert_close(mean_g, eager._pending["mean"], rtol=1e-5, atol=1e-6)
    assert _status(graph).mode is CaptureMode.CAPTURED
