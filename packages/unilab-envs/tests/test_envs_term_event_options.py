"""`terms.EventTerm`'s MJLab options on CPU: `min_step_count_between_reset` (a reset event
skips the worlds where it applied too few steps ago) and `is_global_time` (one interval
timer for every world), against a host model of MJLab's `EventManager.apply`; both refused
outside their mode."""

from __future__ import annotations

import attrs
import numpy as np
import pytest
import torch
import warp as wp

from unilab_envs import EnvConfig, VecEnv, mdp, terms
from unilab_envs.tasks import robots
from unilab_envs.tasks.term_task import TermTask, TermTaskConfig, with_overrides
from unilab_envs.terms import EnvState

N = 16
STEPS = 60


@wp.struct
class HitParams:
    hits: wp.array(dtype=float)


@terms.term(state={"hits": None})
@wp.func
def count_hits(w: int, rng: wp.uint32, s: EnvState, p: HitParams) -> wp.uint32:
    p.hits[w] = p.hits[w] + 1.0
    return rng


def _lift(**options) -> terms.EventTerm:
    """A reset event that puts the base at 0.7 m, upright (the quadruped starts lower)."""
    return terms.EventTerm(
        func=mdp.reset_root_state_uniform, mode="reset", params={"height": 0.7}, **options
    )


def _env(events: dict[str, terms.EventTerm]) -> VecEnv:
    """Episodes of 5 steps (step_dt 0.02 s), their ends spread over the worlds."""
    policy = {"height": terms.ObservationTerm(func=mdp.base_pos_z)}
    config = TermTaskConfig(
        episode_length_s=0.1,
        observations={"policy": terms.ObservationGroup(terms=policy)},
        rewards={"alive": terms.RewardTerm(func=mdp.is_alive, weight=1.0)},
        terminations={"time_out": terms.TerminationTerm(func=mdp.time_out, time_out=True)},
        events=events,
    )
    env = VecEnv(TermTask(robots.quadruped(), config, "t"), EnvConfig(num_envs=N, device="cpu"))
    env.reset()
    env.randomize_episode_lengths()
    return env


def test_a_reset_event_skips_worlds_it_applied_to_too_few_steps_ago():
    m = 7  # the 5-step episodes: the event applies at every other reset of a world
    env = _env({"lift": _lift(min_step_count_between_reset=m)})
    root = env.task.env_state.root_qadr
    last = env.task.terms.state_arrays()["events.lift.last_step"]
    # MJLab's bookkeeping on the host: the step counter (env.reset() counted 1), each world's
    # step of the last application (0: never); env.reset() applied it everywhere
    counter, want_last = 1, np.ones(N, np.int64)
    np.testing.assert_array_equal(last.numpy(), want_last)
    applied = skipped = 0
    for _ in range(STEPS):
        done = env.step(torch.zeros(N, env.action_dim))["done"].numpy()
        counter += 1
        lifted = np.isclose(env.ctx.data.qpos.numpy()[:, root + 2], 0.7)
        due = done & ((want_last == 0) | (counter - want_last >= m))
        want_last[due] = counter
        np.testing.assert_array_equal(lifted[done], due[done])
        np.testing.assert_array_equal(last.numpy(), want_last)
        applied, skipped = applied + due.sum(), skipped + (done & ~due).sum()
    assert applied > N and skipped > N  # both happened, in many worlds


def test_a_reset_event_applies_at_every_reset_by_default():
    env = _env({"lift": _lift()})
    assert "events.lift.last_step" not in env.task.terms.state_arrays()
    root, resets = env.task.env_state.root_qadr, 0
    for _ in range(12):
        done = env.step(torch.zeros(N, env.action_dim))["done"].numpy()
        np.testing.assert_allclose(env.ctx.data.qpos.numpy()[done, root + 2], 0.7)
        resets += done.sum()
    assert resets >= 2 * N


def _ticks(global_time: bool) -> tuple[VecEnv, wp.array, wp.array]:
    tick = terms.EventTerm(
        func=count_hits, mode="interval", interval_range_s=(0.05, 0.15), is_global_time=global_time
    )
    env = _env({"tick": tick})
    state = env.task.terms.state_arrays()
    return env, state["events.tick.hits"], state["events.tick.time_left"]


def test_a_global_time_interval_event_applies_in_every_world_together():
    env, hits, time_left = _ticks(global_time=True)
    dt, (lo, hi) = np.float32(env.step_dt), (0.05, 0.15)
    t = time_left.numpy().copy()  # on CPU numpy() is a view
    assert np.ptp(t) == 0.0 and lo <= t[0] <= hi  # drawn once, when the env was reset
    fired_steps = []
    for step in range(STEPS):
        before = hits.numpy().copy()
        done = env.step(torch.zeros(N, env.action_dim))["done"].numpy()
        after, now = hits.numpy().copy(), time_left.numpy().copy()
        # one timer in every world's entry, reset or not, counting down as MJLab's
        assert np.ptp(now) == 0.0
        runs_out = t[0] - dt < 1e-6
        if runs_out:
            assert lo <= now[0] <= hi
            fired_steps.append(step)
        else:
            assert now[0] == t[0] - dt
        # it applies in every world that was not reset (a reset zeroes the count)
        np.testing.assert_array_equal(after[~done], before[~done] + float(runs_out))
        np.testing.assert_array_equal(after[done], 0.0)
        t = now
    gaps = np.diff(fired_steps)
    assert len(fired_steps) >= 5 and gaps.min() >= 2 and gaps.max() <= 8  # 0.05-0.15 s
    assert len(set(gaps)) > 1  # drawn anew each time


def test_an_interval_event_keeps_one_time_per_world_by_default():
    env, hits, time_left = _ticks(global_time=False)
    seen = set()
    for _ in range(20):
        before = hits.numpy().copy()
        done = env.step(torch.zeros(N, env.action_dim))["done"].numpy()
        fired = (hits.numpy() > before) & ~done
        seen.add(int(fired.sum()))
    assert np.ptp(time_left.numpy()) > 0.0  # the worlds' times differ
    assert seen - {0, N}  # some steps fire in some worlds only


def test_the_options_are_refused_outside_their_mode_and_overridable():
    with pytest.raises(ValueError, match="count_hits: min_step_count_between_reset applies to"):
        terms.EventTerm(
            func=count_hits,
            mode="interval",
            interval_range_s=(1, 2),
            min_step_count_between_reset=3,
        )
    name = "reset_root_state_uniform"
    with pytest.raises(ValueError, match=f"{name}: is_global_time applies to mode 'interval'"):
        _lift(is_global_time=True)
    with pytest.raises(ValueError, match="min_step_count_between_reset must be an int >= 0"):
        _lift(min_step_count_between_reset=-1)
    config = TermTaskConfig(
        events={
            "lift": _lift(),
            "tick": terms.EventTerm(func=count_hits, mode="interval", interval_range_s=(1, 2)),
        }
    )
    changed = with_overrides(
        config,
        {"events.lift.min_step_count_between_reset": 10, "events.tick.is_global_time": True},
    )
    assert changed.events["lift"].min_step_count_between_reset == 10
    assert changed.events["tick"].is_global_time
    assert attrs.evolve(changed.events["tick"], is_global_time=False) == config.events["tick"]
    with pytest.raises(TypeError, match="is_global_time takes true or false"):
        with_overrides(config, {"events.tick.is_global_time": 1})
    with pytest.raises(TypeError, match=r"events\.lift\.min_step_count_between_reset takes an"):
        with_overrides(config, {"events.lift.min_step_count_between_reset": 2.5})
    with pytest.raises(ValueError, match="is_global_time applies to mode 'interval' only"):
        with_overrides(config, {"events.lift.is_global_time": True})
