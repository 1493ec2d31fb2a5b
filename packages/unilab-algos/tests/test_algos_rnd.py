"""PPO's RND curiosity: frozen target, trained predictor, replication, one grad_sync per
mini-batch carrying the predictor grads, intrinsic reward value, local/global normalizers."""

from __future__ import annotations

import pytest
import torch
from _ppo_helpers import DoubleSum, obs_td, scripted_rollout, step_td

from unilab_algos import PPO, NetworkConfig, PPOConfig, RNDConfig

N, T, A = 8, 6, 2
DIMS = {"policy": 3, "critic": 4}
E, M = 2, 3


class _Recorder:
    """Fake one-rank grad_sync: records the parameter ids of every call, returns `extra`."""

    def __init__(self):
        self.calls: list[set[int]] = []

    def __call__(self, params, extra):
        self.calls.append({id(p) for p in params})
        assert all(p.grad is not None for p in params)
        return extra


def _ppo(grad_sync=None, reduce_sum=None, scope="global", weight=0.5) -> PPO:
    torch.manual_seed(0)
    net = NetworkConfig(hidden=(16,))
    rnd = RNDConfig(
        obs=("policy", "critic"),
        num_outputs=4,
        predictor_hidden=(16,),
        target_hidden=(16,),
        weight=weight,
        learning_rate=1e-2,
    )
    cfg = PPOConfig(
        actor=net,
        critic=net,
        num_epochs=E,
        num_mini_batches=M,
        rnd=rnd,
        obs_norm_scope=scope,
        advantage_norm_scope=scope,
    )
    ppo = PPO(
        {k: (d,) for k, d in DIMS.items()}, A, cfg, grad_sync=grad_sync, reduce_sum=reduce_sum
    )
    ppo.init_storage(N, T)
    return ppo


def _rollout(ppo: PPO, seed: int) -> None:
    obs, rew, dones, touts = scripted_rollout(N, T, DIMS, seed)
    with torch.no_grad():
        for t in range(T):
            ppo.act(obs_td(obs, t))
            ppo.process_env_step(step_td(obs, rew, dones, touts, t))
        ppo.compute_returns(obs_td(obs, T))


def _states(seed: int) -> torch.Tensor:
    obs, *_ = scripted_rollout(N, T, DIMS, seed)
    return torch.cat([obs["policy"], obs["critic"]], dim=-1).flatten(0, 1)


def test_target_frozen_predictor_trains_one_sync_per_mini_batch():
    rec = _Recorder()
    ppo = _ppo(grad_sync=rec)
    rnd = ppo.rnd
    target0 = {k: v.clone() for k, v in rnd.target.state_dict().items()}
    pred0 = [p.detach().clone() for p in rnd.predictor.parameters()]
    probe = _states(99)
    loss0 = rnd.loss(probe).item()
    for it in range(4):
        _rollout(ppo, seed=it)
        m = ppo.update()
        assert m["collectives"] == E * M  # grad syncs only (reduce_sum=None: one process)
        assert m["rnd"] > 0.0
    for k, v in rnd.target.state_dict().items():
        assert torch.equal(v, target0[k]), k
    assert all(p.grad is None for p in rnd.target.parameters())
    assert not any(p.requires_grad for p in rnd.target.parameters())
    assert all(not torch.equal(p, p0) for p, p0 in zip(rnd.predictor.parameters(), pred0))
    assert rnd.loss(probe).item() < 0.7 * loss0  # the predictor learns the target
    # one grad_sync per mini-batch, carrying actor + critic + predictor grads together
    assert len(rec.calls) == 4 * E * M
    expected = {id(p) for p in (*ppo.actor.parameters(), *ppo.critic.parameters())}
    expected |= {id(p) for p in rnd.predictor.parameters()}
    for call in rec.calls:
        assert call == expected
        assert not call & {id(p) for p in rnd.target.parameters()}


def test_target_and_predictor_are_replicated():
    ppo = _ppo()
    tensors = {
        id(t) for mod in ppo.replicated_modules() for t in (*mod.parameters(), *mod.buffers())
    }
    rnd = ppo.rnd
    for t in (*rnd.target.parameters(), *rnd.predictor.parameters(), *rnd.buffers()):
        assert id(t) in tensors
    assert rnd.state_normalizer.mean.shape == (7,)


def test_intrinsic_reward_is_added_to_the_stored_reward():
    ppo = _ppo(weight=0.5)
    obs, rew, dones, touts = scripted_rollout(N, T, DIMS, seed=4)
    touts = torch.zeros_like(touts)  # no time-out bootstrap: reward = extrinsic + intrinsic
    with torch.no_grad():
        ppo.act(obs_td(obs, 0))
        step = step_td(obs, rew, dones, touts, 0)
        ppo.process_env_step(step)
        # by hand, after the normalizer has seen the step's observation
        s = torch.cat([obs["policy"][1], obs["critic"][1]], dim=-1)
        norm = ppo.rnd.state_normalizer
        z = (s - norm.mean.float()) / (norm.std.float() + norm.eps)
        bonus = 0.5 * (ppo.rnd.target(z) - ppo.rnd.predictor(z)).pow(2).sum(1).sqrt()
    stored = ppo.storage.data["rewards"][0]
    torch.testing.assert_close(stored, rew[0] + bonus)
    assert bonus.min() > 0


@pytest.mark.parametrize("scope", ["global", "local"])
def test_rnd_normalizer_follows_the_statistics_scope(scope):
    reducer = DoubleSum()
    ppo = _ppo(reduce_sum=reducer, scope=scope)
    norm = ppo.rnd.state_normalizer
    assert norm.is_global is (scope == "global")
    assert norm.reduce_sum is (reducer if scope == "global" else None)
    obs, rew, dones, touts = scripted_rollout(N, T, DIMS, seed=5)
    with torch.no_grad():
        for t in range(T):
            ppo.act(obs_td(obs, t))
            ppo.process_env_step(step_td(obs, rew, dones, touts, t))
    factor = 2 if scope == "global" else 1
    assert int(norm.count) == factor * N * T
    # actor, critic and RND normalizers: one fused reduce_sum per env step when global
    assert reducer.calls == (T if scope == "global" else 0)
    # two identical ranks: the global moments equal the local ones of the same data
    states = torch.cat([obs["policy"][1:], obs["critic"][1:]], dim=-1).flatten(0, 1).double()
    torch.testing.assert_close(norm.mean, states.mean(0))
    torch.testing.assert_close(norm.var, states.var(0, unbiased=False))
