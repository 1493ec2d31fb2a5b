"""`quadruped-velocity` and `humanoid-velocity` load a checkpoint the tasks saved before their
commands and resets were terms (its array names, `velocity.STATE_NAMES`), and step from it as
they did: the observations (the policy group's noise included), rewards, per-term logs and
terminations of steps that draw no reset or command are as recorded (`velocity_replay.py`,
tests/data/velocity/replay-*.npz), bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from velocity_replay import TASKS, load, run


@pytest.mark.parametrize("task", TASKS)
def test_a_saved_checkpoint_loads_and_steps_as_recorded(task):
    env, acts, expected = load(task)
    got = run(env, acts)
    assert sorted(got) == sorted(k for k in expected if k != "action")
    for key, want in got.items():
        np.testing.assert_array_equal(want, expected[key], err_msg=key)
