"""Global advantage normalization across gloo ranks vs one process on the concatenation."""

from __future__ import annotations

import pytest
import torch

from unilab_storage import normalize_advantages


def _rank_advantages(rank: int) -> torch.Tensor:
    # Unequal counts per rank (rank r holds 5 + 3 r steps of 7 envs), distinct distributions.
    g = torch.Generator().manual_seed(100 + rank)
    return torch.randn(5 + 3 * rank, 7, generator=g) * (1 + rank) + 2.0 * rank


def _worker(rank: int, world_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    from unilab_dist import sum_reducer

    reduce_sum = sum_reducer()
    adv = _rank_advantages(rank)
    return (
        normalize_advantages(adv, reduce_sum, unbiased=True),
        normalize_advantages(adv, reduce_sum, unbiased=False),
    )


@pytest.mark.slow
@pytest.mark.parametrize("world_size", [2, 3])
def test_global_normalization_equals_concatenated_reference(world_size):
    from unilab_dist.testing import run_distributed

    results = run_distributed(_worker, world_size)
    parts = [_rank_advantages(r) for r in range(world_size)]
    full = torch.cat([p.flatten() for p in parts]).double()
    for i, correction in enumerate((1, 0)):
        ref = (full - full.mean()) / (full.std(correction=correction) + 1e-8)
        got = torch.cat([r[i].flatten() for r in results]).double()
        assert got.shape == ref.shape
        torch.testing.assert_close(got, ref, rtol=0, atol=1e-6)
    # The global statistics differ from each rank's local ones.
    local = normalize_advantages(parts[0])
    assert (local - results[0][0]).abs().max() > 0.1
