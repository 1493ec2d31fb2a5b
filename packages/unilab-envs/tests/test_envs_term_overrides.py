"""A task's terms changed by plain data (`unilab_envs.terms.overrides`): what a config file or
`unilab train --set env.rewards...` gives `unilab_envs.make`."""

from __future__ import annotations

import pytest
import torch
import warp as wp

import unilab_envs
from unilab_envs import EnvConfig, VecEnv, make_task, mdp, terms
from unilab_envs.tasks import robots
from unilab_envs.tasks.term_task import TermTask, TermTaskConfig, with_overrides
from unilab_envs.terms import EnvState
from unilab_envs.terms.overrides import merge_terms

HERE = __name__  # this module, as "module:attr" names it
N = 3


@terms.term(size=1)
@wp.func
def base_height(w: int, k: int, s: EnvState) -> float:
    return s.xpos[w, s.root_body][2]


@wp.func
def tilted(w: int, s: EnvState) -> wp.vec3:
    return wp.vec3(0.0)


def _quadruped() -> TermTaskConfig:
    policy = {"projected_gravity": terms.ObservationTerm(func=mdp.projected_gravity)}
    return TermTaskConfig(
        episode_length_s=0.2,
        observations={"policy": terms.ObservationGroup(terms=policy)},
        rewards={"alive": terms.RewardTerm(func=mdp.is_alive, weight=1.0)},
        terminations={"time_out": terms.TerminationTerm(func=mdp.time_out, time_out=True)},
    )


def test_plain_overrides_change_the_compiled_step():
    config = with_overrides(
        _quadruped(),
        {
            "rewards": {
                "alive": {"weight": 3.0},
                "lin_vel_z": {"func": "lin_vel_z_l2", "weight": -2.0},  # a library term
            },
            "observations.policy.height": {"func": f"{HERE}:base_height", "scale": 2.0},
        },
    )
    env = VecEnv(TermTask(robots.quadruped(), config, "t"), EnvConfig(num_envs=2, device="cpu"))
    assert env.task.spec.log_terms == ("alive", "lin_vel_z")
    assert env.task.spec.observation_dims == {"policy": 4}
    env.reset()
    td = env.step(torch.zeros(2, env.action_dim))
    torch.testing.assert_close(td["log", "alive"], torch.full((2,), 3.0 * env.step_dt))
    height = env.ctx.data.xpos.numpy()[:, env.task.env_state.root_body, 2]
    torch.testing.assert_close(td["obs", "policy"][:, 3], 2.0 * torch.as_tensor(height))


def test_the_mjlab_tasks_take_plain_overrides():
    from unilab_envs.testing import mjlab_robot

    mjlab_robot("go1")
    own = make_task("go1-velocity-flat")
    task = make_task(
        "go1-velocity-flat",
        rewards={
            "upright": {"weight": 2.0, "params": {"std": 0.3}},
            "foot_slip": None,
            "lin_vel_z": {"func": "unilab_envs.mdp:lin_vel_z_l2", "weight": -2.0},
        },
        observations={"critic": {"base_height": {"func": f"{HERE}:base_height"}}},
        terminations={"fell_over": {"params": {"limit_angle": 1.0}}},
    )
    logged = [t for t in own.spec.log_terms if t != "foot_slip"]
    assert task.spec.log_terms == (*logged, "lin_vel_z")
    weights = dict(zip(task.terms.log_terms, task.terms._weights, strict=True))
    assert weights["upright"] == 2.0 and weights["lin_vel_z"] == -2.0
    upright = next(t for t in task.terms._rewards if t.label == "rewards.upright")
    assert upright.params["std"] == 0.3
    fell = next(t for t, _ in task.terms._terminations if t.label == "terminations.fell_over")
    assert fell.params["limit_angle"] == 1.0
    dims = own.spec.observation_dims
    assert task.spec.observation_dims == {"policy": dims["policy"], "critic": dims["critic"] + 1}
    # a changed weight or parameter compiles nothing new; a removed term does
    plain = make_task("go1-velocity-flat", rewards={"upright": {"weight": 5.0}})
    assert plain.terms._evaluate is own.terms._evaluate
    assert task.terms._evaluate is not own.terms._evaluate


@pytest.mark.parametrize(
    ("rewards", "error", "message"),
    [
        ({"foot_slp": None}, KeyError, "did you mean 'foot_slip'"),
        ({"uprigth": {"weight": 1.0}}, KeyError, "did you mean 'upright'.*give its func"),
        ({"upright": {"wieght": 1.0}}, KeyError, "field of rewards.upright.*'weight'"),
        ({"upright": {"weight": "high"}}, TypeError, "rewards.upright.weight takes a number"),
        ({"upright": {"weight": True}}, TypeError, "rewards.upright.weight takes a number"),
        ({"upright": {"params": {"std": "wide"}}}, TypeError, r"upright\.params\.std takes a num"),
        ({"upright": {"params": {"sdt": 1.0}}}, ValueError, r"has no parameters \['sdt'\]"),
        ({"x": {"func": "lin_vel_z_l3", "weight": 1}}, KeyError, "did you mean 'lin_vel_z_l2'"),
        ({"x": {"func": "lin_vel_z_l2"}}, TypeError, "rewards.x: a new reward term needs a weight"),
        ({"x": {"func": f"{HERE}:tilted", "weight": 1}}, ValueError, "rewards.x: reward term"),
        ({"x": {"func": f"{HERE}:tilt", "weight": 1}}, KeyError, "did you mean 'tilted'"),
        ({"x": {"func": "my_terms:f", "weight": 1}}, ValueError, "not imported.*--import my_terms"),
        ({"upright": 2.0}, TypeError, "rewards.upright takes a RewardTerm, a mapping"),
    ],
)
def test_bad_overrides_are_refused_naming_the_path(rewards, error, message):
    from unilab_envs.testing import mjlab_robot

    mjlab_robot("go1")
    with pytest.raises(error, match=message):
        make_task("go1-velocity-flat", rewards=rewards)


def test_bad_observation_overrides_are_refused():
    from unilab_envs.testing import mjlab_robot

    mjlab_robot("go1")
    with pytest.raises(KeyError, match="did you mean 'critic'"):
        make_task("go1-velocity-flat", observations={"critics": {"command": None}})
    with pytest.raises(TypeError, match=r"observations\.policy\.command\.clip takes \[low, high\]"):
        make_task("go1-velocity-flat", observations={"policy": {"command": {"clip": 1.0}}})
    noise = {"n_min": -0.2, "n_max": 0.2}
    task = make_task("go1-velocity-flat", observations={"policy": {"command": {"noise": noise}}})
    command = task.config.observations  # the plain data stays as given
    assert command == {"policy": {"command": {"noise": noise}}}


def test_selectors_keep_their_kind_and_plain_forms_name_one():
    params = {"std": 0.5, "body": terms.Bodies("trunk")}
    rewards = {"up": terms.RewardTerm(func=mdp.upright, weight=1.0, params=params)}
    out = merge_terms("rewards", rewards, {"up": {"params": {"body": "torso"}}})
    assert out["up"].params["body"] == terms.Bodies("torso")
    out = merge_terms("rewards", rewards, {"up": {"params": {"body": {"sites": "imu"}}}})
    assert out["up"].params["body"] == terms.Sites("imu")
    out = merge_terms("rewards", rewards, {"up": {"params": {"std": None}}})
    assert "std" not in out["up"].params  # removed: the term's default applies again


def test_tasks_not_composed_of_terms_refuse_term_overrides():
    with pytest.raises(
        ValueError, match=r"'cartpole-balance' is not composed of terms.*quadruped-velocity"
    ):
        make_task("cartpole-balance", observations={})


def test_quadruped_velocity_takes_term_overrides():
    # one weight changed, one term removed, one added from the library: the same step
    # otherwise (the same seed and actions)
    rewards = {"torques": {"weight": -1e-3}, "feet_air_time": None}
    rewards["alive"] = {"func": "is_alive", "weight": 0.5}
    envs = [
        unilab_envs.make("quadruped-velocity", num_envs=N, device="cpu", seed=4, **kw)
        for kw in ({}, {"rewards": rewards})
    ]
    default, changed = (env.task.spec.log_terms for env in envs)
    assert changed == (*(t for t in default if t != "feet_air_time"), "alive")
    for env in envs:
        env.reset()
    gen = torch.Generator().manual_seed(0)
    for _ in range(3):
        action = torch.rand(N, envs[0].action_dim, generator=gen) * 2 - 1
        before, after = (env.step(action) for env in envs)
    dt = envs[0].step_dt
    torch.testing.assert_close(after["log", "torques"], before["log", "torques"] * 5.0)
    torch.testing.assert_close(after["log", "alive"], torch.full((N,), 0.5 * dt))
    torch.testing.assert_close(after["obs", "critic"], before["obs", "critic"])
    expected = before["reward"] - before["log", "feet_air_time"]
    expected = expected + 4.0 * before["log", "torques"] + 0.5 * dt
    torch.testing.assert_close(after["reward"], expected)
    with pytest.raises(KeyError, match="did you mean 'torques'"):
        make_task("quadruped-velocity", rewards={"torque": {"weight": 1.0}})
