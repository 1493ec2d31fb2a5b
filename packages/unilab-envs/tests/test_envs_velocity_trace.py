"""`quadruped-velocity` and `humanoid-velocity` step for step as recorded (`velocity_trace.py`,
tests/data/velocity/*.npz): observations of both groups, rewards, per-term logs, terminations
and truncations over 30 steps of fixed random actions from a fixed seed, with the tasks'
defaults. Equal within float32 summation tolerance: a change to how the tasks are computed
must not change what they compute. (Recorded again when the commands and resets became
library terms, which draw from other streams: `test_envs_velocity_stats.py` holds their
distributions, `test_envs_velocity_replay.py` the steps that draw nothing, as before.)"""

from __future__ import annotations

import numpy as np
import pytest
from velocity_trace import TASKS, fixture_path, record

RTOL, ATOL = 1e-5, 1e-6


@pytest.mark.parametrize("task", TASKS)
def test_steps_match_the_recorded_trace(task):
    expected = dict(np.load(fixture_path(task)))
    got = record(task)
    assert sorted(got) == sorted(expected)
    for key, want in expected.items():
        assert got[key].shape == want.shape, key
        if want.dtype == bool:
            np.testing.assert_array_equal(got[key], want, err_msg=key)
        else:
            np.testing.assert_allclose(got[key], want, rtol=RTOL, atol=ATOL, err_msg=key)


def test_the_trace_ends_an_episode_and_draws_noise():
    # What the fixtures cover: time limits and a termination (the resets and the observations
    # after them), noisy policy observations (the critic's first columns: the same terms
    # unnoised).
    humanoid = dict(np.load(fixture_path("humanoid-velocity")))
    assert humanoid["terminated"].any() and (humanoid["log/termination"] != 0.0).any()
    trace = dict(np.load(fixture_path("quadruped-velocity")))
    assert trace["truncated"].any(axis=0).all()
    policy, critic = trace["obs/policy"], trace["obs/critic"]
    assert not np.allclose(policy[..., :6], critic[..., :6])
    np.testing.assert_array_equal(policy[..., 6:9], critic[..., 6:9])  # the command: no noise
