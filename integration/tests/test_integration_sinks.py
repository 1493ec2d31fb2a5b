"""Metric sinks (`runner.logging.loggers`): the registry and its errors, a user's sink, `--loggers`,
and the startup line's content on CPU."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import pytest
import torch

from unilab_algos import CaptureMode, CaptureStatus
from unilab_integration import (
    MetricLogger,
    RunInfo,
    _sinks,
    apply_overrides,
    make_config,
    register_sink,
    sink_names,
)
from unilab_integration._cli import build_parser
from unilab_integration.cli import build_config, main


class Recorder:
    """A user's sink: keeps what it is told."""

    made: ClassVar[list[Recorder]] = []

    def __init__(self, run: RunInfo) -> None:
        self.run, self.rows, self.checkpoints, self.closed = run, [], [], None
        Recorder.made.append(self)

    def log(self, iteration, metrics):
        self.rows.append((iteration, dict(metrics)))

    def checkpoint(self, iteration, path):
        self.checkpoints.append((iteration, path))

    def close(self, failed):
        self.closed = failed


@pytest.fixture
def registry(monkeypatch):
    """The sink registry, restored after the test."""
    builtin = ("console", "jsonl", "tensorboard", "wandb")  # without a test module's sinks
    monkeypatch.setattr(_sinks, "_SINKS", {name: _sinks._SINKS[name] for name in builtin})
    Recorder.made = []
    return _sinks._SINKS


def test_a_registered_sink_gets_every_iteration_checkpoint_and_the_close(registry, tmp_path):
    register_sink("recorder", Recorder)
    assert sink_names() == ["console", "jsonl", "tensorboard", "wandb", "recorder"]
    cfg = make_config("cartpole-balance", "ppo")
    out = io.StringIO()
    log = MetricLogger(
        tmp_path, total=4, initial=2, sinks=("recorder",), config=cfg, progress=False, stream=out
    )
    (sink,) = Recorder.made
    assert sink.run == RunInfo(
        run_dir=tmp_path, config=cfg, total=4, initial=2, progress=False, stream=out
    )
    log.write("a line")  # no console sink: printed as is
    log.log(3, {"env_steps/global": 30.0, "episode/return": 1.5})
    log.checkpoint(3, "/runs/x/checkpoints/ckpt_000003.pt")
    log.log(4, {"env_steps/global": 40.0})
    log.close()
    assert out.getvalue() == "a line\n"
    assert [(i, m["iteration"], m["env_steps/global"]) for i, m in sink.rows] == [
        (3, 3, 30.0),
        (4, 4, 40.0),
    ]
    assert sink.rows[0][1]["episode/return"] == 1.5 and sink.rows[1][1]["eta_s"] == 0.0
    assert sink.checkpoints == [(3, "/runs/x/checkpoints/ckpt_000003.pt")]
    assert sink.closed is False
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no other sink wrote anything
    with pytest.raises(ValueError, match="sink 'recorder' is already registered"):
        register_sink("recorder", lambda run: Recorder(run))
    register_sink("recorder", Recorder)  # the same factory again (a module imported twice)


def test_unknown_logger_names_the_known_ones(registry, tmp_path):
    with pytest.raises(ValueError) as info:
        MetricLogger(tmp_path, total=1, sinks=("console", "neptune"))
    assert str(info.value) == (
        "runner.logging.loggers: unknown logger 'neptune'; loggers: console, jsonl, tensorboard, wandb "
        "(more with unilab_integration.register_sink, from a module in runner.imports)"
    )
    assert not any(tmp_path.iterdir())  # refused before any sink started


def test_unknown_logger_is_refused_before_any_worker(registry, tmp_path, capsys):
    argv = ["train", "cartpole-balance", "--iterations", "1", "--cpu-workers", "1"]
    argv += ["--log-dir", str(tmp_path), "--loggers", "console,neptune"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "unknown logger 'neptune'; loggers: console, jsonl, tensorboard, wandb" in err
    assert not any(tmp_path.iterdir())


def test_missing_wandb_names_the_extra(tmp_path, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a)
    )
    message = "runner.logging.loggers has 'wandb', which needs the wandb package: pip install \"unilab-integration[wandb]\""
    with pytest.raises(ImportError) as info:
        _sinks.check_sinks(["console", "wandb"])
    assert str(info.value) == message
    argv = ["train", "cartpole-balance", "--iterations", "1", "--cpu-workers", "1"]
    argv += ["--log-dir", str(tmp_path), "--loggers", "console,wandb"]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == f"unilab train: error: {message}"
    assert not any(tmp_path.iterdir())


def test_a_failing_sink_closes_the_ones_started_before_it(registry, tmp_path):
    def broken(run):
        raise RuntimeError("backend down")

    register_sink("recorder", Recorder)
    register_sink("broken", broken)
    with pytest.raises(RuntimeError, match="backend down"):
        MetricLogger(tmp_path, total=1, sinks=("recorder", "broken"))
    assert Recorder.made[0].closed is True


def test_loggers_choose_what_is_written(tmp_path):
    out = io.StringIO()
    log = MetricLogger(tmp_path, total=1, sinks=("console",), progress=False, stream=out)
    log.log(1, {"env_steps/global": 8.0})
    log.close()
    assert out.getvalue().splitlines()[1].split()[:2] == ["1", "8"]
    assert not any(tmp_path.iterdir())  # no metrics.jsonl, no tensorboard/


def test_runner_loggers_are_the_one_key_for_sinks():
    cfg = make_config("cartpole-balance", "ppo")
    assert cfg.runner.logging.loggers == ("console", "jsonl", "tensorboard")
    assert "tensorboard" not in cfg.to_dict()["runner"]
    with pytest.raises(ValueError, match=r"unknown config key 'runner\.tensorboard'"):
        apply_overrides(cfg, ["runner.tensorboard=false"])
    with pytest.raises(
        ValueError, match=r"'runner\.logging\.loggers' takes a list of distinct strings"
    ):
        apply_overrides(cfg, ['runner.logging.loggers=["jsonl","jsonl"]'])


def test_loggers_flag_and_wandb_settings():
    args = build_parser().parse_args(
        [
            "train",
            "cartpole-balance",
            "--loggers",
            "console, wandb",
            "--set",
            "runner.logging.wandb.mode=offline",
        ]
    )
    cfg = build_config(args)
    assert cfg.runner.logging.loggers == ("console", "wandb")
    assert (
        cfg.runner.logging.wandb.project,
        cfg.runner.logging.wandb.entity,
        cfg.runner.logging.wandb.mode,
    ) == (
        None,
        None,
        "offline",
    )
    with pytest.raises(
        ValueError, match=r"'runner\.logging\.wandb\.mode' takes one of 'online', 'offline'"
    ):
        apply_overrides(cfg, ["runner.logging.wandb.mode=sometimes"])


def test_startup_line_on_cpu_is_one_line_with_the_versions():
    import importlib.metadata as md

    from unilab_envs import EnvFeatures
    from unilab_integration._runners._startup import env_capture, startup_line

    cpu = torch.device("cpu")
    eager = EnvFeatures(eager_reason="CUDA graphs need a CUDA device, got cpu")
    env = SimpleNamespace(device=cpu, features=eager)
    reason = CaptureStatus(CaptureMode.EAGER, "CUDA graphs need a CUDA device, got cpu")
    learner = SimpleNamespace(capture_status={"update": reason, "rollout": reason})
    line = startup_line(cpu, env, learner)
    assert line == (
        f"system: cpu | torch {torch.__version__}, warp {md.version('warp-lang')}, "
        f"mujoco-warp {md.version('mujoco-warp')}, mujoco {md.version('mujoco')} | "
        "env step eager (CUDA graphs need a CUDA device, got cpu) | "
        "update and rollout eager (CUDA graphs need a CUDA device, got cpu)"
    )
    assert "\n" not in line and "mempool" not in line  # the pool is warp's on CUDA only
    graph = SimpleNamespace(features=EnvFeatures(cuda_graph=True))
    assert env_capture(graph) == "in a CUDA graph"
    off = SimpleNamespace(
        features=EnvFeatures(eager_reason="cuda_graph=False in the env's EnvConfig")
    )
    assert env_capture(off) == "eager (cuda_graph=False in the env's EnvConfig)"
    assert env_capture(object()) == "eager (not a unilab_envs VecEnv: it reports no features)"
    with pytest.raises(TypeError, match=r"not a unilab_envs\.EnvFeatures"):
        env_capture(SimpleNamespace(features={"cuda_graph": True}))


def test_config_json_round_trips_the_loggers(tmp_path):
    from unilab_integration import load_config, save_config

    cfg = apply_overrides(
        make_config("cartpole-balance", "ppo"),
        ['runner.logging.loggers=["console","wandb"]', "runner.logging.wandb.project=robots"],
    )
    save_config(cfg, tmp_path / "config.json")
    saved = json.loads(Path(tmp_path / "config.json").read_text())["runner"]["logging"]
    assert saved["loggers"] == ["console", "wandb"] and saved["wandb"]["project"] == "robots"
    assert load_config(tmp_path / "config.json") == cfg


def test_startup_line_on_a_gpu_from_what_torch_warp_and_the_driver_report(monkeypatch, tmp_path):
    """The CUDA branch on a CPU machine: torch's device properties, warp's CUDA and mempool
    queries and the driver's /proc file replaced by what an H200 machine reports."""
    import importlib.metadata as md

    import warp as wp

    from unilab_integration._runners import _startup

    version = tmp_path / "version"
    version.write_text(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.03  Release Build  "
        "(dvs-builder@U22)  Thu Oct 16 2025\nGCC version:  gcc version 12.3.0\n"
    )
    monkeypatch.setattr(_startup, "NVIDIA_VERSION_FILE", version)
    props = SimpleNamespace(name="NVIDIA H200", major=9, minor=0, total_memory=143771 * 2**20)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: props)
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(wp, "get_cuda_driver_version", lambda: (13, 0))
    monkeypatch.setattr(wp, "get_cuda_toolkit_version", lambda: (12, 9))
    monkeypatch.setattr(wp, "is_mempool_supported", lambda name: name == "cuda:0")
    enabled = {"cuda:0": True}
    monkeypatch.setattr(wp, "is_mempool_enabled", lambda name: enabled[name])
    monkeypatch.setattr(wp, "get_mempool_release_threshold", lambda name: 3 * 2**30 // 2)
    from unilab_envs import EnvFeatures

    gpu = torch.device("cuda", 0)
    env = SimpleNamespace(device=gpu, features=EnvFeatures(cuda_graph=True))
    pending = CaptureStatus(CaptureMode.PENDING)
    learner = SimpleNamespace(capture_status={"update": pending, "rollout": pending})
    line = _startup.startup_line(gpu, env, learner)
    assert line == (
        "system: GPU NVIDIA H200 (sm_90, 140 GiB), NVIDIA driver 580.159.03, CUDA driver 13.0 | "
        f"torch {torch.__version__} (CUDA 13.0), warp {md.version('warp-lang')} (CUDA 12.9), "
        f"mujoco-warp {md.version('mujoco-warp')}, mujoco {md.version('mujoco')} | "
        "env step in a CUDA graph | update and rollout in CUDA graphs | "
        "warp mempool on (release threshold 1.5 GiB)"
    )
    enabled["cuda:0"] = False
    assert _startup.startup_line(gpu, env, learner).endswith("| warp mempool off")
    version.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19\n")
    assert "NVIDIA driver 535.104.05, CUDA driver" in _startup.startup_line(gpu, env, learner)
    monkeypatch.setattr(_startup, "NVIDIA_VERSION_FILE", tmp_path / "absent")
    assert "(sm_90, 140 GiB), CUDA driver 13.0 |" in _startup.startup_line(gpu, env, learner)

    def broken(name):
        raise RuntimeError("driver query failed")

    monkeypatch.setattr(wp, "is_mempool_supported", broken)  # a failing query: named, not fatal
    assert _startup.startup_line(gpu, env, learner).endswith(
        "| warp mempool unknown (RuntimeError: driver query failed)"
    )
