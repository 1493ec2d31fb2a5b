"""Command, event and curriculum terms (`terms.CommandTerm`, `terms.EventTerm`,
`terms.CurriculumTerm`): a user's own in a task made of terms, MJLab's in
`go1-velocity-{flat,rough}`, changed or removed by plain data, and wrong signatures refused
naming the term."""

from __future__ import annotations

import attrs
import numpy as np
import pytest
import torch
import warp as wp

from unilab_envs import EnvConfig, VecEnv, make_task, mdp, terms
from unilab_envs.tasks import robots
from unilab_envs.tasks.term_task import TermTask, TermTaskConfig, with_overrides
from unilab_envs.terms import EnvState

N = 3


@wp.struct
class ConstParams:
    value: wp.vec3
    draws: wp.array(dtype=float)


@terms.term(size=3, state={"draws": None})
@wp.func
def const_command(
    w: int, col: int, resample: bool, rng: wp.uint32, s: EnvState, p: ConstParams
) -> None:
    if resample:
        p.draws[w] = p.draws[w] + 1.0
        for i in range(3):
            s.command[w, col + i] = p.value[i]


@wp.struct
class HeightParams:
    height: float


@terms.term()
@wp.func
def lift_base(w: int, rng: wp.uint32, s: EnvState, p: HeightParams) -> wp.uint32:
    s.qpos[w, s.root_qadr + 2] = p.height
    return rng


@wp.func
def not_an_event(w: int, s: EnvState) -> float:
    return 0.0


def _config() -> TermTaskConfig:
    policy = {"command": terms.ObservationTerm(func=mdp.generated_commands)}
    return TermTaskConfig(
        episode_length_s=0.1,
        command_dim=3,
        observations={"policy": terms.ObservationGroup(terms=policy)},
        rewards={"alive": terms.RewardTerm(func=mdp.is_alive, weight=1.0)},
        terminations={"time_out": terms.TerminationTerm(func=mdp.time_out, time_out=True)},
        commands={
            "c": terms.CommandTerm(
                func=const_command,
                params={"value": (0.5, -0.25, 1.0)},
                resampling_time_range=(100.0, 100.0),
            )
        },
        events={"lift": terms.EventTerm(func=lift_base, mode="reset", params={"height": 0.7})},
    )


def test_a_users_command_and_reset_event_run_in_the_step():
    env = VecEnv(TermTask(robots.quadruped(), _config(), "t"), EnvConfig(num_envs=N, device="cpu"))
    env.reset()
    root = env.task.env_state.root_qadr
    np.testing.assert_allclose(env.ctx.data.qpos.numpy()[:, root + 2], 0.7)  # lift_base
    td = env.step(torch.zeros(N, env.action_dim))
    torch.testing.assert_close(td["obs", "policy"], torch.tensor([[0.5, -0.25, 1.0]] * N))
    state = env.task.terms.state_arrays()
    np.testing.assert_allclose(state["commands.c.time_left"].numpy(), 100.0 - env.step_dt)
    np.testing.assert_array_equal(state["commands.c.draws"].numpy(), 1.0)  # one draw, at reset
    for _ in range(5):  # the 5-step episodes end at step 5: the reset draws anew
        env.step(torch.zeros(N, env.action_dim))
    np.testing.assert_allclose(state["commands.c.time_left"].numpy(), 100.0 - env.step_dt)
    # a reset zeroes the term's state, then the command's draw counts 1 again
    np.testing.assert_array_equal(state["commands.c.draws"].numpy(), 1.0)
    saved = env.state_dict()["arrays"]
    assert {"task.terms.commands.c.time_left", "task.terms.commands.c.draws"} <= set(saved)


def test_wrong_signatures_are_refused_naming_the_term():
    bad_event = {"lift": terms.EventTerm(func=not_an_event, mode="reset")}
    with pytest.raises(ValueError, match=r"events\.lift: event term not_an_event .*expected "):
        TermTask(robots.quadruped(), TermTaskConfig(events=bad_event), "t")
    bad_command = {"c": terms.CommandTerm(func=lift_base, resampling_time_range=(1.0, 2.0))}
    with pytest.raises(ValueError, match=r"commands\.c: command term lift_base .*-> None"):
        TermTask(robots.quadruped(), TermTaskConfig(command_dim=3, commands=bad_command), "t")
    with pytest.raises(ValueError, match="interval_range_s exactly when its mode is 'interval'"):
        terms.EventTerm(func=lift_base, mode="interval")


def test_plain_overrides_of_commands_and_events():
    config = with_overrides(
        _config(),
        {
            "commands.c.resampling_time_range": [2.0, 4.0],
            "events.lift.params.height": 0.5,
            "events.push": {
                "func": "push_by_setting_velocity",
                "mode": "interval",
                "interval_range_s": [1.0, 2.0],
                "params": {"lin_vel": [0.1, 0.1, 0.0], "ang_vel": [0.0, 0.0, 0.0]},
            },
        },
    )
    assert config.commands["c"].resampling_time_range == (2.0, 4.0)
    assert config.events["lift"].params["height"] == 0.5
    assert config.events["push"].interval_range_s == (1.0, 2.0)
    with pytest.raises(KeyError, match="did you mean 'lift'"):
        with_overrides(_config(), {"events.lfit": None})
    with pytest.raises(TypeError, match=r"commands\.c\.resampling_time_range takes \[low, high\]"):
        with_overrides(_config(), {"commands.c.resampling_time_range": [4.0, 2.0]})
    with pytest.raises(TypeError, match=r"events\.lift\.mode takes one of startup, reset"):
        with_overrides(_config(), {"events.lift.mode": "sometimes"})
    with pytest.raises(TypeError, match="a new event term needs a mode"):
        with_overrides(_config(), {"events.new": {"func": "push_by_setting_velocity"}})


def test_the_mjlab_task_takes_command_and_event_overrides():
    from unilab_envs.testing import mjlab_robot

    mjlab_robot("go1")
    own = make_task("go1-velocity-flat")
    assert list(own.terms.command_columns) == ["twist"]
    labels = [
        t.label for mode in ("reset", "interval", "startup") for t, _ in own.terms._events[mode]
    ]
    assert labels == [
        "events.reset_base",
        "events.reset_robot_joints",
        "events.push_robot",
        "events.foot_friction",
        "events.base_com",
        "events.encoder_bias",
    ]
    # a time range or a parameter is runtime data: the same generated kernel
    changed = make_task(
        "go1-velocity-flat",
        commands={"twist": {"resampling_time_range": [3.0, 5.0]}},
        events={"push_robot": {"interval_range_s": [1.0, 2.0], "params": {"lin_vel": [1, 1, 0]}}},
    )
    assert changed.terms._reset is own.terms._reset
    ((_, twist, _),) = changed.terms._commands
    assert twist.resampling_time_range == (3.0, 5.0)
    ((push, cfg),) = changed.terms._events["interval"]
    assert cfg.interval_range_s == (1.0, 2.0) and push.params["lin_vel"] == [1, 1, 0]
    # the deployment metadata follows the command term's parameters
    narrow = make_task(
        "go1-velocity-flat", commands={"twist": {"params": {"lin_vel_y": [-0.5, 0.5]}}}
    )
    assert narrow.deployment_info()["command_ranges"]["lin_vel_y"] == [-0.5, 0.5]
    assert own.deployment_info()["command_ranges"]["lin_vel_y"] == [-1.0, 1.0]
    # a removed event is absent from the generated kernel
    no_push = make_task("go1-velocity-flat", events={"push_robot": None})
    assert no_push.terms._reset is not own.terms._reset
    assert not no_push.terms._events["interval"]
    with pytest.raises(KeyError, match="did you mean 'push_robot'"):
        make_task("go1-velocity-flat", events={"push_robt": None})
    with pytest.raises(ValueError, match="has no curricula terms"):
        make_task("quadruped-velocity", curricula={"terrain_levels": None})


@wp.struct
class CountParams:
    resets: wp.array(dtype=float)


@terms.term(state={"resets": None})
@wp.func
def count_resets(w: int, rng: wp.uint32, s: EnvState, p: CountParams) -> wp.uint32:
    # runs before the term state is zeroed (the count does not survive the reset) and before
    # the reset events (which leave the base's x alone)
    p.resets[w] = p.resets[w] + 1.0
    s.qpos[w, s.root_qadr] = 3.0
    return rng


def test_a_users_curriculum_runs_at_each_reset_before_the_state_is_zeroed():
    config = attrs.evolve(_config(), curricula={"count": terms.CurriculumTerm(func=count_resets)})
    env = VecEnv(TermTask(robots.quadruped(), config, "t"), EnvConfig(num_envs=N, device="cpu"))
    env.reset()
    resets = env.task.terms.state_arrays()["curricula.count.resets"]
    root = env.task.env_state.root_qadr
    np.testing.assert_array_equal(resets.numpy(), 0.0)  # zeroed after the curriculum ran
    np.testing.assert_allclose(env.ctx.data.qpos.numpy()[:, root : root + 3], [[3.0, 0.0, 0.7]] * N)
    q = env.ctx.data.qpos.numpy()
    q[:, root] = 0.0
    env.ctx.data.qpos.assign(q)
    for _ in range(5):  # the episode ends at step 5: the curriculum runs again
        env.step(torch.zeros(N, env.action_dim))
    np.testing.assert_array_equal(resets.numpy(), 0.0)
    np.testing.assert_allclose(env.ctx.data.qpos.numpy()[:, root], 3.0)
    with pytest.raises(ValueError, match=r"curricula\.bad: curriculum term not_an_event"):
        TermTask(
            robots.quadruped(),
            TermTaskConfig(curricula={"bad": terms.CurriculumTerm(func=not_an_event)}),
            "t",
        )


def test_the_rough_task_has_the_terrain_levels_curriculum_term():
    from unilab_envs.testing import mjlab_robot

    mjlab_robot("go1")
    rough = make_task("go1-velocity-rough")
    assert [t.label for t in rough.terms._curricula] == ["curricula.terrain_levels"]
    assert rough.terms.functions["curricula.terrain_levels"] == "terrain_levels_vel"
    assert not make_task("go1-velocity-flat").terms._curricula
    fixed = make_task("go1-velocity-rough", curricula={"terrain_levels": None})
    assert not fixed.terms._curricula
    assert fixed.levels is not None  # the levels stay, at their initial rows
    with pytest.raises(KeyError, match="did you mean 'terrain_levels'"):
        make_task("go1-velocity-rough", curricula={"terrain_level": None})


def test_the_mjlab_task_state_keeps_the_names_of_its_checkpoints():
    # a checkpoint from before the command and events were terms still loads: their state
    # keeps its names, shapes and dtypes (`mjlab_velocity.STATE_NAMES`)
    import unilab_envs
    from unilab_envs.testing import mjlab_robot

    mjlab_robot("go1")
    env = unilab_envs.make("go1-velocity-flat", num_envs=2, device="cpu", seed=0)
    env.reset()
    arrays = env.state_dict()["arrays"]
    task = {k: (tuple(v.shape), str(v.dtype)) for k, v in arrays.items() if k.startswith("task.")}
    f32, i32 = "torch.float32", "torch.int32"
    assert task == {
        "task.air_time": ((2, 4), f32),
        "task.command": ((2, 3), f32),
        "task.command_flags": ((2,), i32),
        "task.command_time_left": ((2,), f32),
        "task.contact_time": ((2, 4), f32),
        "task.encoder_bias": ((2, 12), f32),
        "task.env_step": ((1,), i32),
        "task.foot_height": ((2, 4), f32),
        "task.heading_target": ((2,), f32),
        "task.peak_height": ((2, 4), f32),
        "task.push_time_left": ((2,), f32),
    }
