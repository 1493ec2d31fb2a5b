"""Data-parallel equivalence of PPO beyond feed-forward `shuffle="none"` (docs/semantics.md, gloo, CPU).

1. Recurrent PPO (GRU, LSTM): the recurrent batcher cuts contiguous env slices, so W ranks of
   `N_LOCAL` envs with M mini-batches train, in mini-batch i, the envs `r*N_LOCAL + [i*q,
   (i+1)*q)` of every rank r (q = N_LOCAL / M). The single-process reference holds all W*N_LOCAL
   envs in the order `ENV_ORDER`, which puts exactly those envs in its own slice i.
2. Feed-forward PPO with `shuffle="per_epoch"`: every rank draws its permutations from its own
   generator. The reference (`_UnionOfRanksPPO`) replays those draws with generators seeded
   like the ranks' and trains on the union of the ranks' mini-batches i in its mini-batch i.

Both use the default (global) observation and advantage normalization. Negative controls show
that a different mini-batch composition gives different parameters, so the equalities are not
vacuous.
"""

from __future__ import annotations

import pytest
import torch
from _ppo_helpers import obs_td, scripted_rollout, step_td

from unilab_algos import PPO, NetworkConfig, PPOConfig
from unilab_storage import FeedForwardBatcher

unilab_dist = pytest.importorskip("unilab_dist")
from unilab_dist.testing import run_distributed  # noqa: E402

T, A, ITERS, EPOCHS = 6, 2, 2, 3
DIMS = {"policy": 3, "critic": 4}
WORLD = 2

# recurrent: N_LOCAL envs per rank, M_RNN env slices of Q envs
N_LOCAL, M_RNN = 4, 2
Q = N_LOCAL // M_RNN
# reference slot i*W*Q + r*Q + k holds global env r*N_LOCAL + i*Q + k -> [0, 1, 4, 5, 2, 3, 6, 7]
ENV_ORDER = [r * N_LOCAL + i * Q + k for i in range(M_RNN) for r in range(WORLD) for k in range(Q)]

# feed-forward per_epoch: M_FF mini-batches of T*N_LOCAL/M_FF flat samples per rank
M_FF = 3
GEN_SEED = 1000  # rank r's permutation generator: manual_seed(GEN_SEED + r)


def _recurrent_config(rnn_type: str, schedule: str) -> PPOConfig:
    net = NetworkConfig(hidden=(8,), rnn_type=rnn_type, rnn_hidden=6)
    return PPOConfig(
        actor=net,
        critic=net,
        schedule=schedule,
        num_epochs=EPOCHS,
        num_mini_batches=M_RNN,
        learning_rate=3e-3,
        desired_kl=1e-3,  # the adaptive LR moves both ways here without reaching its bounds
    )


def _ff_config(schedule: str) -> PPOConfig:
    net = NetworkConfig(hidden=(8, 8))
    return PPOConfig(
        actor=net,
        critic=net,
        schedule=schedule,
        shuffle="per_epoch",
        num_epochs=EPOCHS,
        num_mini_batches=M_FF,
        learning_rate=3e-3,
    )


def _train(
    config: PPOConfig,
    env_ids: list[int],
    num_envs_total: int,
    *,
    grad_sync=None,
    reduce_sum=None,
    generator: torch.Generator | None = None,
    learner_cls: type[PPO] = PPO,
    learner_kwargs: dict | None = None,
):
    """ITERS rollouts of the scripted stream restricted (and ordered) to `env_ids`, each
    followed by one update. Actions are pre-drawn per global env, so every layout stores the
    same transitions. Returns (params, Adam state, metrics per update, learning rate)."""
    torch.manual_seed(0)  # identical init everywhere (the runner would broadcast instead)
    ppo = learner_cls(
        {k: (d,) for k, d in DIMS.items()},
        A,
        config,
        grad_sync=grad_sync,
        reduce_sum=reduce_sum,
        generator=generator,
        **(learner_kwargs or {}),
    )
    ids = torch.tensor(env_ids)
    ppo.init_storage(len(env_ids), T)
    metrics = []
    for it in range(ITERS):
        obs, rew, dones, touts = scripted_rollout(num_envs_total, T, DIMS, seed=7 + it)
        obs = {k: v[:, ids] for k, v in obs.items()}
        rew, dones, touts = (x[:, ids] for x in (rew, dones, touts))
        g = torch.Generator().manual_seed(99 + it)
        actions = torch.randn(T, num_envs_total, A, generator=g)[:, ids]
        with torch.no_grad():
            for t in range(T):
                ppo.act(obs_td(obs, t))
                ppo.process_env_step(step_td(obs, rew, dones, touts, t))
            data = ppo.storage.data
            data["actions"] = actions
            dist = torch.distributions.Normal(data["mean"], data["std"])
            data["log_prob"] = dist.log_prob(actions).sum(-1)
            ppo.compute_returns(obs_td(obs, T))
        metrics.append(ppo.update())
    params = {f"actor.{k}": v for k, v in ppo.actor.state_dict().items()}
    params.update({f"critic.{k}": v for k, v in ppo.critic.state_dict().items()})
    return params, ppo.state.optimizer.state_dict()["state"], metrics, ppo.learning_rate


class _UnionOfRanksPPO(PPO):
    """Single-process reference whose feed-forward mini-batch i is the union, rank by rank, of
    the ranks' mini-batches i. It replays each rank's permutations with the real
    `FeedForwardBatcher` and a generator seeded like that rank's (`GEN_SEED + r`), kept across
    updates as the ranks keep theirs. Rank r's local flat index `t*n + e` is global flat index
    `t*W*n + r*n + e` (the reference holds the envs in rank order)."""

    def __init__(self, *args, world: int, n_local: int, gen_seeds: list[int], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.world, self.n_local = world, n_local
        self.rank_gens = [torch.Generator().manual_seed(s) for s in gen_seeds]
        self.update_driver.indices = self.union_indices  # the update's mini-batch source

    def union_indices(self, num_samples: int, generator: torch.Generator | None):
        cfg, n, w = self.config, self.n_local, self.world
        batcher = FeedForwardBatcher(
            num_mini_batches=cfg.num_mini_batches,
            num_epochs=cfg.num_epochs,
            shuffle=cfg.shuffle,
            remainder=cfg.remainder,
        )
        per_rank = [batcher.indices(num_samples // w, g) for g in self.rank_gens]
        for parts in zip(*per_rank, strict=True):
            yield torch.cat([(p // n) * (w * n) + r * n + p % n for r, p in enumerate(parts)])


def _dp_recurrent(rank: int, world: int, rnn_type: str, schedule: str):
    from unilab_dist import GradAllReduce, sum_reducer

    ids = list(range(rank * N_LOCAL, (rank + 1) * N_LOCAL))
    cfg = _recurrent_config(rnn_type, schedule)
    return _train(cfg, ids, world * N_LOCAL, grad_sync=GradAllReduce(), reduce_sum=sum_reducer())


def _dp_per_epoch(rank: int, world: int, schedule: str):
    from unilab_dist import GradAllReduce, sum_reducer

    ids = list(range(rank * N_LOCAL, (rank + 1) * N_LOCAL))
    return _train(
        _ff_config(schedule),
        ids,
        world * N_LOCAL,
        grad_sync=GradAllReduce(),
        reduce_sum=sum_reducer(),
        generator=torch.Generator().manual_seed(GEN_SEED + rank),
    )


def _assert_replicas_bitwise_equal(results) -> None:
    p0, s0, _m0, lr0 = results[0]
    for p, s, _m, lr in results[1:]:
        assert lr == lr0
        assert p.keys() == p0.keys()
        for k in p0:
            assert torch.equal(p[k], p0[k]), k
        assert s.keys() == s0.keys()
        for i in s0:
            for key in ("exp_avg", "exp_avg_sq", "step"):
                assert torch.equal(s[i][key], s0[i][key]), (i, key)


def _assert_close_params(got: dict, ref: dict) -> None:
    assert got.keys() == ref.keys()
    for k, v in ref.items():
        torch.testing.assert_close(got[k].to(v.dtype), v, rtol=2e-4, atol=2e-5, msg=k)


def _max_param_diff(a: dict, b: dict) -> float:
    return max(float((a[k].double() - b[k].double()).abs().max()) for k in a)


@pytest.mark.timeout(240)
@pytest.mark.parametrize(("rnn_type", "schedule"), [("gru", "adaptive"), ("lstm", "fixed")])
def test_recurrent_data_parallel_equals_single_process(rnn_type, schedule):
    assert ENV_ORDER == [0, 1, 4, 5, 2, 3, 6, 7]
    cfg = _recurrent_config(rnn_type, schedule)
    total = WORLD * N_LOCAL
    ref_params, _, ref_metrics, ref_lr = _train(cfg, ENV_ORDER, total)
    results = run_distributed(_dp_recurrent, WORLD, args=(rnn_type, schedule), timeout=200)
    _assert_replicas_bitwise_equal(results)
    p0, _s0, m0, lr0 = results[0]
    # the recurrent weights exist and moved: the test covers the RNN path
    rnn_keys = [k for k in p0 if ".memory.rnn." in k]
    assert len(rnn_keys) == 2 * 4  # actor + critic: weight_ih, weight_hh, bias_ih, bias_hh
    torch.manual_seed(0)
    init = PPO({k: (d,) for k, d in DIMS.items()}, A, cfg).actor.state_dict()
    assert not torch.equal(init["memory.rnn.weight_hh_l0"], p0["actor.memory.rnn.weight_hh_l0"])
    # data-parallel equivalence with one process holding all envs in the ranks' slice order
    assert lr0 == pytest.approx(ref_lr, rel=1e-6)
    _assert_close_params(p0, ref_params)
    for i, ref in enumerate(ref_metrics):
        assert m0[i]["mini_batches"] == ref["mini_batches"] == EPOCHS * M_RNN
        # E*M gradient syncs (KL folded in) + 1 global advantage normalization per rollout
        assert m0[i]["collectives"] == EPOCHS * M_RNN + 1
        assert ref["collectives"] == 0
        # equal-size rank-local means average to the global mini-batch mean
        mean_value = sum(r[2][i]["value"] for r in results) / WORLD
        assert ref["value"] == pytest.approx(mean_value, rel=1e-4)
        assert m0[i]["learning_rate"] == pytest.approx(ref["learning_rate"], rel=1e-6)
        if schedule == "adaptive":
            assert ref["kl"] == pytest.approx(m0[i]["kl"], rel=1e-4)
    if schedule == "adaptive":  # the KL rule really acted (3e-3 -> 2e-3 -> 4.5e-3)
        lrs = [m["learning_rate"] for m in ref_metrics]
        assert lrs == pytest.approx([2e-3, 4.5e-3], rel=1e-6)
    # negative control: the natural env order [0..7] puts envs {0..3} (rank 0 only) in the
    # reference's first slice, a different composition, and must not match
    other, _, _, _ = _train(cfg, list(range(total)), total)
    assert _max_param_diff(other, p0) > 1e-3


@pytest.mark.timeout(240)
@pytest.mark.parametrize("schedule", ["adaptive", "fixed"])
def test_per_epoch_shuffle_data_parallel_equals_union_of_rank_batches(schedule):
    cfg = _ff_config(schedule)
    total = WORLD * N_LOCAL
    ref_kwargs = dict(world=WORLD, n_local=N_LOCAL, gen_seeds=[GEN_SEED + r for r in range(WORLD)])
    ref_params, _, ref_metrics, ref_lr = _train(
        cfg, list(range(total)), total, learner_cls=_UnionOfRanksPPO, learner_kwargs=ref_kwargs
    )
    results = run_distributed(_dp_per_epoch, WORLD, args=(schedule,), timeout=200)
    _assert_replicas_bitwise_equal(results)
    p0, _s0, m0, lr0 = results[0]
    assert lr0 == pytest.approx(ref_lr, rel=1e-6)
    _assert_close_params(p0, ref_params)
    for i, ref in enumerate(ref_metrics):
        assert m0[i]["mini_batches"] == ref["mini_batches"] == EPOCHS * M_FF
        assert m0[i]["collectives"] == EPOCHS * M_FF + 1
        mean_value = sum(r[2][i]["value"] for r in results) / WORLD
        assert ref["value"] == pytest.approx(mean_value, rel=1e-4)
        assert m0[i]["learning_rate"] == pytest.approx(ref["learning_rate"], rel=1e-6)
        if schedule == "adaptive":
            assert ref["kl"] == pytest.approx(m0[i]["kl"], rel=1e-4)
    if schedule == "adaptive":  # the KL rule really acted (up to the 1e-2 bound, then down)
        lrs = [m["learning_rate"] for m in ref_metrics]
        assert lrs == pytest.approx([1e-2 / 1.5**2, 1e-2], rel=1e-6)
    # negative control: both ranks replayed from rank 0's seed is another composition
    same_kwargs = dict(ref_kwargs, gen_seeds=[GEN_SEED, GEN_SEED])
    other, _, _, _ = _train(
        cfg, list(range(total)), total, learner_cls=_UnionOfRanksPPO, learner_kwargs=same_kwargs
    )
    assert _max_param_diff(other, p0) > 1e-3


def test_union_reference_draws_the_ranks_permutations():
    """The reference's index replay is exactly the ranks' draws, mapped to global flat indices:
    checked against `FeedForwardBatcher` run per rank on hand-built global ids."""
    n, w, m = N_LOCAL, WORLD, M_FF
    # global flat id of (t, rank r, local env e) laid out as each rank's local flat order
    local_to_global = [
        torch.tensor([t * w * n + r * n + e for t in range(T) for e in range(n)]) for r in range(w)
    ]
    batcher = FeedForwardBatcher(num_mini_batches=m, num_epochs=EPOCHS, shuffle="per_epoch")
    expected = [[] for _ in range(EPOCHS * m)]
    for r in range(w):
        g = torch.Generator().manual_seed(GEN_SEED + r)
        for j, idx in enumerate(batcher.indices(T * n, g)):
            expected[j].append(local_to_global[r][idx])
    torch.manual_seed(0)
    ref = _UnionOfRanksPPO(
        {k: (d,) for k, d in DIMS.items()},
        A,
        _ff_config("fixed"),
        world=w,
        n_local=n,
        gen_seeds=[GEN_SEED + r for r in range(w)],
    )
    ref.init_storage(w * n, T)
    ref.storage.data["rewards"] = torch.arange(T * w * n, dtype=torch.float32).view(T, w * n)
    got = [mb.data["rewards"].long() for mb in ref.update_driver.batches(ref.storage.data, None)]
    assert len(got) == EPOCHS * m == 9
    for j, idx in enumerate(got):
        assert idx.numel() == w * T * n // m == 16
        assert torch.equal(idx, torch.cat(expected[j])), j
    # every epoch is a permutation of all samples, and epochs differ (fresh draws)
    for e in range(EPOCHS):
        epoch = torch.cat(got[e * m : (e + 1) * m])
        assert torch.equal(epoch.sort().values, torch.arange(T * w * n))
    assert not torch.equal(torch.cat(got[:m]), torch.cat(got[m : 2 * m]))
