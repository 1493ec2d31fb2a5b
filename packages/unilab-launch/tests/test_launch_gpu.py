"""GPU launches (NCCL): run on a machine with CUDA GPUs; skipped elsewhere."""

from __future__ import annotations

import os
import time
from pathlib import Path

import launch_targets
import pytest
import torch

from unilab_launch import WorkerFailedError, launch

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
needs_two = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")


@pytest.mark.multigpu
@needs_two
def test_launch_one_nccl_worker_per_gpu(tmp_path: Path) -> None:
    n = torch.cuda.device_count()
    out = launch(launch_targets.nccl_report, gpus="all", log_dir=tmp_path, timeout=120)
    assert [o["rank"] for o in out] == list(range(n))
    for r, o in enumerate(out):
        assert o["device"] == f"cuda:{r}" and o["current_device"] == r
        assert "nccl" in o["backend"]
        assert o["sum"] == n * (n + 1) / 2


@pytest.mark.gpu
@needs_gpu
def test_launch_selected_gpu_becomes_cuda0(tmp_path: Path) -> None:
    index = torch.cuda.device_count() - 1
    (o,) = launch(launch_targets.nccl_report, gpus=[index], log_dir=tmp_path, timeout=120)
    assert (o["rank"], o["device"], o["current_device"], o["sum"]) == (0, "cuda:0", 0, 1.0)
    parent = os.environ.get("CUDA_VISIBLE_DEVICES")
    expected = parent.split(",")[index].strip() if parent else str(index)
    assert o["visible"] == expected  # exactly that one device is visible to the worker


@pytest.mark.multigpu
@needs_two
def test_launch_nccl_failure_surfaces_promptly(tmp_path: Path) -> None:
    start = time.monotonic()
    with pytest.raises(WorkerFailedError) as info:
        launch(
            launch_targets.nccl_raise_while_others_wait, (1,), gpus="0,1", log_dir=tmp_path,
            timeout=300,
        )  # fmt: skip
    assert info.value.rank == 1
    assert info.value.error == "ValueError: deliberate failure on rank 1"
    assert time.monotonic() - start < 120
