"""Fault guards and episode statistics on hand-made steps."""

from __future__ import annotations

import math

import pytest
import torch
from tensordict import TensorDict

from unilab_integration import NonFiniteError
from unilab_integration._episodes import EpisodeStats, means_from_sums
from unilab_integration._runners._guards import ObservationGuard, check_losses, check_modules


def _step(done, ret, length, term):
    n = len(done)
    return TensorDict(
        {
            "done": torch.tensor(done),
            "episode": {
                "return": torch.tensor(ret),
                "length": torch.tensor(length),
                "alive": torch.tensor(term),
            },
        },
        batch_size=[n],
    )


def test_episode_stats_count_weighted():
    stats = EpisodeStats(torch.device("cpu"))
    stats.add(_step([True, False, True], [10.0, 99.0, 20.0], [5.0, 0.0, 7.0], [1.0, 0.0, 3.0]))
    stats.add(_step([False, False, True], [0.0, 0.0, 60.0], [0.0, 0.0, 9.0], [0.0, 0.0, 5.0]))
    sums = stats.local_sums()
    assert sums == {
        "episode/count": 3.0,
        "episode/return_sum": 90.0,
        "episode/length_sum": 21.0,
        "episode_term/alive_sum": 9.0,
    }
    # another rank with one episode of return 10: global mean = (90 + 10) / 4
    other = {
        "episode/count": 1.0,
        "episode/return_sum": 10.0,
        "episode/length_sum": 3.0,
        "episode_term/alive_sum": 1.0,
    }
    means = means_from_sums({k: sums[k] + other[k] for k in sums})
    assert means["episode/return"] == 25.0 and means["episode/length"] == 6.0
    assert means["episode_term/alive"] == 2.5
    stats.reset()
    assert stats.local_sums()["episode/count"] == 0.0
    assert math.isnan(means_from_sums(stats.local_sums())["episode/return"])


def test_episode_stats_exact_for_integer_columns():
    # a length column of int64 beyond float32's exact range, next to float32 columns
    big = 2**25 + 1
    step = TensorDict(
        {
            "done": torch.tensor([True, True]),
            "episode": {
                "return": torch.tensor([1.5, 2.25]),
                "length": torch.tensor([big, 3], dtype=torch.int64),
            },
        },
        batch_size=[2],
    )
    stats = EpisodeStats(torch.device("cpu"))
    stats.add(step)
    sums = stats.local_sums()
    assert sums["episode/length_sum"] == big + 3 and sums["episode/return_sum"] == 3.75


def test_observation_guard_names_group_and_step():
    guard = ObservationGuard(["policy", "critic"], torch.device("cpu"))
    ok = TensorDict({"policy": torch.zeros(2, 3), "critic": torch.zeros(2, 4)}, batch_size=[2])
    guard.observe(ok)
    guard.check(rank=0, iteration=1)
    bad = ok.clone()
    bad["critic"][1, 2] = float("inf")
    guard.observe(bad)
    guard.observe(ok)
    with pytest.raises(
        NonFiniteError,
        match=r"non-finite observation in group 'critic' on rank 1 at iteration 4 \(rollout step 1\)",
    ):
        guard.check(rank=1, iteration=4)
    guard.reset()
    guard.observe(ok)
    guard.check(rank=1, iteration=5)


def test_loss_and_module_checks():
    check_losses({"value": 1.0, "surrogate": -0.5}, rank=0, iteration=3)
    with pytest.raises(
        NonFiniteError, match=r"non-finite loss term 'value' = nan on rank 1 at iteration 3"
    ):
        check_losses({"surrogate": 0.1, "value": float("nan")}, rank=1, iteration=3)
    net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 1))
    check_modules([net], rank=0, iteration=1, names=["Actor"])
    net[1].weight.grad = torch.tensor([[0.0, float("nan")]])
    with pytest.raises(
        NonFiniteError, match=r"non-finite gradient of 'Actor.1.weight' on rank 0 at iteration 2"
    ):
        check_modules([net], rank=0, iteration=2, names=["Actor"])
    net[1].weight.grad = None
    with torch.no_grad():
        net[0].bias[0] = float("-inf")
    with pytest.raises(NonFiniteError, match=r"non-finite parameter of 'Actor.0.bias'"):
        check_modules([net], rank=0, iteration=2, names=["Actor"])


def test_replica_state_leaves_out_rank_local_normalizers_only():
    """The replica check compares parameters, global normalizers' statistics and optimizer
    state; the statistics of local normalizers (the rsl_rl preset's) differ by design."""
    from unilab_algos import PPO, PPOConfig, RNDConfig
    from unilab_integration._runners._base import replica_state

    shapes = {"policy": (3,), "critic": (4,)}
    rnd = RNDConfig(predictor_hidden=(8,), target_hidden=(8,))
    glob = PPO(shapes, 2, PPOConfig(rnd=rnd), reduce_sum=lambda x: x)
    local = PPO(shapes, 2, PPOConfig.rsl_rl(rnd=rnd))
    names = {}
    for key, learner in (("global", glob), ("local", local)):
        state = replica_state(learner.replicated_modules())
        assert list(state) == ["GaussianActor[0]", "ValueCritic[1]", "RND[2]"]
        names[key] = {f"{m}.{k}" for m, td in state.items() for k in td.keys()}  # noqa: SIM118
        params = {
            f"{type(m).__name__}[{i}].{n}"
            for i, m in enumerate(learner.replicated_modules())
            for n, _ in m.named_parameters()
        }
        assert params <= names[key]
        assert learner.optimizers() == [learner.state.optimizer, learner.state.rnd_optimizer]
    assert "GaussianActor[0].obs_normalizer.mean" in names["global"]
    assert names["global"] - names["local"] == {
        f"{m}.{norm}.{s}"
        for m, norm in (
            ("GaussianActor[0]", "obs_normalizer"),
            ("ValueCritic[1]", "obs_normalizer"),
            ("RND[2]", "state_normalizer"),
        )
        for s in ("mean", "var", "std", "count")
    }
