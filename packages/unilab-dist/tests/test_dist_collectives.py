"""Collectives on 2, 3 and 4 gloo ranks against single-process references."""

from __future__ import annotations

import pickle
import time

import pytest
import torch

import unilab_dist as ud
from unilab_dist.testing import DistributedTestError, run_distributed


def rank_tensor(rank: int) -> torch.Tensor:
    """Rank r's input: distinct, exactly representable values."""
    return torch.tensor([[1.0 + rank, -2.0 * rank], [0.5 * rank, 3.0 - rank]])


class Stateful(torch.nn.Module):
    def __init__(self, rank: int) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        self.wide = torch.nn.Parameter(torch.full((4,), float(rank), dtype=torch.float64))
        self.register_buffer("steps", torch.tensor([rank, 10 * rank], dtype=torch.int64))
        self.register_buffer("mask", torch.tensor([rank % 2 == 0, rank % 2 == 1]))
        with torch.no_grad():
            self.lin.weight.fill_(float(rank))
            self.lin.bias.fill_(-float(rank))


def _collectives_body(rank: int, world_size: int, with_td: bool) -> dict:
    ud.accounting.reset()
    out: dict = {}
    x = rank_tensor(rank)
    with ud.accounting.phase("reduce"):
        for op in ("mean", "sum", "max", "min"):
            out[op] = ud.all_reduce(x, op)
        out["x_untouched"] = torch.equal(x, rank_tensor(rank))
        out["int_sum"] = ud.all_reduce(torch.tensor([rank, 1]), "sum")
        out["bool_max"] = ud.all_reduce(torch.tensor([rank == 1, False]), "max")
        reducer = ud.sum_reducer()
        out["reducer"] = reducer(torch.tensor([float(rank), 1.0]))
        out["reducer_slot"] = (reducer.rank, reducer.world_size)
        out["scalars"] = ud.reduce_scalars({"loss": 0.5 * rank, "n": rank + 1}, "mean")
        out["scalars_max"] = ud.reduce_scalars({"a": float(rank), "b": -float(rank)}, "max")
        out["gather"] = ud.all_gather_tensor(torch.tensor([rank, rank * rank]))
    with ud.accounting.phase("broadcast"):
        obj = {"level": 7, "names": ["a", "b"]} if rank == 0 else None
        out["obj"] = ud.broadcast_object(obj)
        last = world_size - 1
        out["obj_last"] = ud.broadcast_object(("from", rank), src=last)
        module = Stateful(rank)
        items: dict = {"m": module}
        if with_td:  # importing tensordict costs seconds of CPU: one world size only
            import tensordict

            items["td"] = tensordict.TensorDict(
                {"obs": {"mean": torch.full((2, 3), float(rank))}, "k": torch.tensor([rank] * 2)},
                batch_size=[2],
            )
        ud.broadcast_module_state(items, src=1)
        out["state"] = {k: v.clone() for k, v in module.state_dict().items()}
        out["td"] = items["td"].to_dict() if with_td else None
    out["accounting"] = ud.accounting.snapshot()
    return out


@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_collectives_match_single_process_reference(world_size: int) -> None:
    with_td = world_size == 2
    results = run_distributed(_collectives_body, world_size, args=(with_td,))
    inputs = torch.stack([rank_tensor(r) for r in range(world_size)])
    ranks = torch.arange(world_size, dtype=torch.float64)
    for rank, res in enumerate(results):
        assert torch.equal(res["sum"], inputs.sum(0))
        assert torch.allclose(res["mean"], inputs.mean(0), rtol=0, atol=1e-6)
        assert torch.equal(res["max"], inputs.max(0).values)
        assert torch.equal(res["min"], inputs.min(0).values)
        assert res["x_untouched"]
        total = world_size * (world_size - 1) // 2
        assert res["int_sum"].tolist() == [total, world_size]
        assert res["int_sum"].dtype == torch.int64
        assert res["bool_max"].tolist() == [True, False] and res["bool_max"].dtype == torch.bool
        assert res["reducer"].tolist() == [float(total), float(world_size)]
        assert res["reducer_slot"] == (rank, world_size)
        assert res["scalars"] == pytest.approx(
            {"loss": 0.5 * ranks.mean().item(), "n": ranks.mean().item() + 1}, abs=1e-12
        )
        assert res["scalars_max"] == {"a": world_size - 1.0, "b": 0.0}
        assert res["gather"].tolist() == [[r, r * r] for r in range(world_size)]
        assert res["obj"] == {"level": 7, "names": ["a", "b"]}
        assert res["obj_last"] == ("from", world_size - 1)
        # rank 1's state everywhere, every dtype (float32, float64, int64, bool)
        state = res["state"]
        assert torch.equal(state["lin.weight"], torch.ones(2, 3))
        assert torch.equal(state["lin.bias"], -torch.ones(2))
        assert torch.equal(state["wide"], torch.ones(4, dtype=torch.float64))
        assert state["steps"].tolist() == [1, 10]
        assert state["mask"].tolist() == [False, True]
        if with_td:
            assert torch.equal(res["td"]["obs"]["mean"], torch.ones(2, 3))
            assert res["td"]["k"].tolist() == [1, 1]
        # 4 all_reduce + int + bool + reducer + 2 scalar + gather = 10 collectives
        reduce_bytes = 4 * 16 + 16 + 2 + 8 + 2 * 16 + 16
        assert res["accounting"]["reduce"] == {"collectives": 10, "bytes": reduce_bytes}
        # 2 objects x 2 collectives + state: one broadcast per dtype (f32, f64, i64, bool)
        bc = res["accounting"]["broadcast"]
        assert bc["collectives"] == 4 + 4
        state_bytes = (6 + 2) * 4 + 4 * 8 + 2 * 8 + 2 + (with_td and 6 * 4 + 2 * 8)
        objects = len(pickle.dumps({"level": 7, "names": ["a", "b"]}))
        objects += len(pickle.dumps(("from", world_size - 1)))
        assert bc["bytes"] == state_bytes + 2 * 8 + objects  # lengths + pickled bytes
    # every rank moved exactly the same payload
    assert len({str(r["accounting"]) for r in results}) == 1


def _timeout_body(rank: int, world_size: int) -> str:
    if rank == 1:
        time.sleep(5.0)  # never joins; stays alive past rank 0's timeout
        return "absent"
    t0 = time.monotonic()
    try:
        ud.all_reduce(torch.ones(4), "sum")
    except ud.CollectiveTimeoutError as e:
        return f"timeout after {time.monotonic() - t0:.1f}s: {e}"
    return "no error"


def test_a_rank_that_never_joins_gives_a_timeout_error_not_a_hang() -> None:
    t0 = time.monotonic()
    try:
        results = run_distributed(_timeout_body, 2, pg_timeout=2.0, timeout=60.0)
    except DistributedTestError as e:  # a backend may also abort the absent rank
        pytest.fail(f"unexpected worker failure: {e}")
    assert results[1] == "absent"
    assert results[0].startswith("timeout after"), results[0]
    assert "all_reduce[sum]" in results[0] and "did not join" in results[0]
    waited = float(results[0].split()[2].rstrip("s:"))
    assert 1.5 <= waited < 10.0
    assert time.monotonic() - t0 < 45.0


def _timing_body(rank: int, world_size: int) -> dict:
    ud.accounting.reset()
    with ud.accounting.phase("update"):
        ud.all_reduce(torch.ones(4), "sum")  # untimed: counted only
    with ud.accounting.timing("cpu"):
        with ud.accounting.phase("update"):
            if rank == 1:
                time.sleep(0.3)  # rank 0 waits for it inside the collective
            ud.all_reduce(torch.ones(4), "sum")
        ud.reduce_scalars({"a": 1.0})
    after = ud.accounting.timed_device
    ud.all_reduce(torch.ones(4), "sum")  # after the block: untimed again
    return {"seconds": ud.accounting.seconds(), "acc": ud.accounting.snapshot(), "after": after}


def test_timing_adds_each_collectives_seconds_to_its_phase_waits_included() -> None:
    results = run_distributed(_timing_body, 2)
    for res in results:
        assert res["after"] is None
        assert res["acc"]["update"]["collectives"] == 2
        assert res["acc"]["default"]["collectives"] == 2
        assert set(res["seconds"]) == {"update", "default"}
        assert all(s > 0 for s in res["seconds"].values())
    assert results[0]["seconds"]["update"] >= 0.25  # waited for rank 1
    assert results[1]["seconds"]["update"] < 0.25
