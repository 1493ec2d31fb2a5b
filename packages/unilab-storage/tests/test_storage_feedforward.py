"""Feed-forward and time-step mini-batches: each shuffle/remainder mode, and RSL-RL 5.4.2."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from unilab_storage import FeedForwardBatcher, feed_forward_batches, timestep_batches


def _indices(num_samples, m, e, shuffle, remainder, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [
        b.tolist() for b in feed_forward_batches(num_samples, m, e, shuffle, remainder, generator=g)
    ]


def test_no_shuffle_drop_and_spread_exact_indices():
    # T*N = 10 samples, M = 4: drop -> 4 x 2 (8, 9 never used); spread -> 3, 3, 2, 2
    assert _indices(10, 4, 2, "none", "drop") == [[0, 1], [2, 3], [4, 5], [6, 7]] * 2
    assert _indices(10, 4, 1, "none", "spread") == [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]


def test_per_iteration_reuses_one_permutation_and_drops_tail():
    g = torch.Generator().manual_seed(5)
    perm = torch.randperm(68, generator=g).tolist()  # N=10, T=7, M=4: randperm(68)
    batches = _indices(70, 4, 3, "per_iteration", "drop", seed=5)
    assert len(batches) == 12 and all(len(b) == 17 for b in batches)
    expected_epoch = [perm[i * 17 : (i + 1) * 17] for i in range(4)]
    assert batches[0:4] == expected_epoch
    assert batches[4:8] == expected_epoch and batches[8:12] == expected_epoch
    used = sorted(i for b in batches[:4] for i in b)
    assert used == list(range(68))  # flat 68 and 69 (t=6, envs 8, 9) never train


def test_per_epoch_draws_a_new_permutation_each_epoch():
    g = torch.Generator().manual_seed(11)
    perms = [torch.randperm(9, generator=g).tolist() for _ in range(2)]  # 10 // 3 * 3 = 9
    batches = _indices(10, 3, 2, "per_epoch", "drop", seed=11)
    assert batches[:3] == [perms[0][0:3], perms[0][3:6], perms[0][6:9]]
    assert batches[3:] == [perms[1][0:3], perms[1][3:6], perms[1][6:9]]
    assert batches[:3] != batches[3:]


def test_spread_uses_every_sample_once_per_epoch_sizes_differ_by_one():
    batches = _indices(23, 5, 2, "per_epoch", "spread", seed=2)
    assert [len(b) for b in batches] == [5, 5, 5, 4, 4] * 2
    for epoch in (batches[:5], batches[5:]):
        assert sorted(i for b in epoch for i in b) == list(range(23))
    g = torch.Generator().manual_seed(2)
    perm = torch.randperm(23, generator=g).tolist()
    assert batches[0] == perm[:5] and batches[4] == perm[19:]


def test_per_iteration_spread_reuses_permutation():
    batches = _indices(7, 2, 2, "per_iteration", "spread", seed=4)
    assert [len(b) for b in batches] == [4, 3, 4, 3]
    assert batches[:2] == batches[2:]
    assert sorted(batches[0] + batches[1]) == list(range(7))


def test_draw_is_lazy_like_rsl_rl():
    torch.manual_seed(7)
    it = feed_forward_batches(12, 3, 1)
    torch.randperm(4)  # consumes global RNG before the first next()
    first = next(it)
    torch.manual_seed(7)
    torch.randperm(4)
    assert first.tolist() == torch.randperm(12)[:4].tolist()


def _rsl_storage(T, N, seed, device="cpu"):
    from rsl_rl.storage import RolloutStorage as RslStorage

    g = torch.Generator().manual_seed(seed)
    obs = TensorDict({"policy": torch.zeros(N, 3), "critic": torch.zeros(N, 5)}, batch_size=[N])
    st = RslStorage("rl", N, T, obs.to(device), (2,), device=device)
    flat = torch.arange(T * N, dtype=torch.float32).reshape(T, N, 1)
    st.observations["policy"].copy_(flat.expand(T, N, 3))
    st.observations["critic"].copy_(torch.randn(T, N, 5, generator=g))
    st.actions.copy_(torch.randn(T, N, 2, generator=g))
    st.values.copy_(torch.randn(T, N, 1, generator=g))
    st.returns.copy_(torch.randn(T, N, 1, generator=g))
    st.advantages = torch.randn(T, N, 1, generator=g).to(device)
    st.actions_log_prob.copy_(torch.randn(T, N, 1, generator=g))
    st.distribution_params = tuple(
        p.to(device) for p in (torch.randn(T, N, 2, generator=g), torch.rand(T, N, 2, generator=g))
    )
    data = TensorDict(
        {
            "obs": {"policy": st.observations["policy"], "critic": st.observations["critic"]},
            "actions": st.actions,
            "values": st.values.squeeze(-1),
            "returns": st.returns.squeeze(-1),
            "advantages": st.advantages.squeeze(-1),
            "log_prob": st.actions_log_prob.squeeze(-1),
            "mean": st.distribution_params[0],
            "std": st.distribution_params[1],
        },
        batch_size=[T, N],
        device=device,
    )
    return st, data


@pytest.mark.parametrize(
    ("T", "N", "M", "E", "device"),
    [
        (7, 10, 4, 3, "cpu"),
        (24, 16, 4, 5, "cpu"),
        (5, 3, 15, 2, "cpu"),
        pytest.param(24, 4096, 4, 5, "cuda", marks=pytest.mark.gpu),
    ],
)
def test_rsl_rl_mode_equals_rsl_rl_mini_batch_generator(T, N, M, E, device):
    st, data = _rsl_storage(T, N, seed=T, device=device)
    torch.manual_seed(123)
    ref = list(st.mini_batch_generator(M, E))
    torch.manual_seed(123)
    ours = list(FeedForwardBatcher.rsl_rl(M, E).batches(data))
    assert len(ours) == len(ref) == M * E
    for b, r in zip(ours, ref, strict=True):
        assert torch.equal(b["obs", "policy"], r.observations["policy"])
        assert torch.equal(b["obs", "critic"], r.observations["critic"])
        assert torch.equal(b["actions"], r.actions)
        assert torch.equal(b["values"], r.values.squeeze(-1))
        assert torch.equal(b["returns"], r.returns.squeeze(-1))
        assert torch.equal(b["advantages"], r.advantages.squeeze(-1))
        assert torch.equal(b["log_prob"], r.old_actions_log_prob.squeeze(-1))
        assert torch.equal(b["mean"], r.old_distribution_params[0])
        assert torch.equal(b["std"], r.old_distribution_params[1])
    # Both left the global RNG in the same state.
    torch.manual_seed(123)
    list(FeedForwardBatcher.rsl_rl(M, E).batches(data))
    after_ours = torch.rand(3, device=device)
    torch.manual_seed(123)
    list(st.mini_batch_generator(M, E))
    assert torch.equal(after_ours, torch.rand(3, device=device))


def test_batches_accept_flat_data_and_index_flat_t_times_n_plus_env():
    T, N = 3, 4
    data = TensorDict({"x": torch.arange(T * N).reshape(T, N)}, batch_size=[T, N])
    batcher = FeedForwardBatcher(num_mini_batches=2, num_epochs=1, shuffle="none")
    assert [b["x"].tolist() for b in batcher.batches(data)] == [
        [0, 1, 2, 3, 4, 5],
        [6, 7, 8, 9, 10, 11],
    ]
    flat = list(batcher.batches(data.flatten(0, 1)))
    assert flat[1]["x"].tolist() == [6, 7, 8, 9, 10, 11]


def test_timestep_batches_in_order_per_epoch():
    data = TensorDict({"x": torch.arange(6).reshape(3, 2)}, batch_size=[3, 2])
    out = [b["x"].tolist() for b in timestep_batches(data, num_epochs=2)]
    assert out == [[0, 1], [2, 3], [4, 5]] * 2


def test_bad_input():
    with pytest.raises(ValueError, match="larger than the number of samples 4"):
        feed_forward_batches(4, 5, 1)
    with pytest.raises(ValueError, match="num_epochs must be >= 1"):
        FeedForwardBatcher(num_mini_batches=2, num_epochs=0)
    with pytest.raises(ValueError, match="shuffle"):
        FeedForwardBatcher(num_mini_batches=2, num_epochs=1, shuffle="always")
    with pytest.raises(ValueError, match="remainder"):
        FeedForwardBatcher(num_mini_batches=2, num_epochs=1, remainder="pad")
    with pytest.raises(TypeError, match="num_mini_batches must be an int"):
        FeedForwardBatcher(num_mini_batches=2.0, num_epochs=1)
    with pytest.raises(ValueError, match=r"\[T, N\]"):
        list(timestep_batches(TensorDict({"x": torch.zeros(3)}, batch_size=[3])))
