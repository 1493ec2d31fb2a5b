"""Data-parallel equivalence, replica consistency and collective counts of PPO (gloo, CPU)."""

from __future__ import annotations

import pytest
import torch
from _ppo_helpers import obs_td, scripted_rollout, step_td

from unilab_algos import PPO, NetworkConfig, PPOConfig

unilab_dist = pytest.importorskip("unilab_dist")
from unilab_dist.testing import run_distributed  # noqa: E402

N, T, A, ITERS = 6, 8, 2, 2
DIMS = {"policy": 4, "critic": 5}


def _config(schedule: str) -> PPOConfig:
    net = NetworkConfig(hidden=(16, 16))
    # shuffle="none" makes rank mini-batch k = time steps {2k, 2k+1} of its envs, so the union
    # over ranks is exactly the single process's mini-batch k.
    return PPOConfig(actor=net, critic=net, schedule=schedule, shuffle="none", num_mini_batches=4)


def _train(rank: int, world: int, schedule: str, grad_sync, reduce_sum):
    torch.manual_seed(0)  # identical init everywhere (the runner would broadcast instead)
    ppo = PPO(
        {k: (d,) for k, d in DIMS.items()},
        A,
        _config(schedule),
        grad_sync=grad_sync,
        reduce_sum=reduce_sum,
    )
    n_local = N * 3 // world if world > 1 else N * 3
    lo = rank * n_local
    ppo.init_storage(n_local, T)
    metrics = []
    for it in range(ITERS):
        obs, rew, dones, touts = scripted_rollout(N * 3, T, DIMS, seed=7 + it)
        obs = {k: v[:, lo : lo + n_local] for k, v in obs.items()}
        rew, dones, touts = (x[:, lo : lo + n_local] for x in (rew, dones, touts))
        g = torch.Generator().manual_seed(99 + it)
        actions = torch.randn(T, N * 3, A, generator=g)[:, lo : lo + n_local]
        with torch.no_grad():
            for t in range(T):
                ppo.act(obs_td(obs, t))
                ppo.process_env_step(step_td(obs, rew, dones, touts, t))
            data = ppo.storage.data  # deterministic actions: same stream on every layout
            data["actions"] = actions
            dist = torch.distributions.Normal(data["mean"], data["std"])
            data["log_prob"] = dist.log_prob(actions).sum(-1)
            ppo.compute_returns(obs_td(obs, T))
        metrics.append(ppo.update())
    params = {f"actor.{k}": v for k, v in ppo.actor.state_dict().items()}
    params.update({f"critic.{k}": v for k, v in ppo.critic.state_dict().items()})
    return params, ppo.state.optimizer.state_dict()["state"], metrics, ppo.learning_rate


def _dp_body(rank: int, world: int, schedule: str):
    from unilab_dist import GradAllReduce, sum_reducer

    return _train(rank, world, schedule, GradAllReduce(), sum_reducer())


@pytest.mark.parametrize(("world", "schedule"), [(2, "adaptive"), (3, "fixed")])
def test_data_parallel_equals_single_process(world, schedule):
    ref_params, _, ref_metrics, ref_lr = _train(0, 1, schedule, None, None)
    results = run_distributed(_dp_body, world, args=(schedule,), timeout=240)
    # replica consistency: bitwise equal params and Adam state on every rank
    p0, s0, m0, lr0 = results[0]
    for p, s, _m, lr in results[1:]:
        assert lr == lr0
        for k in p0:
            assert torch.equal(p[k], p0[k]), k
        for i in s0:
            for key in ("exp_avg", "exp_avg_sq", "step"):
                assert torch.equal(s[i][key], s0[i][key])
    # data-parallel equivalence with the single process holding all envs
    assert lr0 == ref_lr
    for k, v in ref_params.items():
        torch.testing.assert_close(p0[k].to(v.dtype), v, rtol=2e-4, atol=2e-5, msg=k)
    # collective count: E*M gradient syncs (KL folded) + 1 global advantage normalization
    for m in m0:
        assert m["collectives"] == 5 * 4 + 1
        assert m["mini_batches"] == 20
    # losses are rank-local means of equal-size mini-batches: their average is the global one
    for i, ref in enumerate(ref_metrics):
        mean_value = sum(r[2][i]["value"] for r in results) / world
        assert ref["value"] == pytest.approx(mean_value, rel=1e-4)
        if schedule == "adaptive":  # the KL rode in the gradient collective: already global
            assert ref["kl"] == pytest.approx(m0[i]["kl"], rel=1e-4)
