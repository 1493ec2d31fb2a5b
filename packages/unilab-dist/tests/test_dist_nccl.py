"""The NCCL path on 2 GPUs: all-reduce, broadcast, consistency check, DDP equivalence."""

from __future__ import annotations

import pytest
import torch

import unilab_dist as ud
from unilab_dist.testing import run_distributed

pytestmark = [
    pytest.mark.multigpu,
    pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA GPUs"),
]
STEPS = 4


def _nccl_body(rank: int, world_size: int) -> dict:
    from torch.nn.parallel import DistributedDataParallel as DDP

    dev = torch.device("cuda", rank)
    ctx = ud.init_distributed()  # adopts the NCCL group run_distributed made
    out: dict = {"ctx": (ctx.backend, str(ctx.device), ctx.rank, ctx.world_size)}
    x = torch.tensor([1.0 + rank, -float(rank)], device=dev)
    out["mean"] = ud.all_reduce(x, "mean").cpu()
    out["max"] = ud.all_reduce(x, "max").cpu()
    out["cpu_input_sum"] = ud.all_reduce(x.cpu(), "sum")  # moved to the GPU and back
    out["scalars"] = ud.reduce_scalars({"a": float(rank), "b": 2.0})
    out["obj"] = ud.broadcast_object({"level": 3} if rank == 0 else None)
    torch.manual_seed(rank)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8)).to(dev)
    ud.broadcast_module_state([net])
    out["replicas"] = ud.check_replicas([net])
    with torch.no_grad():
        if rank == 1:
            net[0].bias[3] += 1e-4
    try:
        ud.check_replicas({"net": net})
        out["perturbed"] = "not caught"
    except ud.ReplicaMismatchError as e:
        out["perturbed"] = str(e)
    # DDP equivalence
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(6, 32), torch.nn.Tanh(), torch.nn.Linear(32, 3))
    ddp = DDP(_copy(base).to(dev), device_ids=[rank])
    ours = _copy(base).to(dev)
    opts = [torch.optim.Adam(m.parameters(), lr=1e-2) for m in (ddp, ours)]
    sync = ud.GradAllReduce()
    for step in range(STEPS):
        g = torch.Generator().manual_seed(100 * rank + step)
        xb, yb = torch.randn(16, 6, generator=g).to(dev), torch.randn(16, 3, generator=g).to(dev)
        for model, opt in zip((ddp, ours), opts, strict=True):
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(xb), yb).backward()
            if model is ours:
                out["kl"] = sync(list(ours.parameters()), torch.tensor([float(rank)], device=dev))
            opt.step()
    out["kl"] = out["kl"].cpu()
    out["ddp"] = [p.detach().cpu() for p in ddp.module.parameters()]
    out["ours"] = [p.detach().cpu() for p in ours.parameters()]
    ud.check_replicas([ours], [opts[1]])
    return out


def _copy(m: torch.nn.Module) -> torch.nn.Module:
    import copy

    return copy.deepcopy(m)


def test_nccl_collectives_broadcast_check_and_ddp_equivalence() -> None:
    results = run_distributed(_nccl_body, 2, backend="nccl", timeout=300.0)
    for rank, res in enumerate(results):
        assert res["ctx"] == ("nccl", f"cuda:{rank}", rank, 2)
        assert res["mean"].tolist() == [1.5, -0.5]
        assert res["max"].tolist() == [2.0, 0.0]
        assert res["cpu_input_sum"].tolist() == [3.0, -1.0]
        assert res["scalars"] == {"a": 0.5, "b": 2.0}
        assert res["obj"] == {"level": 3}
        assert res["replicas"] == 4 + 3  # Linear w, b; BatchNorm w, b + 3 buffers
        assert res["perturbed"].startswith("rank 1 differs from rank 0 in tensor 'net.0.bias'")
        assert res["kl"].tolist() == [0.5]
        for a, b in zip(res["ours"], res["ddp"], strict=True):
            assert torch.allclose(a, b, rtol=0, atol=1e-5)
    for a, b in zip(results[0]["ours"], results[1]["ours"], strict=True):
        assert torch.equal(a, b)
