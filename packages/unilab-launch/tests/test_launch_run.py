"""Real launches of CPU (gloo) workers: results, seeds, env, logs, failures."""

from __future__ import annotations

import json
import random
import re
import socket
import time
from pathlib import Path

import launch_targets
import pytest
import torch

from unilab_launch import LaunchConfig, WorkerFailedError, launch
from unilab_launch._net import interface_of
from unilab_launch._worker import process_start_ticks

pytestmark = pytest.mark.slow

COLLECTIVE_TIMEOUT_S = 300


def _no_worker_alive(run_dir: Path, world_size: int) -> None:
    records = [json.loads(p.read_text()) for p in sorted((run_dir / "pids").glob("rank*.json"))]
    assert sorted(r["rank"] for r in records) == list(range(world_size))
    for r in records:
        assert process_start_ticks(r["pid"]) != r["start"], f"rank {r['rank']} still running"


def test_launch_four_cpu_workers_all_reduce(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MUJOCO_TEST_FLAG", "copied")
    for name in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"):
        monkeypatch.delenv(name, raising=False)  # the launch chooses them
    log_dir = tmp_path / "logs"
    config = LaunchConfig(
        cpu_workers=4,
        seed=11,
        env={"UNILAB_TEST_VALUE": "42"},
        log_dir=log_dir,
        timeout=COLLECTIVE_TIMEOUT_S,
        num_threads=1,
    )
    out = launch(launch_targets.allreduce_report, (0.5,), config=config)

    assert [o["rank"] for o in out] == [0, 1, 2, 3]
    assert [o["local_rank"] for o in out] == [0, 1, 2, 3]
    for o in out:
        assert o["world_size"] == 4 and o["local_world_size"] == 4
        assert o["backend"] == "gloo" and o["device"] == "cpu"
        assert o["sum"] == 0.5 * (1 + 2 + 3 + 4)
        assert o["threads"] == 1
        assert (o["custom_env"], o["copied_env"]) == ("42", "copied")
        # a one-host run: gloo's and NCCL's sockets on the loopback interface
        assert o["socket_ifnames"] == [interface_of("127.0.0.1")] * 2 != [None] * 2
    assert [o["seed"] for o in out] == [11, 12, 13, 14]
    for o in out:
        torch.manual_seed(o["seed"])
        assert o["torch_draw"] == torch.rand(1).item()
        assert o["python_draw"] == random.Random(o["seed"]).random()
    assert len({o["pid"] for o in out}) == 4

    for rank in range(4):
        text = (log_dir / f"rank{rank}.log").read_text()
        assert f"worker {rank} reduced 5.0" in text
        assert f"worker {(rank + 1) % 4} reduced" not in text
    assert (log_dir / "agent-localhost.log").exists()
    assert not list((log_dir / "failures").glob("*.json"))
    _no_worker_alive(log_dir, 4)


def test_launch_two_hosts_two_workers_each(tmp_path: Path) -> None:
    # Two loopback addresses are two hosts (one agent each, started without SSH since
    # both are this machine): the multi-node path of rank layout, rendezvous and collectives.
    config = LaunchConfig(
        hosts="127.0.0.1,127.0.0.2",
        cpu_workers=2,
        seed=5,
        log_dir=tmp_path / "logs",
        timeout=COLLECTIVE_TIMEOUT_S,
        num_threads=1,
    )
    out = launch(launch_targets.allreduce_report, (1.0,), config=config)
    assert [o["rank"] for o in out] == [0, 1, 2, 3]
    assert [o["local_rank"] for o in out] == [0, 1, 0, 1]
    for o in out:
        assert o["world_size"] == 4 and o["local_world_size"] == 2
        assert o["sum"] == 1 + 2 + 3 + 4
    assert [o["seed"] for o in out] == [5, 6, 7, 8]
    # one agent per host: the workers of a host share a parent, the hosts do not
    assert out[0]["ppid"] == out[1]["ppid"] and out[2]["ppid"] == out[3]["ppid"]
    assert out[0]["ppid"] != out[2]["ppid"]


@pytest.mark.parametrize(("world_size", "fail_rank"), [(2, 0), (3, 2)])
def test_launch_first_failure_surfaces_promptly(
    tmp_path: Path, world_size: int, fail_rank: int
) -> None:
    log_dir = tmp_path / "logs"
    start = time.monotonic()
    with pytest.raises(WorkerFailedError) as info:
        launch(
            launch_targets.raise_while_others_wait,
            (fail_rank,),
            cpu_workers=world_size,
            log_dir=log_dir,
            timeout=COLLECTIVE_TIMEOUT_S,
        )
    raised_ns = time.time_ns()
    elapsed = time.monotonic() - start
    err = info.value

    assert (
        err.rank == fail_rank and err.local_rank == fail_rank and err.host == socket.gethostname()
    )
    assert err.error == f"ValueError: deliberate failure on rank {fail_rank}"
    assert "launch_targets.py" in err.traceback and "raise ValueError" in err.traceback
    message = str(err)
    assert message.startswith(f"rank {fail_rank} of {world_size} (host {socket.gethostname()}")
    assert f"failed first: ValueError: deliberate failure on rank {fail_rank}" in message
    # the others failed only because their peer died, or were stopped before they noticed:
    # those that failed are named after it, never blamed
    others = set(range(world_size)) - {fail_rank}
    listed = re.search(r"; ranks \[([\d, ]*)\] failed after it;", message)
    assert listed is None or {int(r) for r in listed.group(1).split(",")} <= others
    assert err.log_path == log_dir.resolve() / f"rank{fail_rank}.log"
    assert f"deliberate failure on rank {fail_rank}" in err.log_path.read_text()

    # prompt: far below the collective timeout that a collective left waiting would wait out
    record = json.loads((log_dir / "failures" / f"rank{fail_rank}.json").read_text())
    assert record["rank"] == fail_rank
    assert (raised_ns - record["time_ns"]) / 1e9 < 30.0
    assert elapsed < COLLECTIVE_TIMEOUT_S / 2
    _no_worker_alive(log_dir, world_size)
