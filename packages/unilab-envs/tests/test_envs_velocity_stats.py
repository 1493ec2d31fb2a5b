"""`quadruped-velocity` and `humanoid-velocity` draw their resets and commands as distributed
as recorded (`velocity_stats.py`, tests/data/velocity/stats.json): per component the mean,
standard deviation, minimum and maximum over 4096 worlds agree within sampling error, whatever
streams or order the draws take (`test_envs_velocity_trace.py` pins the draws themselves).

Tolerances (N worlds in each sample, r = max - min and s = std of the recorded component):
    mean: 5 s sqrt(2 / N), five standard errors of the difference of two sample means;
    std: 5 s / sqrt(N), five standard errors of the difference of two sample standard
        deviations (sd(std) = s sqrt((kurtosis - 1) / (4 N)), kurtosis <= 3 taken: the
        components are uniform draws, with atoms at zero or at a clamp);
    min, max: 12 r / N: a uniform's extreme falls short of its bound by more than t with
        probability (1 - t / r)^N ~ exp(-12);
    plus 1e-6 absolute (float32 rounding; a constant component must stay that constant).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from velocity_stats import LEVELS, PATH, TASKS, make_at_level, record, reset_sample

ABS = 1e-6
SIGMAS = 5.0
EXTREME = 12.0


def _tolerance(stat: str, want: dict[str, np.ndarray], n: int) -> np.ndarray:
    s, r = want["std"], want["max"] - want["min"]
    tol = {
        "mean": SIGMAS * s * np.sqrt(2.0 / n),
        "std": SIGMAS * s / np.sqrt(n),
        "min": EXTREME * r / n,
        "max": EXTREME * r / n,
    }[stat]
    return tol + ABS


@pytest.mark.parametrize("task", TASKS)
def test_reset_and_command_draws_are_distributed_as_recorded(task):
    expected = json.loads(PATH.read_text())[task]
    got = record(task)
    n = expected["num_worlds"]
    assert got["num_worlds"] == n
    for level in LEVELS:
        assert sorted(got[level]) == sorted(expected[level])
        for key, stats in expected[level].items():
            want = {k: np.asarray(v) for k, v in stats.items()}
            for stat, value in want.items():
                have = np.asarray(got[level][key][stat])
                tol = _tolerance(stat, want, n)
                bad = np.abs(have - value) > tol
                assert not bad.any(), (
                    f"{task} level {level} {key} {stat}: got {have[bad]}, recorded "
                    f"{value[bad]} (tolerance {tol[bad]}) at components {np.flatnonzero(bad)}"
                )


def test_the_statistics_see_a_changed_range():
    # The tolerances are tight enough to notice a command range 5 % wider, a reset velocity
    # 10 % wider and a yaw half-range.
    stats = json.loads(PATH.read_text())["quadruped-velocity"]
    n = stats["num_worlds"]
    cmd = {k: np.asarray(v) for k, v in stats["last"]["step/command"].items()}
    assert (1.05 * cmd["max"] - cmd["max"] > _tolerance("max", cmd, n)).all()
    vel = {k: np.asarray(v) for k, v in stats["first"]["reset/root_lin_vel"].items()}
    assert (0.1 * vel["std"] > _tolerance("std", vel, n)).all()
    yaw = {k: np.asarray(v) for k, v in stats["first"]["reset/yaw"].items()}
    assert (0.5 * yaw["std"] > _tolerance("std", yaw, n)).all()


@pytest.mark.parametrize("task", TASKS)
def test_reset_draws_are_independent_of_each_other(task):
    # Per-component statistics cannot see two components drawn from one number (a helper that
    # draws from a copy of the generator): every pair of drawn components of a reset (base
    # pose, yaw, velocities, joint offsets, command) is uncorrelated within 5 standard errors
    # of a correlation of independent samples (1 / sqrt(N)).
    env = make_at_level(task, "last")
    columns = [
        (f"{key}[{i}]", x[:, i])
        for key, value in reset_sample(env).items()
        for x in [np.asarray(value, np.float64).reshape(len(value), -1)]
        for i in range(x.shape[1])
        if x[:, i].std() > 1e-6  # drawn, not constant
    ]
    assert len(columns) >= 8
    names = [name for name, _ in columns]
    corr = np.corrcoef(np.stack([x for _, x in columns]))
    np.fill_diagonal(corr, 0.0)
    limit = SIGMAS / np.sqrt(len(columns[0][1]))
    i, j = np.unravel_index(np.abs(corr).argmax(), corr.shape)
    assert abs(corr[i, j]) < limit, (
        f"{task}: {names[i]} and {names[j]} correlate {corr[i, j]:.3f} (limit {limit:.3f})"
    )
