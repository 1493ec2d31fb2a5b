"""A task's terms changed from the command line (`--set env.rewards...`): the overrides as
plain data in the config, the launcher's refusals, and a run with a term of the user's."""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

import pytest

from unilab_integration import EnvConfig, TrainConfig
from unilab_integration._envs import check_env_options, check_term_imports
from unilab_integration._overrides import apply_overrides
from unilab_integration._task_defaults import make_config

HERE = Path(__file__).parent
MODULE = "_unilab_user_terms"
SETS = [
    "env.rewards.upright.weight=2.0",
    "env.rewards.foot_slip=null",
    "env.rewards.upright.params.std=0.3",
    f"env.rewards.lin_vel_z.func={MODULE}:lin_vel_z_l2",
    "env.rewards.lin_vel_z.weight=-2.0",
    f"env.observations.critic.base_height.func={MODULE}:base_height",
    "env.terminations.fell_over.params.limit_angle=1.2",
]


def test_term_overrides_are_plain_data_in_env_kwargs():
    cfg = apply_overrides(make_config("go1-velocity-flat", "ppo"), SETS)
    assert cfg.env.kwargs["rewards"] == {
        "upright": {"weight": 2.0, "params": {"std": 0.3}},
        "foot_slip": None,
        "lin_vel_z": {"func": f"{MODULE}:lin_vel_z_l2", "weight": -2.0},
    }
    assert cfg.env.kwargs["observations"] == {
        "critic": {"base_height": {"func": f"{MODULE}:base_height"}}
    }
    assert cfg.env.kwargs["terminations"] == {"fell_over": {"params": {"limit_angle": 1.2}}}
    assert TrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    # a later override changes what it names and keeps the rest (as a resume's --set does)
    again = apply_overrides(cfg, ["env.rewards.upright.params.std=0.5", "env.rewards.x=null"])
    rewards = again.env.kwargs["rewards"]
    assert rewards["upright"] == {"weight": 2.0, "params": {"std": 0.5}}
    assert rewards["lin_vel_z"]["weight"] == -2.0 and rewards["x"] is None
    same = apply_overrides(cfg, ["env.kwargs.rewards.upright.weight=2.0"])
    assert same == cfg  # env.rewards is env.kwargs.rewards


def test_command_and_event_overrides_are_plain_data_and_reach_the_task():
    from unilab_envs.testing import mjlab_robot

    mjlab_robot("go1")
    sets = [
        "env.commands.twist.resampling_time_range=[3,8]",
        "env.events.push_robot.interval_range_s=[1,2]",
        "env.events.base_com=null",
    ]
    cfg = apply_overrides(make_config("go1-velocity-flat", "ppo"), sets)
    assert cfg.env.kwargs["commands"] == {"twist": {"resampling_time_range": [3, 8]}}
    assert cfg.env.kwargs["events"] == {
        "push_robot": {"interval_range_s": [1, 2]},
        "base_com": None,
    }
    assert TrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    check_env_options("go1-velocity-flat", cfg.env.kwargs, ())


def test_a_config_holds_term_overrides_only_as_plain_data():
    from unilab_envs import mdp, terms

    term = terms.RewardTerm(func=mdp.is_alive, weight=1.0)
    with pytest.raises(ValueError, match=r"env\.rewards\.alive: .* plain data .*'module:attr'"):
        EnvConfig(task="go1-velocity-flat", kwargs={"rewards": {"alive": term}})
    EnvConfig(task="go1-velocity-flat", kwargs={"rewards": {"alive": {"func": "is_alive"}}})


def test_a_term_function_needs_its_module_named_by_the_command():
    kwargs = apply_overrides(make_config("go1-velocity-flat", "ppo"), SETS).env.kwargs
    with pytest.raises(
        ValueError,
        match=r"env\.rewards\.lin_vel_z\.func is '_unilab_user_terms:lin_vel_z_l2', from a "
        r"module this command does not import; .* add --import _unilab_user_terms",
    ):
        check_term_imports(kwargs, ())
    check_term_imports(kwargs, (MODULE,))
    library = {"observations": {"policy": {"x": {"func": "unilab_envs.mdp:base_lin_vel"}}}}
    check_term_imports(library, ())


@pytest.fixture
def user_terms(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    )
    yield
    sys.modules.pop(MODULE, None)


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            "env.rewards.upright.weight=high",
            "env.rewards.upright.weight takes a number, not 'high'",
        ),
        ("env.rewards.foot_slp=null", "did you mean 'foot_slip'"),
        ("env.rewards.upright.wieght=1", "did you mean 'weight'"),
        ("env.observations.critics.x.scale=2", "did you mean 'critic'"),
        ("env.rewards.upright.params.std=[1,2]", "env.rewards.upright.params.std takes a number"),
        (f"env.rewards.x.func={MODULE}:tilted", "env.rewards.x: a new reward term needs a weight"),
        (
            f'env.rewards.x={{"func": "{MODULE}:tilted", "weight": 1}}',
            r"env.rewards.x: reward term tilted has the signature \(int, EnvState\) -> vec3f",
        ),
        ("env.events.push_robt=null", "did you mean 'push_robot'"),
        ("env.curricula.terrain_levels=null", r"term to remove \(curricula\) 'terrain_levels'"),
        ("env.commands.twist.resampling_time_range=[8,3]", r"takes \[low, high\] \(s\)"),
        (
            f'env.events.x={{"func": "{MODULE}:tilted", "mode": "reset"}}',
            r"env.events.x: event term tilted has the signature \(int, EnvState\) -> vec3f",
        ),
    ],
)
def test_the_launcher_refuses_bad_term_overrides(user_terms, item, message):
    from unilab_envs.testing import mjlab_robot

    mjlab_robot("go1")
    importlib.import_module(MODULE)  # as the launcher imports runner.imports
    kwargs = apply_overrides(make_config("go1-velocity-flat", "ppo"), [item]).env.kwargs
    with pytest.raises(ValueError, match=message) as info:
        check_env_options("go1-velocity-flat", kwargs, (MODULE,))
    assert "task 'go1-velocity-flat'" in str(info.value)


def test_tasks_not_composed_of_terms_refuse_term_overrides_in_the_launcher(capsys, tmp_path):
    from unilab_integration.cli import main

    argv = ["train", "cartpole-balance", "--cpu-workers", "1", "--iterations", "1"]
    argv += ["--set", "env.rewards.alive.weight=2", "--log-dir", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "'cartpole-balance' is not composed of terms" in err and "go1-velocity-flat" in err
    assert list(tmp_path.iterdir()) == []


def test_a_run_with_a_term_of_the_user_trains_resumes_and_plays(user_terms, tmp_path, capsys):
    """`unilab train go1-velocity-flat` with a reward and an observation term from the user's
    module (--import): the term is logged; a resume refuses without --import, works with it."""
    from unilab_envs.testing import mjlab_robot
    from unilab_integration.cli import main

    mjlab_robot("go1")
    argv = ["train", "go1-velocity-flat", "--cpu-workers", "1", "--iterations", "1"]
    argv += ["--num-envs", "4", "--env-scope", "per-rank", "--run-name", "terms"]
    argv += ["--set", "runner.num_steps_per_env=4", "--set", 'runner.logging.loggers=["jsonl"]']
    argv += ["--set", "runner.logging.progress=false", "--set", "runner.random_episode_start=false"]
    sets = [x for item in SETS for x in ("--set", item)]
    assert main([*argv, *sets, "--log-dir", str(tmp_path)]) == 2  # no --import
    assert "add --import _unilab_user_terms" in capsys.readouterr().err
    assert main([*argv, *sets, "--import", MODULE, "--log-dir", str(tmp_path)]) == 0
    run = tmp_path / "terms"
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert "episode_term/lin_vel_z" in rows[-1] and "episode_term/upright" in rows[-1]
    assert "episode_term/foot_slip" not in rows[-1]

    resume = ["train", "go1-velocity-flat", "--resume", str(run), "--iterations", "2"]
    assert main(resume) == 2
    assert "--import _unilab_user_terms" in capsys.readouterr().err
    assert main([*resume, "--import", MODULE]) == 0
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [1, 2] and "episode_term/lin_vel_z" in rows[-1]
    play = ["play", str(run), "--steps", "3", "--num-envs", "2"]
    assert main(play) == 2
    assert "--import _unilab_user_terms" in capsys.readouterr().err
    assert main([*play, "--import", MODULE]) == 0


def test_quadruped_velocity_takes_term_overrides_in_the_launcher():
    sets = ["env.rewards.torques.weight=-0.001", "env.rewards.feet_air_time=null"]
    kwargs = apply_overrides(make_config("quadruped-velocity", "ppo"), sets).env.kwargs
    assert kwargs["rewards"] == {"torques": {"weight": -0.001}, "feet_air_time": None}
    check_env_options("quadruped-velocity", kwargs)
    kwargs = apply_overrides(
        make_config("quadruped-velocity", "ppo"), ["env.rewards.torqes.weight=-0.001"]
    ).env.kwargs
    with pytest.raises(ValueError, match="did you mean 'torques'") as info:
        check_env_options("quadruped-velocity", kwargs)
    assert "task 'quadruped-velocity'" in str(info.value)
    sets = [
        "env.events.reset_joints.params.position_range=[-0.2,0.2]",
        "env.commands.twist.resampling_time_range=[5.0,5.0]",
    ]
    kwargs = apply_overrides(make_config("quadruped-velocity", "ppo"), sets).env.kwargs
    check_env_options("quadruped-velocity", kwargs)
    kwargs = apply_overrides(
        make_config("quadruped-velocity", "ppo"), ["env.events.reset_joint=null"]
    ).env.kwargs
    with pytest.raises(ValueError, match="did you mean 'reset_joints'"):
        check_env_options("quadruped-velocity", kwargs)
