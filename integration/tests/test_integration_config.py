"""Configs: composition per task/algorithm/preset, dotted overrides, JSON round trips."""

from __future__ import annotations

import json

import pytest

from unilab_integration import (
    EnvConfig,
    TrainConfig,
    apply_overrides,
    load_config,
    make_config,
    save_config,
)
from unilab_integration._overrides import parse_value


def test_cartpole_ppo_defaults_and_rsl_rl_preset():
    cfg = make_config("cartpole-balance", "ppo")
    assert cfg.env.num_envs == 64
    assert cfg.runner.num_steps_per_env == 32
    assert cfg.algo.actor.hidden == (64, 64)
    assert cfg.algo.obs_norm_scope == "global"
    assert cfg.runner.curriculum_sync == "global"
    rsl = make_config("cartpole-balance", "ppo", preset="rsl_rl")
    assert rsl.algo.obs_norm_scope == "local"
    assert rsl.algo.advantage_norm_scope == "local"
    assert rsl.algo.shuffle == "per_iteration"
    assert rsl.runner.curriculum_sync == "local"
    assert rsl.algo.actor.hidden == (64, 64)  # the task default still applies


def test_overrides_coerce_types():
    cfg = make_config("cartpole-balance", "ppo")
    out = apply_overrides(
        cfg,
        [
            "algo.learning_rate=3e-4",
            "algo.num_epochs=2",
            "algo.entropy_coef=0",
            "algo.actor.hidden=[32,16]",
            "algo.use_clipped_value_loss=false",
            "env.kwargs.max_episode_steps=200",
            "runner.run_name=abc",
        ],
    )
    assert out.algo.learning_rate == 3e-4
    assert out.algo.num_epochs == 2
    assert isinstance(out.algo.entropy_coef, float) and out.algo.entropy_coef == 0.0
    assert out.algo.actor.hidden == (32, 16)
    assert out.algo.critic.hidden == (64, 64)
    assert out.algo.use_clipped_value_loss is False
    assert out.env.kwargs == {"max_episode_steps": 200}
    assert out.runner.run_name == "abc"
    assert cfg.algo.learning_rate == 1e-3  # frozen: the original is untouched


def test_parse_value():
    assert parse_value("3e-4") == 3e-4
    assert parse_value("true") is True and parse_value("False") is False
    assert parse_value("null") is None and parse_value("None") is None
    assert parse_value("[1, 2]") == [1, 2]
    assert parse_value("elu") == "elu"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("algo.learnin_rate=1", "unknown config key 'algo.learnin_rate'"),
        ("env.scope=sideways", "invalid value in 'env'"),
        ("runner.iterations=0", "iterations must be a positive integer"),
        ("algo.use_clipped_value_loss=3", "takes true or false"),
        ("novalue", "must look like key.path=value"),
        ("algo..x=1", "empty key"),
    ],
)
def test_bad_overrides_are_refused(override, message):
    cfg = make_config("cartpole-balance", "ppo")
    with pytest.raises((ValueError, TypeError), match=message):
        apply_overrides(cfg, [override])


def test_unknown_algorithm_and_preset():
    with pytest.raises(
        ValueError, match=r"unknown algorithm 'sac'; algorithms: ppo, distill, fastsac"
    ):
        make_config("cartpole-balance", "sac")
    with pytest.raises(ValueError, match=r"unknown preset 'fast'"):
        make_config("cartpole-balance", "ppo", preset="fast")
    with pytest.raises(ValueError, match=r"preset 'rsl_rl' is not available for --algo fastsac"):
        make_config("cartpole-balance", "fastsac", preset="rsl_rl")


def test_round_trip_through_json(tmp_path):
    cfg = apply_overrides(
        make_config("cartpole-balance", "ppo", preset="rsl_rl"),
        ["algo.actor.hidden=[8,8]", "env.scope=global", "env.num_envs=6", "launch.cpu_workers=3"],
    )
    save_config(cfg, tmp_path / "config.json")
    data = json.loads((tmp_path / "config.json").read_text())
    assert data["algo"]["actor"]["hidden"] == [8, 8]
    assert data["preset"] == "rsl_rl"
    back = load_config(tmp_path / "config.json")
    assert back == cfg
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg


def test_env_scope_split():
    per_rank = EnvConfig(task="t", num_envs=10)
    assert per_rank.per_rank(3) == 10 and per_rank.total(3) == 30
    glob = EnvConfig(task="t", num_envs=12, scope="global")
    assert glob.per_rank(3) == 4 and glob.total(3) == 12
    with pytest.raises(ValueError, match=r"env.num_envs=10 with env.scope=global does not divide"):
        EnvConfig(task="t", num_envs=10, scope="global").per_rank(3)


def test_launch_settings_refuse_gpus_and_cpu_workers():
    cfg = make_config("cartpole-balance", "ppo")
    with pytest.raises(ValueError, match=r"either launch.gpus or launch.cpu_workers"):
        apply_overrides(cfg, ["launch.gpus=0", "launch.cpu_workers=2"])
