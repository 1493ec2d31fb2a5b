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


class ThreeParts(torch.nn.Module):
    """A trunk and two heads; head `b` is left out of the loss on some steps (see `uses_b`)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(3)
        self.trunk = torch.nn.Linear(5, 8)
        self.a = torch.nn.Linear(8, 2)
        self.b = torch.nn.Linear(8, 2)

    def forward(self, x: torch.Tensor, use_b: bool) -> torch.Tensor:
        h = torch.tanh(self.trunk(x))
        return self.a(h) + self.b(h) if use_b else self.a(h)


def uses_b(rank: int, step: int) -> bool:
    """Head b: used by every rank, by no rank (globally unused), or by rank 0 only."""
    return (step % 3 == 0) or (step % 3 == 2 and rank == 0)


def _unused_body(rank: int, world_size: int) -> dict:
    from torch.nn.parallel import DistributedDataParallel as DDP

    ddp = DDP(ThreeParts(), find_unused_parameters=True)
    runs = {"ddp": (ddp, ddp.module, None)}
    for mode in ("none", "zeros"):
        net = ThreeParts()
        runs[mode] = (net, net, ud.GradAllReduce(unused_grads=mode))
    opts = {
        k: torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.5)
        for k, (_, m, _) in runs.items()
    }
    b_grads = []
    ud.accounting.reset()
    for step in range(6):
        x, y = rank_batch(rank, step)
        for key, (model, module, sync) in runs.items():
            opts[key].zero_grad(set_to_none=True)
            torch.nn.functional.mse_loss(model(x, uses_b(rank, step)), y).backward()
            if sync is not None:
                with ud.accounting.phase(key):
                    sync(list(module.parameters()))
            if key == "none":
                b_grads.append(module.b.weight.grad is not None)
            opts[key].step()
    return {
        "params": {
            k: [p.detach().clone() for p in m.parameters()] for k, (_, m, _) in runs.items()
        },
        "b_grads": b_grads,
        "acc": ud.accounting.snapshot(),
        "sparse": _sparse_body(rank, world_size),  # same workers: saves a spawn
    }


def _sparse_body(rank: int, world_size: int) -> str:
    emb = torch.nn.Embedding(10, 3, sparse=True)
    lin = torch.nn.Linear(3, 1)
    lin(emb(torch.tensor([rank, 4]))).sum().backward()
    try:
        ud.GradAllReduce()([*lin.parameters(), emb.weight])
    except TypeError as e:
        return str(e)
    return "no error"


@pytest.fixture(scope="module")
def unused_results() -> list[dict]:
    return run_distributed(_unused_body, 2)


def test_unused_grads_none_matches_ddp_with_find_unused_parameters(
    unused_results: list[dict],
) -> None:
    for res in unused_results:
        assert res["b_grads"] == [True, False, True] * 2  # None only where no rank used b
        for ours, ddp in zip(res["params"]["none"], res["params"]["ddp"], strict=True):
            assert torch.allclose(ours, ddp, rtol=0, atol=1e-6)
        # zeros instead of None: AdamW decays head b and its moments move it on unused steps
        b_zeros, b_ddp = res["params"]["zeros"][4], res["params"]["ddp"][4]
        assert (b_zeros - b_ddp).abs().max() > 1e-3
        # the flags (one per parameter) ride in the gradients' collective
        n_params = sum(p.numel() for p in res["params"]["ddp"])
        assert res["acc"]["none"] == {"collectives": 6, "bytes": 6 * 4 * (n_params + 6)}
        assert res["acc"]["zeros"] == {"collectives": 6, "bytes": 6 * 4 * n_params}
    for p0, p1 in zip(
        unused_results[0]["params"]["none"], unused_results[1]["params"]["none"], strict=True
    ):
        assert torch.equal(p0, p1)


def test_sparse_grads_are_refused_naming_the_parameter(unused_results: list[dict]) -> None:
    expected = "params[2] (shape (10, 3)) has a torch.sparse_coo grad"
    for res in unused_results:
        assert res["sparse"].startswith(expected)
    # one process (no process group): the same error, before any step
    emb = torch.nn.Embedding(10, 3, sparse=True)
    emb(torch.tensor([1])).sum().backward()
    with pytest.raises(TypeError, match=r"params\[0\] \(shape \(10, 3\)\) has a torch.sparse_coo"):
        ud.GradAllReduce()([emb.weight])


def test_named_parameters_name_the_refused_parameter() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(3, 2))
    model.add_module("emb", torch.nn.Embedding(10, 3, sparse=True))
    model.emb(torch.tensor([1])).sum().backward()
    sync = ud.GradAllReduce()
    for params in (model, model.named_parameters(), dict(model.named_parameters())):
        with pytest.raises(TypeError, match=r"^emb\.weight \(shape \(10, 3\)\) has a torch"):
            sync(params)
    # dense named parameters pass (one process: the identity), duplicates once
    dense = torch.nn.Linear(3, 2)
    dense(torch.ones(1, 3)).sum().backward()
    before = dense.weight.grad.clone()
    assert sync(dense) is None and sync(list(dense.named_parameters()) * 2) is None
    assert torch.equal(dense.weight.grad, before)
