"""PPO state round trip: state_dict -> torch.save/load -> fresh learner -> load_state_dict, then
the next rollout + update give bitwise the same parameters, buffers, Adam state and LR."""

from __future__ import annotations

import io

import pytest
import torch
from _ppo_helpers import obs_td, scripted_rollout, step_td

from unilab_algos import PPO, NetworkConfig, PPOConfig, RNDConfig

N, T, A = 8, 6, 2
DIMS = {"policy": 3, "critic": 4}


def _cfg(kind: str) -> PPOConfig:
    net = NetworkConfig(hidden=(16,))
    kw = dict(actor=net, critic=net, num_epochs=2, num_mini_batches=3, learning_rate=3e-3)
    if kind == "default":
        return PPOConfig(**kw, desired_kl=0.001)
    if kind == "rsl_rl":
        return PPOConfig.rsl_rl(**kw, desired_kl=0.001)
    if kind == "rnd":
        rnd = RNDConfig(num_outputs=4, predictor_hidden=(8,), target_hidden=(8,), weight=0.3)
        return PPOConfig(**kw, rnd=rnd)
    rec = NetworkConfig(hidden=(8,), rnn_type=kind, rnn_hidden=8)
    return PPOConfig(**{**kw, "actor": rec, "critic": rec, "num_mini_batches": 2})


def _make(kind: str, seed: int) -> PPO:
    torch.manual_seed(seed)
    ppo = PPO({k: (d,) for k, d in DIMS.items()}, A, _cfg(kind))
    ppo.init_storage(N, T)
    return ppo


def _iteration(ppo: PPO, seed: int) -> dict:
    ppo.reset_memory()
    obs, rew, dones, touts = scripted_rollout(N, T, DIMS, seed)
    torch.manual_seed(1000 + seed)  # action sampling + mini-batch permutations
    with torch.no_grad():
        for t in range(T):
            ppo.act(obs_td(obs, t))
            ppo.process_env_step(step_td(obs, rew, dones, touts, t))
        ppo.compute_returns(obs_td(obs, T))
    return ppo.update()


def _roundtrip(sd: dict) -> dict:
    buf = io.BytesIO()
    torch.save(sd, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=True)


def _everything(ppo: PPO) -> dict[str, torch.Tensor]:
    out = {}
    for name, mod in zip(("actor", "critic", "rnd"), ppo.replicated_modules(), strict=False):
        out.update({f"{name}.{k}": v for k, v in mod.state_dict().items()})
    for name, opt in zip(("opt", "rnd_opt"), ppo.optimizers(), strict=False):
        for i, st in opt.state_dict()["state"].items():
            out.update({f"{name}.{i}.{k}": v for k, v in st.items()})
    return out


@pytest.mark.parametrize("kind", ["default", "rsl_rl", "rnd", "gru", "lstm"])
def test_round_trip_then_update_is_bitwise_identical(kind):
    a = _make(kind, seed=0)
    _iteration(a, seed=1)
    _iteration(a, seed=2)
    b = _make(kind, seed=123)  # different init: everything must come from the checkpoint
    b.load_state_dict(_roundtrip(a.state_dict()))
    assert b.learning_rate == a.learning_rate and b.num_updates == a.num_updates == 2
    ma, mb = _iteration(a, seed=3), _iteration(b, seed=3)
    assert ma == mb
    sa, sb = _everything(a), _everything(b)
    assert sa.keys() == sb.keys() and len(sa) > 10
    for k in sa:
        assert torch.equal(sa[k], sb[k]), k
    assert a.learning_rate == b.learning_rate
    if kind in ("default", "rsl_rl"):
        assert a.learning_rate != 3e-3  # the adaptive rule moved it: the LR was restored


def test_checkpoint_loads_across_lr_paths_and_rejects_missing_entries():
    a = _make("rsl_rl", seed=0)  # Python-float LR
    _iteration(a, seed=1)
    sd = a.state_dict()
    assert all(isinstance(g["lr"], float) for g in sd["optimizer"]["param_groups"])
    b = _make("default", seed=0)  # device LR
    b.load_state_dict(_roundtrip(sd))
    assert b.learning_rate == a.learning_rate
    assert b.state.optimizer.param_groups[0]["lr"] is b.state.lr_opt  # Adam reads the live tensor
    assert b.state.lr_opt.item() == pytest.approx(a.learning_rate, rel=1e-7)
    # the device-LR checkpoint stores floats, not the live tensor
    sd_b = b.state_dict()
    assert isinstance(sd_b["optimizer"]["param_groups"][0]["lr"], float)
    with pytest.raises(ValueError, match=r"missing entries.*optimizer"):
        b.load_state_dict({k: v for k, v in sd_b.items() if k != "optimizer"})
    c = _make("rnd", seed=0)
    with pytest.raises(ValueError, match="rnd"):
        c.load_state_dict(sd_b)
