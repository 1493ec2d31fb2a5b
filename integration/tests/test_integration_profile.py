"""`runner.profile`: phase seconds in metrics.jsonl (PPO, FastSAC, 2 ranks), and the clock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import unilab_dist
from unilab_integration import apply_overrides, make_config, train
from unilab_integration._runners._profile import PhaseClock

PPO_PHASES = {"inference", "env", "storage", "returns", "update", "other"}
SAC_PHASES = PPO_PHASES - {"returns"}
TOLERANCE_S = 1e-3


def _train(tmp_path: Path, algo: str, workers: int, *more: str) -> list[dict]:
    overrides = [
        f"launch.cpu_workers={workers}",
        "env.num_envs=8",
        "runner.num_steps_per_env=4",
        "runner.iterations=2",
        "runner.logging.progress=false",
        'runner.logging.loggers=["jsonl"]',
        f"runner.logging.log_dir={json.dumps(str(tmp_path))}",
        f"runner.logging.run_name={algo}{workers}{'_profiled' if 'runner.profile=true' in more else ''}",
        *more,
    ]
    if algo == "fastsac":
        overrides += ["algo.learning_starts=2", "algo.capture=false"]
    result = train(apply_overrides(make_config("cartpole-balance", algo), overrides))
    lines = (Path(result["run_dir"]) / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _phases(row: dict) -> dict[str, float]:
    return {
        k.removeprefix("profile/").removesuffix("_s"): v
        for k, v in row.items()
        if k.startswith("profile/")
    }


def _check_rows(rows: list[dict], expected: set[str]) -> None:
    assert len(rows) == 2
    for row in rows:
        phases = _phases(row)
        assert set(phases) == expected, row
        assert all(v >= 0 for v in phases.values()), phases
        # the phases (other included) are the iteration's seconds
        assert sum(phases.values()) == pytest.approx(row["perf/iteration_s"], abs=TOLERANCE_S)
        assert sum(v for k, v in phases.items() if k != "other") <= row["perf/iteration_s"]


@pytest.mark.slow
def test_ppo_and_fastsac_log_their_phases_on_one_rank_and_nothing_unprofiled(tmp_path):
    _check_rows(_train(tmp_path, "ppo", 1, "runner.profile=true"), PPO_PHASES)
    _check_rows(_train(tmp_path, "fastsac", 1, "runner.profile=true"), SAC_PHASES)
    rows = _train(tmp_path, "ppo", 1)
    assert rows and not [k for row in rows for k in row if k.startswith("profile/")]


@pytest.mark.slow
def test_two_ranks_time_their_collectives_as_sync(tmp_path):
    rows = _train(tmp_path, "ppo", 2, "runner.profile=true")
    _check_rows(rows, PPO_PHASES | {"sync"})
    # the gradient all-reduce of every mini-batch and the global sums go through gloo
    assert all(row["profile/sync_s"] > 0 for row in rows)


def _fake_clock(monkeypatch) -> list[float]:
    from types import SimpleNamespace

    from unilab_integration._runners import _profile

    now = [0.0]  # the clock, moved by hand: the test does not depend on the machine's load
    monkeypatch.setattr(_profile, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    return now


def test_laps_book_each_phase_and_other_is_the_rest(monkeypatch):
    now = _fake_clock(monkeypatch)
    clock = PhaseClock(torch.device("cpu"), True)
    clock.start()
    for _ in range(2):
        now[0] += 0.125
        clock.lap("inference")
        now[0] += 0.25
        clock.lap("env")
    assert clock.metrics(1.0) == {
        "profile/inference_s": 0.25,
        "profile/env_s": 0.5,
        "profile/other_s": 0.25,
    }
    clock.start()  # a new iteration starts from nothing
    now[0] += 0.5
    clock.lap("update")
    assert clock.metrics(0.75) == {"profile/update_s": 0.5, "profile/other_s": 0.25}


def test_timed_collectives_are_booked_to_sync_out_of_their_phase(monkeypatch):
    now = _fake_clock(monkeypatch)
    clock = PhaseClock(torch.device("cpu"), True, collectives=True)
    unilab_dist.accounting.reset()
    unilab_dist.accounting.record_seconds(3.0)  # before the iteration: not this iteration's
    clock.start()
    with clock.collectives():
        assert unilab_dist.accounting.timed_device == torch.device("cpu")
        now[0] += 0.5  # a phase of 0.5 s, 0.25 s of which in a collective
        unilab_dist.accounting.record_seconds(0.25)
        clock.lap("update")
        now[0] += 0.125
        clock.lap("env")
    assert unilab_dist.accounting.timed_device is None
    assert clock.totals == {"sync": 0.25, "update": 0.25, "env": 0.125}
    assert clock.metrics(1.0)["profile/other_s"] == 0.375
    unilab_dist.accounting.reset()


def test_unprofiled_the_clock_never_waits_nor_times_collectives(monkeypatch):
    def refuse(*args):
        raise AssertionError("synchronized without runner.profile")

    monkeypatch.setattr(torch.cuda, "synchronize", refuse)
    for collectives in (False, True):
        off = PhaseClock(torch.device("cuda", 0), False, collectives=collectives)
        off.start()
        with off.collectives():
            assert unilab_dist.accounting.timed_device is None
            off.lap("inference")
        assert off.totals == {} and off.metrics(1.0) == {}
    one_rank = PhaseClock(torch.device("cpu"), True)
    with one_rank.collectives():  # one rank: no collective to time
        assert unilab_dist.accounting.timed_device is None
    on = PhaseClock(torch.device("cuda", 0), True)
    with pytest.raises(AssertionError, match="synchronized"):
        on.start()
