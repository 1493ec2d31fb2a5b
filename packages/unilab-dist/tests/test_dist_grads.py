"""GradAllReduce on gloo: equal to DistributedDataParallel, None grads, buckets, extra values."""

from __future__ import annotations

import pytest
import torch

import unilab_dist as ud
from unilab_dist.testing import run_distributed

STEPS = 4


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 8), torch.nn.Tanh(),
        torch.nn.Linear(8, 2),
    )  # fmt: skip


def rank_batch(rank: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1000 * rank + step)
    return torch.randn(12, 5, generator=g), torch.randn(12, 2, generator=g)


def _ddp_body(rank: int, world_size: int) -> dict:
    from torch.nn.parallel import DistributedDataParallel as DDP

    ddp = DDP(make_model())
    ours = make_model()
    opt_ddp = torch.optim.Adam(ddp.parameters(), lr=1e-2)
    opt_ours = torch.optim.Adam(ours.parameters(), lr=1e-2)
    sync = ud.GradAllReduce()
    ud.accounting.reset()
    for step in range(STEPS):
        x, y = rank_batch(rank, step)
        for model, opt in ((ddp, opt_ddp), (ours, opt_ours)):
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.mse_loss(model(x), y).backward()
            if model is ours:
                with ud.accounting.phase("update"):
                    kl = sync(list(ours.parameters()), torch.tensor([float(rank), 2.0 * rank]))
            opt.step()
    ud.check_replicas([ours], [opt_ours])
    return {
        "ddp": [p.detach().clone() for p in ddp.module.parameters()],
        "ours": [p.detach().clone() for p in ours.parameters()],
        "kl": kl,
        "acc": ud.accounting.snapshot(),
        "none_grads": _none_grad_body(rank, world_size),  # same workers: saves a spawn
    }


@pytest.fixture(scope="module", params=[2, 3, 4], ids=["world2", "world3", "world4"])
def grad_results(request: pytest.FixtureRequest) -> tuple[int, list[dict]]:
    return request.param, run_distributed(_ddp_body, request.param)


def test_grad_all_reduce_equals_ddp_and_single_process(
    grad_results: tuple[int, list[dict]],
) -> None:
    world_size, results = grad_results
    # Single-process reference: the mean loss over all ranks' batches (equal sizes) has the
    # mean of the per-rank gradients as its gradient.
    ref = make_model()
    opt = torch.optim.Adam(ref.parameters(), lr=1e-2)
    for step in range(STEPS):
        batches = [rank_batch(r, step) for r in range(world_size)]
        x = torch.cat([b[0] for b in batches])
        y = torch.cat([b[1] for b in batches])
        opt.zero_grad()
        torch.nn.functional.mse_loss(ref(x), y).backward()
        opt.step()
    n_params = sum(p.numel() for p in ref.parameters())
    mean_rank = (world_size - 1) / 2
    for res in results:
        for a, b, c in zip(res["ours"], res["ddp"], ref.parameters(), strict=True):
            assert torch.allclose(a, b, rtol=0, atol=1e-6)
            assert torch.allclose(a, c.detach(), rtol=0, atol=1e-5)
        assert torch.allclose(res["kl"], torch.tensor([mean_rank, 2 * mean_rank]), atol=1e-6)
        # one collective per step, grads and the 2 extra values together
        assert res["acc"]["update"] == {"collectives": STEPS, "bytes": STEPS * 4 * (n_params + 2)}
        # check_replicas: fingerprint (2 int64) + 3 float64 checksums for 6 params and the
        # 3 Adam state tensors (step, exp_avg, exp_avg_sq) of each
        assert res["acc"]["default"] == {"collectives": 2, "bytes": 16 + (6 + 18) * 3 * 8}
    # replicas bitwise identical across ranks
    for p0, p1 in zip(results[0]["ours"], results[-1]["ours"], strict=True):
        assert torch.equal(p0, p1)


class TwoHeads(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(1)
        self.trunk = torch.nn.Linear(3, 4)
        self.a = torch.nn.Linear(4, 1)
        self.b = torch.nn.Linear(4, 1)


def _none_grad_body(rank: int, world_size: int) -> dict:
    net = TwoHeads()
    x = torch.full((2, 3), float(rank + 1))
    h = net.trunk(x)
    loss = net.a(h).sum()
    if rank == 1:  # only rank 1 takes head b: its grads are None on the other ranks
        loss = loss + 3.0 * net.b(h).sum()
    loss.backward()
    local = {n: (p.grad.clone() if p.grad is not None else None) for n, p in net.named_parameters()}
    ud.accounting.reset()
    ud.GradAllReduce()(list(net.parameters()))
    synced = {n: p.grad.clone() for n, p in net.named_parameters()}
    return {"local": local, "synced": synced, "acc": ud.accounting.snapshot()}


def test_none_grads_on_some_ranks_are_zeros_everywhere(
    grad_results: tuple[int, list[dict]],
) -> None:
    world_size, all_results = grad_results
    results = [r["none_grads"] for r in all_results]
    assert results[0]["local"]["b.weight"] is None and results[1]["local"]["b.weight"] is not None
    for name in results[0]["synced"]:
        locals_ = [r["local"][name] for r in results]
        expected = sum(g if g is not None else torch.zeros_like(locals_[1]) for g in locals_)
        expected = expected / world_size
        for r in results:
            assert torch.allclose(r["synced"][name], expected, rtol=0, atol=1e-6), name
            assert torch.equal(r["synced"][name], results[0]["synced"][name])
    assert all(r["acc"]["default"]["collectives"] == 1 for r in results)


def _bucket_body(rank: int, world_size: int, bucket_bytes: int) -> dict:
    torch.manual_seed(2)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 2))
    wide = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    params = [*net.parameters(), wide]
    out = {}
    for b in (bucket_bytes, 2**30):
        sync = ud.GradAllReduce(bucket_bytes=b)
        for p in params:
            p.grad = torch.full_like(p, float(rank)) + torch.arange(p.numel()).view_as(p)
        ud.accounting.reset()
        extra = sync([*params, params[0]], torch.tensor([10.0 * rank]))  # duplicate: synced once
        first = [id(t) for t in next(iter(sync._buffers.values()))]
        sync(params, torch.tensor([0.0]))  # same layout: buffers reused
        reused = first == [id(t) for t in next(iter(sync._buffers.values()))]
        out[b] = {
            "grads": [p.grad.clone() for p in params],
            "extra": extra,
            "n": ud.accounting.snapshot()["default"]["collectives"] // 2,
            "reused": reused,
        }
    return out


def test_bucketing_splits_collectives_but_not_results() -> None:
    # float32 sizes: w1 128 B, b1 32 B, w2 64 B, b2 8 B; then a float64 param of 24 B.
    # bucket_bytes=100 -> [w1] [b1 w2] [b2] [wide(f64)] [extra(f32)] = 5 collectives;
    # unbounded -> [w1 b1 w2 b2] [wide] [extra] = 3 (the extra cannot ride in a float64 bucket).
    results = run_distributed(_bucket_body, 2, args=(100,))
    for res in results:
        small, big = res[100], res[2**30]
        assert small["n"] == 5 and big["n"] == 3
        assert small["reused"] and big["reused"]
        for g_small, g_big in zip(small["grads"], big["grads"], strict=True):
            assert torch.equal(g_small, g_big)
        assert small["grads"][0][0, :3].tolist() == [0.5, 1.5, 2.5]  # mean of rank 0 and 1
        assert small["grads"][4].dtype == torch.float64
        assert small["grads"][4].tolist() == [0.5, 1.5, 2.5]
        assert small["extra"].tolist() == [5.0] == big["extra"].tolist()
