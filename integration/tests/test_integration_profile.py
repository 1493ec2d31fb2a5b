"""`runner.profile`: phase seconds in metrics.jsonl (PPO, FastSAC, 2 ranks), and the timer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from unilab_integration import apply_overrides, make_config, train
from unilab_integration._runners._profile import PhaseTimer, TimedCollective

PPO_PHASES = {"inference", "env_physics", "env_evaluate", "storage", "returns", "update", "other"}
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
def test_two_ranks_with_an_eager_update_time_the_injected_collectives(tmp_path):
    rows = _train(tmp_path, "ppo", 2, "runner.profile=true")
    _check_rows(rows, PPO_PHASES | {"sync"})
    # the gradient all-reduce of every mini-batch and the global sums go through gloo
    assert all(row["profile/sync_s"] > 0 for row in rows)


class _UserEnv:
    def step(self, action):
        return action + 1


def test_an_env_without_a_profiled_step_is_timed_as_one_phase():
    timer = PhaseTimer(torch.device("cpu"), True, _UserEnv())
    assert "profile/env_s" in timer.note and "step_profiled" in timer.note
    start = timer.start()
    timer.lap("inference")
    assert timer.env_step(torch.zeros(2)).tolist() == [1.0, 1.0]
    metrics = timer.metrics(1.0)
    assert set(metrics) == {"profile/inference_s", "profile/env_s", "profile/other_s"}
    assert metrics["profile/other_s"] == pytest.approx(1.0 - (timer._last - start))
    off = PhaseTimer(torch.device("cpu"), False, _UserEnv())
    assert off.note is None and off.metrics(1.0) == {}
    assert off.wrap(len) is len  # unprofiled: the injected collective itself, never dropped
    assert off.env_step.__func__ is _UserEnv.step  # unprofiled: the env's own step


def test_timed_collectives_are_booked_to_sync_out_of_their_phase(monkeypatch):
    from types import SimpleNamespace

    from unilab_integration._runners import _profile

    now = [0.0]  # the timer's clock, moved by hand: the test does not depend on the machine's load
    monkeypatch.setattr(_profile, "time", SimpleNamespace(perf_counter=lambda: now[0]))

    class Reducer:
        rank, world_size = 1, 2

        def __call__(self, x):
            now[0] += 0.25  # the collective takes 0.25 s
            return x * 2

    timer = PhaseTimer(torch.device("cpu"), True, _UserEnv())
    wrapped = timer.wrap(Reducer())
    assert isinstance(wrapped, TimedCollective)
    assert (wrapped.rank, wrapped.world_size) == (1, 2)  # what the normalizers read
    assert timer.wrap(None) is None
    timer.time_collectives = True
    timer.start()
    assert wrapped(torch.ones(1)).item() == 2.0
    now[0] += 0.25  # ... inside a phase of 0.5 s
    timer.lap("update")
    assert timer.totals["sync"] == 0.25
    assert timer.totals["update"] == 0.25
    timer.time_collectives = False  # a captured update: collectives not timed, no sync phase
    timer.start()
    wrapped(torch.ones(1))
    timer.lap("update")
    assert "profile/sync_s" not in timer.metrics(1.0)
