"""FastSAC on 2 gloo ranks: data-parallel equivalence and replica consistency (targets too)."""

from __future__ import annotations

import torch
from _fastsac_helpers import ACT, OBS, env_step, flat_state, random_batch, small_config

from unilab_dist.testing import run_distributed

U, B, CALLS = 4, 16, 3


def _learner(world_size, num_envs, batch, grad_sync=None, reduce_sum=None):
    from unilab_algos.fastsac import FastSAC

    torch.manual_seed(0)
    # A large Adam eps keeps the update proportional to the gradient: with eps=1e-8 Adam turns
    # float-rounding-sized gradients (zero-initialized heads give exact zeros) into +-lr steps.
    cfg = small_config(
        batch_size=batch,
        num_updates=U,
        policy_frequency=2,
        adam_eps=0.1,
        actor_lr=1e-2,
        critic_lr=1e-2,
        alpha_lr=1e-2,
    )
    return FastSAC(
        OBS,
        ACT,
        cfg,
        num_envs=num_envs,
        world_size=world_size,
        grad_sync=grad_sync,
        reduce_sum=reduce_sum,
    )


def _observe_rows(learner, rank, world, n_per_rank):
    """Feed the same global env rows; rank r sees envs [r*n, (r+1)*n)."""
    gen = torch.Generator().manual_seed(11)
    obs = env_step(world * n_per_rank, gen)
    for t in range(3):
        step = env_step(world * n_per_rank, gen, done_every=2, t=t)
        sl = slice(rank * n_per_rank, (rank + 1) * n_per_rank)
        learner.observe(obs[sl], torch.zeros(n_per_rank, ACT), step[sl])
        obs = step


def _train_on_fixed_batches(learner, rank, world):
    """Every rank draws the same global [U, 2B] batches and trains on its 1/world share."""
    gen = torch.Generator().manual_seed(5)
    share = 2 * B // world
    metrics = []
    for _ in range(CALLS):
        full = random_batch(U, 2 * B, gen)
        metrics.append(learner.update_from_batch(full[:, rank * share : (rank + 1) * share]))
    return metrics


def _dp_rank(rank, world_size):
    from unilab_dist import GradAllReduce, broadcast_module_state, sum_reducer

    learner = _learner(world_size, 4, 2 * B, GradAllReduce(), sum_reducer())
    broadcast_module_state(learner.replicated_modules())
    _observe_rows(learner, rank, world_size, 4)
    metrics = _train_on_fixed_batches(learner, rank, world_size)
    return flat_state(learner), metrics


def test_data_parallel_equivalence_and_replicas():
    single = _learner(1, 8, 2 * B)
    _observe_rows(single, 0, 1, 8)
    ref_metrics = _train_on_fixed_batches(single, 0, 1)
    ref = flat_state(single)
    (s0, m0), (s1, m1) = run_distributed(_dp_rank, 2, timeout=240)
    # replicas: bitwise identical parameters, targets, temperature, normalizers, optimizer state
    assert s0.keys() == s1.keys() == ref.keys()
    for k in s0:
        assert torch.equal(s0[k], s1[k]), k
    # data parallel: 2 ranks x B == 1 process x 2B on the same transitions
    for k in ref:
        torch.testing.assert_close(s0[k].double(), ref[k].double(), rtol=1e-4, atol=1e-5, msg=k)
    # metrics are global means (they ride the last gradient all-reduce): equal on both ranks
    assert m0 == m1
    for a, b in zip(m0, ref_metrics, strict=True):
        for k in ("critic_loss", "actor_loss", "alpha_loss", "q_mean"):
            assert abs(a[k] - b[k]) <= 1e-4 * max(1.0, abs(b[k])), k


def _replica_rank(rank, world_size):
    from unilab_dist import GradAllReduce, accounting, broadcast_module_state, sum_reducer

    torch.manual_seed(100 + rank)  # different init and sampling per rank before the broadcast
    from unilab_algos.fastsac import FastSAC

    learner = FastSAC(
        OBS,
        ACT,
        small_config(batch_size=32, num_updates=U),
        num_envs=3,
        world_size=world_size,
        grad_sync=GradAllReduce(),
        reduce_sum=sum_reducer(),
    )
    broadcast_module_state(learner.replicated_modules())
    gen = torch.Generator().manual_seed(rank)  # rank-local data
    obs = env_step(3, gen)
    accounting.reset()
    counts = []
    for t in range(5):
        step = env_step(3, gen, done_every=2, t=t)
        with accounting.phase("observe"):
            learner.observe(obs, learner.act(obs), step)
        with accounting.phase("update"):
            learner.update()
        obs = step
        counts.append({k: v["collectives"] for k, v in accounting.snapshot().items()})
    return flat_state(learner), counts, learner.critic_updates, learner.actor_updates


def test_replica_consistency_with_rank_local_replay():
    (s0, c0, cu, au), (s1, c1, _, _) = run_distributed(_replica_rank, 2, timeout=240)
    assert (cu, au) == (5 * U, 5 * U // 2)  # policy_frequency 2
    for k in s0:
        assert torch.equal(s0[k], s1[k]), k
    # the loop above covered the target critic too (updated locally on each rank)
    assert any(k.startswith("m2.") for k in s0)
    # accounting: per env step 1 normalizer reduction (policy and critic fused) and U grad
    # all-reduces
    assert c0[-1] == c1[-1] == {"observe": 5, "update": U * 5}
