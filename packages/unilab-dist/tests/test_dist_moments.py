"""RunningMoments: exact merges (unequal counts) and the replica-consistency check, on gloo."""

from __future__ import annotations

import re

import pytest
import torch

import unilab_dist as ud
from unilab_dist.testing import run_distributed


def rank_data(rank: int, chunk: int) -> torch.Tensor:
    """Rank r's chunk: (5 + 3r + chunk) rows of 4 features, a rank-dependent offset."""
    g = torch.Generator().manual_seed(100 * rank + chunk)
    return (
        torch.randn(5 + 3 * rank + chunk, 4, generator=g, dtype=torch.float32) * (rank + 1) + rank
    )


def test_from_batch_and_merge_equal_concatenated_moments() -> None:
    a, b, c = rank_data(0, 0), rank_data(1, 1), rank_data(2, 0)
    m = ud.RunningMoments(4)
    for x in (a, b, c):
        m.update(x)
    full = torch.cat([a, b, c]).double()
    assert m.count.item() == full.shape[0] == 5 + 9 + 11
    assert torch.allclose(m.mean, full.mean(0), rtol=0, atol=1e-12)
    assert torch.allclose(m.var, full.var(0, unbiased=False), rtol=1e-12, atol=0)
    assert m.mean.dtype == m.m2.dtype == torch.float64
    merged = ud.RunningMoments.from_batch(a).merge(ud.RunningMoments.from_batch(torch.cat([b, c])))
    assert torch.allclose(merged.m2, m.m2, rtol=1e-12, atol=0)
    empty = ud.RunningMoments.from_batch(torch.zeros(0, 4))
    assert empty.count.item() == 0 and torch.equal(empty.merge(m).mean, m.mean)
    twice = ud.RunningMoments(4)
    twice.load_state_dict(m.state_dict())
    assert torch.equal(twice.m2, m.m2) and twice.count.item() == 25


def test_scalar_stream_takes_one_dimensional_batches() -> None:
    a, b = rank_data(0, 0)[:, 0], rank_data(1, 0)[:, 1]  # 5 and 8 scalars (advantages, say)
    m = ud.RunningMoments(())
    m.update(a)
    m.update(b)
    full = torch.cat([a, b]).double()
    assert m.mean.shape == m.var.shape == () and m.count.item() == 13
    assert torch.allclose(m.mean, full.mean(), rtol=0, atol=1e-12)
    assert torch.allclose(m.var, full.var(unbiased=False), rtol=1e-12, atol=0)
    assert ud.RunningMoments.from_batch(a).shape == ()


def test_moments_bad_input() -> None:
    with pytest.raises(ValueError, match="positive ints"):
        ud.RunningMoments((0,))
    with pytest.raises(ValueError, match="does not match"):
        ud.RunningMoments(4).update(torch.zeros(3, 5))
    with pytest.raises(ValueError, match="dim >= 1"):
        ud.RunningMoments.from_batch(torch.zeros(()))
    with pytest.raises(ValueError, match="does not match"):
        ud.RunningMoments(()).update(torch.zeros(3, 1))
    with pytest.raises(ValueError, match="cannot merge"):
        ud.RunningMoments(4).merge(ud.RunningMoments(3))


def _moments_and_check_body(rank: int, world_size: int) -> dict:
    out: dict = {}
    m = ud.RunningMoments(4)
    for chunk in range(3):  # each update merges all ranks' chunks: identical everywhere
        m.update(rank_data(rank, chunk))
    out["moments"] = m.state_dict()
    local = ud.RunningMoments.from_batch(rank_data(rank, 0))
    out["all_merge"] = local.all_merge().state_dict()
    scalar = ud.RunningMoments(())
    scalar.update(rank_data(rank, 0)[:, 2])  # a 1-D batch of this rank's scalars
    out["scalar"] = scalar.state_dict()
    # replica check: identical, then one perturbed element on the last rank
    torch.manual_seed(0)
    actor, critic = torch.nn.Linear(3, 2), torch.nn.Linear(3, 1)
    critic.register_buffer("running", torch.zeros(2))
    opt = torch.optim.Adam([*actor.parameters(), *critic.parameters()])
    actor(torch.ones(1, 3)).sum().backward()
    opt.step()
    out["checked"] = ud.check_replicas({"actor": actor, "critic": critic}, [opt])
    errors = []
    with torch.no_grad():
        if rank == world_size - 1:
            critic.running[1] += 1e-3
    try:
        ud.check_replicas({"actor": actor, "critic": critic}, [opt])
    except ud.ReplicaMismatchError as e:
        errors.append(str(e))
    with torch.no_grad():
        if rank == world_size - 1:
            critic.running[1] -= 1e-3
            opt.state[actor.weight]["exp_avg"][0, 0] *= 2.0
    try:
        ud.check_replicas({"actor": actor, "critic": critic}, [opt])
    except ud.ReplicaMismatchError as e:
        errors.append(str(e))
    ud.check_replicas({"actor": actor, "critic": critic})  # without optimizers: passes
    try:  # structure differs: an extra module on rank 0
        ud.check_replicas([actor, critic] + ([torch.nn.Linear(1, 1)] if rank == 0 else []))
    except ud.ReplicaMismatchError as e:
        errors.append(str(e))
    out["errors"] = errors
    return out


@pytest.mark.parametrize("world_size", [2, 3])
def test_moments_merge_and_replica_check_across_ranks(world_size: int) -> None:
    results = run_distributed(_moments_and_check_body, world_size)
    everything = torch.cat([rank_data(r, c) for c in range(3) for r in range(world_size)]).double()
    first = torch.cat([rank_data(r, 0) for r in range(world_size)]).double()
    for res in results:
        mom = res["moments"]
        assert mom["count"].item() == everything.shape[0]  # unequal per-rank counts
        assert torch.allclose(mom["mean"], everything.mean(0), rtol=0, atol=1e-12)
        var = mom["m2"] / mom["count"]
        assert torch.allclose(var, everything.var(0, unbiased=False), rtol=1e-12, atol=0)
        for key in ("count", "mean", "m2"):
            assert torch.equal(mom[key], results[0]["moments"][key])  # bitwise on all ranks
        am = res["all_merge"]
        assert am["count"].item() == first.shape[0]
        assert torch.allclose(am["m2"], ((first - first.mean(0)) ** 2).sum(0), rtol=1e-12)
        sc = res["scalar"]
        assert sc["count"].item() == first.shape[0] and sc["mean"].shape == ()
        assert torch.allclose(sc["mean"], first[:, 2].mean(), rtol=0, atol=1e-12)
        assert torch.equal(sc["m2"], results[0]["scalar"]["m2"])
        # 2 + 2 params + 1 buffer; Adam state (step, exp_avg, exp_avg_sq) only for the actor's
        # 2 params: the critic had no grad, so Adam made no state for it
        assert res["checked"] == 5 + 6
        last = world_size - 1
        assert len(res["errors"]) == 3
        assert res["errors"][0].startswith(f"rank {last} differs from rank 0 in tensor")
        assert "'critic.running'" in res["errors"][0]
        assert f"rank {last} differs" in res["errors"][1]
        assert "'optimizer[0].state[0].exp_avg'" in res["errors"][1]
        assert "rank 1 has a different structure than rank 0 (5 vs 7 tensors" in res["errors"][2]


def _swap_body(rank: int, world_size: int) -> list[str]:
    errors = []
    for i, j in ((0, 1021), (5, 6), (3, 3 + 1021 * 7)):
        net = torch.nn.Module()
        net.register_buffer("table", torch.arange(8192, dtype=torch.float32))
        if rank == 1:  # same values, two of them swapped
            net.table[[i, j]] = net.table[[j, i]]
        try:
            ud.check_replicas([net])
        except ud.ReplicaMismatchError as e:
            errors.append(str(e))
    return errors


def test_replica_check_catches_swaps_and_names_the_checksum_that_differed() -> None:
    results = run_distributed(_swap_body, 2)
    for errors in results:
        assert len(errors) == 3  # a period-1021 weight missed the first and last swap
        for message in errors:
            assert message.startswith("rank 1 differs from rank 0 in tensor '0.table'")
            match = re.search(r"\(checksum position-weighted sum (\S+) vs (\S+)\)$", message)
            assert match is not None, message
            assert float(match[1]) != float(match[2])  # the two numbers that differ
