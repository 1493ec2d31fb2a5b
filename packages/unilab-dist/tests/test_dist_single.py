"""Single-process behaviour: DistContext, seeding, accounting, identities at world size 1."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest
import torch

import unilab_dist as ud
from unilab_dist import DistContext


def test_context_from_env_reads_the_four_variables() -> None:
    env = {"WORLD_SIZE": "8", "RANK": "5", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4"}
    ctx = DistContext.from_env("cpu", env=env)
    assert (ctx.world_size, ctx.rank, ctx.local_rank, ctx.local_world_size) == (8, 5, 1, 4)
    assert ctx.device == torch.device("cpu") and ctx.backend == "gloo"
    assert ctx.is_distributed and not ctx.is_main


def test_context_without_env_is_a_run_of_one() -> None:
    ctx = DistContext.from_env("cpu", env={})
    assert (ctx.world_size, ctx.rank, ctx.local_rank, ctx.local_world_size) == (1, 0, 0, 1)
    assert ctx.is_main and not ctx.is_distributed


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"world_size": 2, "rank": 2}, "rank 2 must be < world_size 2"),
        ({"world_size": 0}, "world_size must be >= 1"),
        ({"rank": -1}, "rank must be >= 0"),
        ({"local_world_size": 2, "local_rank": 2, "world_size": 2}, "local_rank 2 must be <"),
        ({"local_world_size": 3, "world_size": 2}, "local_world_size 3 > world_size 2"),
        ({"backend": "nccl"}, "needs a CUDA device"),
    ],
)
def test_context_validation(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DistContext(**kwargs)


def test_context_rejects_bad_env_and_backend() -> None:
    with pytest.raises(ValueError, match="WORLD_SIZE='two' is not an integer"):
        DistContext.from_env("cpu", env={"WORLD_SIZE": "two"})
    with pytest.raises(ValueError, match="'mpi'"):
        DistContext(backend="mpi")
    with pytest.raises(ValueError, match="timeout_s must be > 0"):
        ud.init_distributed("cpu", timeout_s=0)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA error")
def test_context_cuda_device_without_cuda_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="CUDA has no device here"):
        DistContext.from_env("cuda:0", env={"LOCAL_RANK": "0"})
    with pytest.raises(ValueError, match="with its index"):
        DistContext.from_env("cuda", env={})


def test_init_distributed_at_world_size_one_creates_nothing() -> None:
    ctx = ud.init_distributed("cpu")
    assert ctx.world_size == 1
    assert not torch.distributed.is_initialized()
    ud.shutdown()  # no group: a no-op


def test_seed_for_rank_is_base_plus_rank() -> None:
    assert [ud.seed_for_rank(42, r) for r in range(4)] == [42, 43, 44, 45]
    with pytest.raises(ValueError, match="outside"):
        ud.seed_for_rank(2**32 - 1, 1)
    with pytest.raises(ValueError, match="rank must be >= 0"):
        ud.seed_for_rank(0, -1)
    with pytest.raises(TypeError, match="base_seed must be an int"):
        ud.seed_for_rank(1.5, 0)  # type: ignore[arg-type]


def test_seed_for_rank_with_envs_per_rank_keeps_env_seeds_disjoint() -> None:
    n, ranks = 4, 3
    seeds = [ud.seed_for_rank(42, r, envs_per_rank=n) for r in range(ranks)]
    assert seeds == [42, 46, 50]
    env_seeds = [s + i for s in seeds for i in range(n)]  # the usual `seed + env_index`
    assert sorted(env_seeds) == list(range(42, 42 + ranks * n))  # no seed used twice
    # without envs_per_rank, rank 1's env 0 and rank 0's env 1 share seed 43
    assert ud.seed_for_rank(42, 1) == ud.seed_for_rank(42, 0) + 1
    assert ud.seed_for_rank(2**32 - 8, 1, envs_per_rank=4) == 2**32 - 4  # last env: 2**32 - 1
    with pytest.raises(ValueError, match=r"env seeds 4294967293\.\.4294967296 of rank 1"):
        ud.seed_for_rank(2**32 - 7, 1, envs_per_rank=4)
    with pytest.raises(ValueError, match="envs_per_rank must be >= 1"):
        ud.seed_for_rank(0, 0, envs_per_rank=0)


def test_seed_everything_reproduces_python_numpy_and_torch() -> None:
    np = pytest.importorskip("numpy")

    def draw() -> tuple[float, float, float]:
        return random.random(), float(np.random.rand()), float(torch.rand(()))

    assert ud.seed_everything(7) == 7
    first = draw()
    ud.seed_everything(7)
    assert draw() == first
    ud.seed_everything(8)
    assert draw() != first
    with pytest.raises(ValueError, match="seed must be in"):
        ud.seed_everything(-1)


def test_accounting_phases_nest_and_reset() -> None:
    acc = ud.CollectiveAccounting()
    acc.record(10)
    with acc.phase("rollout"):
        acc.record(4)
        with acc.phase("update"):
            acc.record(100, count=2)
        acc.record(6)
    assert acc.snapshot() == {
        "default": {"collectives": 1, "bytes": 10},
        "rollout": {"collectives": 2, "bytes": 10},
        "update": {"collectives": 2, "bytes": 100},
    }
    assert acc.seconds() == {}  # nothing timed
    with acc.phase("update"):
        acc.record_seconds(0.5)
        acc.record_seconds(0.25)
    assert acc.seconds() == {"update": 0.75}
    with pytest.raises(ValueError, match="seconds must be >= 0"):
        acc.record_seconds(-1.0)
    acc.reset()
    assert acc.snapshot() == {} and acc.seconds() == {}
    with pytest.raises(ValueError, match="non-empty str"), acc.phase(""):
        pass
    assert acc.timed_device is None
    with acc.timing("cpu"):
        assert acc.timed_device == torch.device("cpu")
    assert acc.timed_device is None


def test_every_function_is_the_identity_without_a_process_group() -> None:
    ud.accounting.reset()
    t = torch.tensor([1.0, -2.0, 3.0])
    for op in ("mean", "sum", "max", "min"):
        out = ud.all_reduce(t, op)
        assert torch.equal(out, t) and out.data_ptr() != t.data_ptr()
    assert ud.sum_reducer()(t) is t
    assert (ud.sum_reducer().rank, ud.sum_reducer().world_size) == (0, 1)
    assert ud.reduce_scalars({"a": 1.5, "b": torch.tensor(2)}) == {"a": 1.5, "b": 2.0}
    assert ud.broadcast_object({"level": 3}) == {"level": 3}
    assert torch.equal(ud.all_gather_tensor(t), t.unsqueeze(0))
    p = torch.nn.Parameter(torch.ones(2))
    p.grad = torch.tensor([0.5, 0.25])
    q = torch.nn.Parameter(torch.ones(3))
    extra = torch.tensor([0.1])
    assert ud.GradAllReduce()([p, q], extra) is extra
    assert torch.equal(p.grad, torch.tensor([0.5, 0.25])) and q.grad is None
    lin = torch.nn.Linear(2, 2)
    before = [x.clone() for x in lin.parameters()]
    ud.broadcast_module_state([lin])
    assert all(torch.equal(a, b) for a, b in zip(before, lin.parameters(), strict=True))
    assert ud.check_replicas({"lin": lin}) == 2
    assert ud.accounting.snapshot() == {}


def test_bad_arguments_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="op must be one of"):
        ud.all_reduce(torch.ones(2), "prod")
    with pytest.raises(TypeError, match="needs a floating-point tensor"):
        ud.all_reduce(torch.ones(2, dtype=torch.int64), "mean")
    with pytest.raises(TypeError, match=r"takes a torch\.Tensor"):
        ud.all_reduce([1.0, 2.0])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="value 'x' is str"):
        ud.reduce_scalars({"x": "1"})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="value 'v' has 2 elements"):
        ud.reduce_scalars({"v": torch.ones(2)})
    with pytest.raises(ValueError, match="bucket_bytes must be >= 1"):
        ud.GradAllReduce(bucket_bytes=0)
    with pytest.raises(ValueError, match="extra must be a 1-D tensor"):
        ud.GradAllReduce()([], torch.ones(2, 2))
    with pytest.raises(TypeError, match="extra must be floating point"):
        ud.GradAllReduce()([], torch.ones(2, dtype=torch.int32))
    with pytest.raises(TypeError, match="not a single tensor"):
        ud.GradAllReduce()(torch.nn.Parameter(torch.ones(1)))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"not a torch\.nn\.Module or TensorDict"):
        ud.broadcast_module_state([torch.nn.Linear(1, 1), 3])
    with pytest.raises(TypeError, match="expected modules or TensorDicts"):
        ud.broadcast_module_state(5)


def test_import_has_no_side_effects_and_does_not_import_tensordict() -> None:
    code = (
        "import sys, torch.distributed as d, unilab_dist\n"
        "assert 'tensordict' not in sys.modules, 'tensordict imported'\n"
        "assert not d.is_initialized()\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


def test_missing_tensordict_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from unilab_dist import _tensordict

    monkeypatch.setitem(sys.modules, "tensordict", None)  # makes `import tensordict` fail
    with pytest.raises(ImportError, match=r'pip install "unilab-dist\[tensordict\]"'):
        _tensordict.require_tensordict()
    assert not _tensordict.is_tensordict(object())


def test_tensordict_leaves_are_named_and_sorted() -> None:
    tensordict = pytest.importorskip("tensordict")
    td = tensordict.TensorDict(
        {"z": torch.ones(2), "a": {"y": torch.zeros(2, 3), "b": torch.arange(2)}}, batch_size=[2]
    )
    names = [n for n, _ in ud.named_state_tensors({"td": td})]
    assert names == ["td.a.b", "td.a.y", "td.z"]
