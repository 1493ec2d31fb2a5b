"""EmpiricalNormalizer: RSL-RL bitwise mode, exact float64 mode, global mode, errors; mlp."""

from __future__ import annotations

import pytest
import torch
from _ppo_helpers import DoubleSum
from torch import nn

from unilab_algos import EmpiricalNormalizer, mlp
from unilab_algos.common.normalizer import update_normalizers


def _batches(seed: int, sizes):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n, 3, generator=g) * 4 + 2 for n in sizes]


def test_rsl_rl_mode_is_bitwise_rsl_rl():
    from rsl_rl.modules import EmpiricalNormalization

    ref, ours = EmpiricalNormalization(3, until=40), EmpiricalNormalizer(3, mode="rsl_rl", until=40)
    for x in _batches(0, [7, 1, 12, 9, 30, 5]):
        ref.update(x)
        ours.update(x)
    assert int(ours.count) == int(ref.count) == 59  # stopped once count >= until
    assert torch.equal(ours.mean, ref._mean[0]) and torch.equal(ours.std, ref._std[0])
    x = torch.randn(4, 3)
    assert torch.equal(ours(x), ref(x))


def test_exact_mode_matches_float64_population_moments():
    norm = EmpiricalNormalizer(3)
    xs = _batches(1, [5, 1, 17, 3])
    for x in xs:
        norm.update(x)
    allx = torch.cat(xs).double()
    torch.testing.assert_close(norm.mean, allx.mean(0), rtol=0, atol=1e-12)
    torch.testing.assert_close(norm.var, allx.var(0, unbiased=False), rtol=0, atol=1e-12)
    assert int(norm.count) == 26
    y = norm(torch.ones(2, 3))
    assert y.dtype == torch.float32
    expected = (1.0 - allx.mean(0)) / (allx.var(0, unbiased=False).sqrt() + 1e-2)
    torch.testing.assert_close(y[0], expected.float())
    torch.testing.assert_close(norm.inverse(y), torch.ones(2, 3))


def _far_batches(seed: int, sizes, offset: float):
    """float64 batches of 3 features with |mean| / std about `offset` (ill-conditioned)."""
    g = torch.Generator().manual_seed(seed)
    scale = torch.tensor([1.0, 0.5, 2.0], dtype=torch.float64)
    return [offset + torch.randn(n, 3, generator=g, dtype=torch.float64) * scale for n in sizes]


def _assert_moments_of(norm: EmpiricalNormalizer, allx: torch.Tensor, offset: float) -> None:
    shifted = allx - allx[0]  # well-conditioned: the reference is exact to float64
    torch.testing.assert_close(norm.mean - allx[0], shifted.mean(0), rtol=0, atol=offset * 1e-15)
    # float64 holds the mean to offset * 1e-16, which bounds the variance's relative error
    # (unilab_dist.RunningMoments does as well; the sum-of-squares merge lost all of it at 1e8)
    var = shifted.var(0, unbiased=False)
    torch.testing.assert_close(norm.var, var, rtol=offset * 1e-16, atol=0)


@pytest.mark.parametrize("offset", [1e6, 1e8])
def test_exact_mode_keeps_the_variance_far_from_zero(offset):
    norm = EmpiricalNormalizer(3)
    xs = _far_batches(2, [5, 1, 17, 3], offset)
    for x in xs:
        norm.update(x)
    _assert_moments_of(norm, torch.cat(xs), offset)


def test_eval_mode_and_empty_global_batch_do_not_update():
    norm = EmpiricalNormalizer(3).eval()
    norm.update(torch.randn(4, 3))
    assert int(norm.count) == 0
    norm.train()
    norm.update(torch.zeros(0, 3))
    assert int(norm.count) == 0 and torch.equal(norm.var, torch.ones(3, dtype=torch.float64))


def test_bad_input_errors():
    with pytest.raises(ValueError, match="shape"):
        EmpiricalNormalizer(0)
    with pytest.raises(ValueError, match="mode"):
        EmpiricalNormalizer(3, mode="fast")
    with pytest.raises(ValueError, match="reduce_sum must be None"):
        EmpiricalNormalizer(3, mode="rsl_rl", reduce_sum=lambda t: t)
    with pytest.raises(ValueError, match="expected a batch"):
        EmpiricalNormalizer(3).update(torch.zeros(4, 2))
    with pytest.raises(ValueError, match="unknown activation"):
        mlp(3, [4], 2, "nope")
    with pytest.raises(ValueError, match="in_dim"):
        mlp(0, [4], 2)


def test_mlp_layout_matches_rsl_rl():
    from rsl_rl.modules import MLP

    ours, ref = mlp(5, [8, 4], 2, "elu"), MLP(5, 2, [8, 4], "elu")
    assert [k for k in ours.state_dict()] == [k for k in ref.state_dict()]


def _global_body(rank: int, world: int, slots: bool):
    from unilab_dist import sum_reducer

    reducer = sum_reducer()
    # a plain callable has no rank / world_size: all ranks' moments share one slot
    norm = EmpiricalNormalizer(3, reduce_sum=reducer if slots else lambda t: reducer(t))
    sizes = {0: [5, 0, 9], 1: [2, 11, 1], 2: [7, 3, 0]}[rank]  # unequal, some empty
    for x in _batches(10 + rank, sizes):
        norm.update(x)
    return norm.mean, norm.var, int(norm.count)


@pytest.mark.parametrize("slots", [True, False], ids=["rank_slots", "one_slot"])
def test_global_mode_is_exact_and_identical_across_ranks(slots):
    from unilab_dist.testing import run_distributed

    res = run_distributed(_global_body, 3, args=(slots,), timeout=120)
    allx = torch.cat(
        [torch.cat(_batches(10 + r, s)) for r, s in enumerate([[5, 0, 9], [2, 11, 1], [7, 3, 0]])]
    ).double()
    for mean, var, count in res:
        assert count == allx.shape[0] == 38
        assert torch.equal(mean, res[0][0]) and torch.equal(var, res[0][1])
    # merge order differs from one concatenated batch: equal to float64 rounding
    torch.testing.assert_close(res[0][0], allx.mean(0), rtol=0, atol=1e-12)
    torch.testing.assert_close(res[0][1], allx.var(0, unbiased=False), rtol=0, atol=1e-12)


def test_update_normalizers_fuses_the_collectives_of_a_shared_reduce_sum():
    fused_sum, separate_sum = DoubleSum(), DoubleSum()

    def make(reduce_sum):
        return [
            EmpiricalNormalizer(3, reduce_sum=reduce_sum),
            EmpiricalNormalizer((2, 2), reduce_sum=reduce_sum, until=30),
            EmpiricalNormalizer(3),  # local: no collective
            EmpiricalNormalizer(3, mode="rsl_rl"),
        ]

    fused, separate = make(fused_sum), make(separate_sum)
    g = torch.Generator().manual_seed(4)
    for _ in range(6):
        xs = [
            torch.randn(5, 3, generator=g) * 3 + 1,
            torch.randn(4, 2, 2, generator=g) - 2,
            torch.randn(7, 3, generator=g),
            torch.randn(2, 3, generator=g) * 5,
        ]
        update_normalizers([*zip(fused, xs, strict=True), (nn.Identity(), xs[0])])
        for norm, x in zip(separate, xs, strict=True):
            norm.update(x)
    # one call per step while both global ones update, then one (the second stopped at 30)
    assert fused_sum.calls == 6 and separate_sum.calls == 6 + 4
    assert int(fused[1].count) == 32  # 4 steps of 2 x 4 rows, then `until` stops it
    for a, b in zip(fused, separate, strict=True):
        for name in ("mean", "var", "std", "count"):
            assert torch.equal(getattr(a, name), getattr(b, name)), name
    fused[0].eval()
    update_normalizers([(fused[0], torch.ones(3, 3))])  # eval mode: no update, no collective
    assert fused_sum.calls == 6


FAR_SIZES = {0: [5, 0, 9], 1: [2, 11, 1], 2: [7, 3, 0]}  # unequal per rank, some empty


def _far_global_body(rank: int, world: int, offset: float):
    from unilab_dist import accounting, sum_reducer

    norm = EmpiricalNormalizer(3, reduce_sum=sum_reducer())
    accounting.reset()
    for x in _far_batches(20 + rank, FAR_SIZES[rank], offset):
        norm.update(x + 0.25 * rank)  # the ranks' means differ a little
    return norm.mean, norm.var, int(norm.count), accounting.snapshot()["default"]


@pytest.mark.parametrize("offset", [1e6, 1e8])
def test_global_mode_is_exact_far_from_zero_and_identical_across_ranks(offset):
    from unilab_dist.testing import run_distributed

    res = run_distributed(_far_global_body, 3, args=(offset,), timeout=120)
    allx = torch.cat(
        [torch.cat(_far_batches(20 + r, FAR_SIZES[r], offset)) + 0.25 * r for r in range(3)]
    )
    norm = EmpiricalNormalizer(3)
    norm.load_state_dict({"mean": res[0][0], "var": res[0][1], "std": res[0][1].sqrt(),
                          "count": torch.tensor(res[0][2])})  # fmt: skip
    _assert_moments_of(norm, allx, offset)
    for mean, var, count, acc in res:
        assert count == allx.shape[0] == 38
        assert torch.equal(mean, res[0][0]) and torch.equal(var, res[0][1])
        # one collective per update: 3 slots of [n, S1, M2, T2] (1 + 3 * 3 float64 values)
        assert acc == {"collectives": 3, "bytes": 3 * 3 * 10 * 8}
