"""Rank 0's log: table rows, metrics.jsonl and TensorBoard event files; the announce lines."""

from __future__ import annotations

import io
import json

from unilab_integration import MetricLogger
from unilab_integration._sinks.console import BASE_COLUMNS, format_row, table_columns


def test_format_row_and_missing_values():
    ppo = table_columns(["learner/surrogate", "learner/value", "lr", "kl"])
    row = format_row(
        {"iteration": 7, "episode/return": 123.456, "lr": 1e-3, "eval/return": 4.5}, ppo
    )
    cells = row.split()
    assert cells[0] == "7"
    assert "123.5" in cells
    assert "1.00e-03" in cells
    assert "4.5" in cells
    assert len(cells) == len(ppo) == len(BASE_COLUMNS) + 4 == 15
    assert cells.count("-") == 11  # every other column is missing


def test_console_shows_each_algorithms_own_metrics(tmp_path):
    """FastSAC's losses appear once its replay is warm (a new header then); no PPO columns."""
    out = io.StringIO()
    log = MetricLogger(tmp_path, total=None, sinks=("console",), progress=False, stream=out)
    log.log(1, {"env_steps/global": 8.0, "learner/updates": 0.0})  # before FastSAC is ready
    sac = {"learner/critic_loss": 0.5, "learner/actor_loss": -1.25, "learner/q_mean": 3.0}
    log.log(2, {"env_steps/global": 16.0, **sac, "learner/alpha": 0.01})
    log.log(3, {"env_steps/global": 24.0, **sac, "learner/alpha": 0.02})
    log.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 5  # header, row, new header, two rows
    assert lines[0].split() == [t for _, t, _, _ in BASE_COLUMNS]
    assert lines[2].split()[8:12] == ["qloss", "aloss", "q", "alpha"]
    assert "surr" not in lines[2] and "behavior" not in lines[2]
    assert lines[4].split()[8:12] == ["0.5", "-1.25", "3", "2.00e-02"]
    out = io.StringIO()
    log = MetricLogger(tmp_path, total=None, sinks=("console",), progress=False, stream=out)
    log.log(1, {"learner/behavior": 0.25})  # Distillation
    log.close()
    header, row = out.getvalue().splitlines()
    assert header.split()[8] == "behavior" and row.split()[8] == "0.25"


def test_logger_writes_table_jsonl_and_tensorboard(tmp_path):
    out = io.StringIO()
    log = MetricLogger(tmp_path, total=2, progress=False, stream=out)  # the default loggers
    log.log(1, {"env_steps/global": 100.0, "episode/return": 5.0, "kl": float("nan")})
    log.log(2, {"env_steps/global": 200.0, "episode/return": 6.0, "kl": 0.01})
    log.close()
    lines = out.getvalue().splitlines()
    assert lines[0].split()[:3] == ["iter", "steps(all)", "steps(rank)"]
    assert lines[1].split()[0] == "1" and lines[2].split()[0] == "2"
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [1, 2]
    # no ETA after the first iteration (its time holds compilation); 2 of 2 done: 0
    assert "eta_s" not in rows[0] and rows[1]["eta_s"] == 0.0
    assert rows[0]["kl"] is None and rows[1]["kl"] == 0.01
    events = list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))
    assert len(events) == 1

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tmp_path / "tensorboard"))
    acc.Reload()
    scalars = acc.Scalars("episode/return")
    assert [(s.step, s.value) for s in scalars] == [(100, 5.0), (200, 6.0)]


def test_startup_line_says_how_the_update_runs():
    from types import SimpleNamespace

    from unilab_algos import CaptureMode, CaptureStatus
    from unilab_integration._runners._startup import learner_capture

    pending, captured, off = (
        CaptureStatus(CaptureMode.PENDING),
        CaptureStatus(CaptureMode.CAPTURED),
        CaptureStatus(CaptureMode.OFF),
    )

    def mode(status):
        return learner_capture(SimpleNamespace(capture_status={"update": status}))

    assert mode(pending) == mode(captured) == ["update in CUDA graphs"]
    assert mode(off) == ["update eager (capture off in the algorithm's config)"]
    recurrent = CaptureStatus(CaptureMode.EAGER, "recurrent mini-batches vary in shape")
    assert mode(recurrent) == ["update eager (recurrent mini-batches vary in shape)"]
    failed = CaptureStatus(CaptureMode.FALLBACK, "capture of apply failed (RuntimeError: x)")
    assert mode(failed) == [
        "update eager (CUDA graphs off: capture of apply failed (RuntimeError: x))"
    ]
    assert learner_capture(SimpleNamespace(capture_status={})) == []  # captures nothing

    def both(update, rollout):
        status = {"update": update, "rollout": rollout}
        return learner_capture(SimpleNamespace(capture_status=status))

    assert both(captured, pending) == ["update and rollout in CUDA graphs"]
    cpu = CaptureStatus(CaptureMode.EAGER, "CUDA graphs need a CUDA device, got cpu")
    assert both(cpu, cpu) == ["update and rollout eager (CUDA graphs need a CUDA device, got cpu)"]
    assert both(captured, off) == [
        "update in CUDA graphs",
        "rollout eager (capture off in the algorithm's config)",
    ]


def test_startup_line_reads_the_real_learners_statuses():
    from unilab_algos import PPO, FastSAC, FastSACConfig, PPOConfig
    from unilab_integration._runners._startup import learner_capture

    shapes = {"policy": (3,), "critic": (3,)}
    cpu = "CUDA graphs need a CUDA device, got cpu"
    assert learner_capture(PPO(shapes, 2, PPOConfig())) == [f"update and rollout eager ({cpu})"]
    assert learner_capture(PPO(shapes, 2, PPOConfig.rsl_rl())) == [
        "update and rollout eager (capture off in the algorithm's config)"
    ]
    sac_cfg = FastSACConfig(capture=True, critic_obs=("policy",))
    assert learner_capture(FastSAC(shapes, 2, sac_cfg, num_envs=2)) == [f"update eager ({cpu})"]


def test_matmul_precision_is_applied_validated_and_announced():
    import attrs
    import pytest
    import torch

    from unilab_integration import RunnerConfig
    from unilab_integration._runners._base import _precision
    from unilab_integration._train import apply_torch_settings

    assert RunnerConfig().matmul_precision == "highest"
    with pytest.raises(ValueError, match="matmul_precision"):
        RunnerConfig(matmul_precision="tf32")
    before = torch.get_float32_matmul_precision()
    try:
        apply_torch_settings(RunnerConfig(matmul_precision="high"))
        assert torch.get_float32_matmul_precision() == "high"
        apply_torch_settings(attrs.evolve(RunnerConfig(), matmul_precision="highest"))
        assert torch.get_float32_matmul_precision() == "highest"
    finally:
        torch.set_float32_matmul_precision(before)
    assert _precision(RunnerConfig()) == ""
    assert _precision(RunnerConfig(matmul_precision="high")) == (
        "matmul precision high (TF32 on GPUs) | "
    )


def test_evaluations_and_the_solved_rule_are_announced():
    from unilab_integration._config import EvalSettings, RunnerConfig
    from unilab_integration._runners._base import _evaluation

    assert _evaluation(RunnerConfig()) == ""
    assert "training episodes" in _evaluation(RunnerConfig(until_solved=True))
    line = _evaluation(RunnerConfig(eval=EvalSettings(interval=10), until_solved=True))
    assert line == "deterministic policy evaluated every 10 iterations, judged by --until-solved | "


def test_eta_leaves_the_first_iteration_out_and_is_not_given_against_a_cap(tmp_path, monkeypatch):
    from unilab_integration import _logger

    # what happened before the first log (compilation, capture) is never read: 2 s per iteration
    clock = iter([100.0, 102.0, 104.0] * 2)
    monkeypatch.setattr(_logger.time, "perf_counter", lambda: next(clock))
    for eta, expected in ((True, [None, 16.0, 14.0]), (False, [None, None, None])):
        log = MetricLogger(tmp_path / str(eta), total=10, sinks=("jsonl",), eta=eta)
        log.log(1, {})  # no rate yet
        log.log(2, {})  # 8 left: 16 s
        log.log(3, {})  # 7 left: 14 s
        log.close()
        rows = (tmp_path / str(eta) / "metrics.jsonl").read_text().splitlines()
        assert [json.loads(r).get("eta_s") for r in rows] == expected
