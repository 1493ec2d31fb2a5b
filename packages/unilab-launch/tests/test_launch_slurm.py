"""`hosts="slurm"`: the hosts of a launch come from the SLURM allocation through torchrunx's
helpers (`in_slurm_job`, `slurm_hosts` -> `scontrol show hostnames`), faked here on one
machine by `unilab_launch.testing.fake_slurm_env` (SLURM_* variables and an `scontrol` on
PATH that lists loopback names)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import launch_targets
import pytest

from unilab_launch import LaunchConfig, launch, parse_hosts, resolve_hosts
from unilab_launch.testing import fake_slurm_env

TESTS = Path(__file__).resolve().parent
SLURM_JOB_VARS = ("SLURM_JOB_ID", "SLURM_JOBID")


def _outside_slurm(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not k.startswith("SLURM_")}


def test_slurm_is_kept_until_launch() -> None:
    assert parse_hosts("slurm") == "slurm" and parse_hosts(" SLURM ") == "slurm"
    assert parse_hosts(["slurm"]) == ("slurm",)  # a list is host names, never the keyword
    assert LaunchConfig(hosts="slurm").hosts == "slurm"  # no scontrol call while configuring
    assert resolve_hosts("a,b") == ("a", "b") and resolve_hosts(None) is None


def test_slurm_outside_an_allocation_is_an_error_naming_slurm(monkeypatch) -> None:
    for name in SLURM_JOB_VARS:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="not inside a SLURM allocation") as info:
        resolve_hosts("slurm")
    assert "SLURM_JOB_ID" in str(info.value)
    with pytest.raises(ValueError, match="not inside a SLURM allocation"):
        launch(launch_targets.allreduce_report, (1.0,), hosts="slurm", cpu_workers=1)


def test_slurm_hosts_come_from_scontrol_in_its_order(tmp_path: Path, monkeypatch) -> None:
    for key, value in fake_slurm_env(tmp_path, ["node2", "node1", "node3"]).items():
        monkeypatch.setenv(key, value)
    assert resolve_hosts("slurm") == ("node2", "node1", "node3")
    assert (tmp_path / "scontrol.log").read_text() == "show hostnames\n"


def test_slurm_without_scontrol_is_an_error_naming_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("PATH", str(tmp_path))  # no scontrol anywhere
    with pytest.raises(ValueError, match=r"`scontrol show hostnames` failed inside SLURM job 77"):
        resolve_hosts("slurm")


@pytest.mark.slow
def test_launch_slurm_two_nodes_one_worker_each(tmp_path: Path, monkeypatch) -> None:
    # two loopback names are two hosts: one agent each, started without SSH
    for key, value in fake_slurm_env(tmp_path, ["127.0.0.2", "127.0.0.1"]).items():
        monkeypatch.setenv(key, value)
    config = LaunchConfig(
        hosts="slurm", cpu_workers=1, seed=3, log_dir=tmp_path / "logs", timeout=300
    )
    out = launch(launch_targets.allreduce_report, (1.0,), config=config)
    assert [o["rank"] for o in out] == [0, 1]
    assert [o["local_rank"] for o in out] == [0, 0]
    assert [o["sum"] for o in out] == [3.0, 3.0] and [o["seed"] for o in out] == [3, 4]
    assert out[0]["ppid"] != out[1]["ppid"]  # one agent per node
    # SLURM's first node (127.0.0.2) runs rank 0
    assert sorted(p.name for p in (tmp_path / "logs").glob("agent-*.log")) == [
        "agent-127.0.0.1.log",
        "agent-127.0.0.2.log",
    ]


@pytest.mark.slow
def test_launch_cli_hosts_slurm_two_cpu_workers(tmp_path: Path) -> None:
    env = fake_slurm_env(tmp_path, ["localhost"])
    log_dir = tmp_path / "logs"
    script = Path(sys.executable).with_name("unilab-launch")
    cmd = [
        str(script), "--hosts", "slurm", "--cpu-workers", "2", "--log-dir", str(log_dir),
        "--timeout", "300", "--num-threads", "1", "launch_targets:cli_body", "1.5",
    ]  # fmt: skip
    out = subprocess.run(cmd, cwd=TESTS, env=env, capture_output=True, text=True, timeout=400)
    assert out.returncode == 0, out.stderr
    assert "[rank 0] rank 0 of 2 total 4.50" in out.stdout
    assert "rank 1 of 2 total 4.50" in (log_dir / "rank1.log").read_text()
    assert (tmp_path / "scontrol.log").read_text() == "show hostnames\n"


def test_launch_cli_hosts_slurm_outside_slurm_exits_2(tmp_path: Path) -> None:
    env = _outside_slurm(dict(os.environ))
    script = Path(sys.executable).with_name("unilab-launch")
    cmd = [str(script), "--hosts", "slurm", "--cpu-workers", "2", "launch_targets:cli_body", "1"]
    out = subprocess.run(cmd, cwd=TESTS, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "unilab-launch: error: hosts 'slurm': this process is not inside a SLURM allocation" in (
        out.stderr
    )
    assert not (tmp_path / "logs").exists()
