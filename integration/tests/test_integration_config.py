"""Configs: composition per task/algorithm/preset, dotted overrides, JSON round trips."""

from __future__ import annotations

import json
import re

import attrs
import pytest

from unilab_integration import (
    EnvConfig,
    LaunchSettings,
    RunnerConfig,
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
            "runner.logging.run_name=abc",
        ],
    )
    assert out.algo.learning_rate == 3e-4
    assert out.algo.num_epochs == 2
    assert isinstance(out.algo.entropy_coef, float) and out.algo.entropy_coef == 0.0
    assert out.algo.actor.hidden == (32, 16)
    assert out.algo.critic.hidden == (64, 64)
    assert out.algo.use_clipped_value_loss is False
    assert out.env.kwargs == {"max_episode_steps": 200}
    assert out.runner.logging.run_name == "abc"
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
        ("env.scope=sideways", "'env.scope' takes one of 'per-rank', 'global', not 'sideways'"),
        ("runner.iterations=0", "'runner.iterations' takes a positive integer or null, not 0"),
        ("algo.use_clipped_value_loss=3", "takes true or false"),
        ("novalue", "must look like key.path=value"),
        ("algo..x=1", "empty key"),
    ],
)
def test_bad_overrides_are_refused(override, message):
    cfg = make_config("cartpole-balance", "ppo")
    with pytest.raises((ValueError, TypeError), match=message):
        apply_overrides(cfg, [override])


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("env.num_envs=0", "'env.num_envs' takes a positive integer or null, not 0"),
        (
            "runner.checkpoints.keep_every=-1",
            "'runner.checkpoints.keep_every' takes a non-negative integer, not -1",
        ),
        ("runner.eval.envs=0", "'runner.eval.envs' takes a positive integer or null, not 0"),
        ("runner.matmul_precision=low", "'runner.matmul_precision' takes one of 'highest', "),
        ("runner.curriculum_sync=rank1", "takes one of 'local', 'rank0', 'global', not 'rank1'"),
        ("launch.timeout=0", "'launch.timeout' takes a positive number, not 0.0"),
        ("launch.cpu_workers=-2", "'launch.cpu_workers' takes a positive integer or null, not -2"),
        ("algo_name=sac", "'algo_name' takes one of 'ppo', 'distill', 'fastsac', not 'sac'"),
    ],
)
def test_validators_name_the_field_what_it_takes_and_the_value(override, message):
    """One set of validators (`_validators`): the dotted key through an override, in the
    words of the type errors; built directly, the class and field."""
    from unilab_integration._validators import FieldValueError

    cfg = make_config("cartpole-balance", "ppo")
    with pytest.raises(FieldValueError) as info:
        apply_overrides(cfg, [override])
    assert message in str(info.value) and isinstance(info.value, ValueError)
    with pytest.raises(
        ValueError, match=r"^'EnvConfig.num_envs' takes a positive integer or null, not 0$"
    ):
        EnvConfig(task="t", num_envs=0)
    with pytest.raises(ValueError, match=r"'RunnerConfig.seed' takes an integer, not True"):
        RunnerConfig(seed=True)


def test_unknown_algorithm_and_preset():
    with pytest.raises(
        ValueError, match=r"unknown algorithm 'sac'; algorithms: ppo, distill, fastsac"
    ):
        make_config("cartpole-balance", "sac")
    with pytest.raises(
        ValueError, match=r"unknown preset 'fastest'; presets: default, rsl_rl, fast"
    ):
        make_config("cartpole-balance", "ppo", preset="fastest")
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


def test_a_saved_config_is_rebuilt_from_its_data_alone(monkeypatch):
    """No preset or task defaults are consulted: a saved run keeps its values when a default
    changes, and `algo` is built as its algorithm's config class."""
    from unilab_integration import _task_defaults

    cfg = apply_overrides(make_config("cartpole-balance", "fastsac"), ["algo.batch_size=64"])
    data = cfg.to_dict()

    def changed_defaults(_cfg):
        raise AssertionError("from_dict ran the task's defaults")

    monkeypatch.setitem(_task_defaults._REGISTRY, "cartpole-balance", changed_defaults)
    back = TrainConfig.from_dict(data)
    assert back == cfg and type(back.algo).__name__ == "FastSACConfig"
    # a key the data lacks takes its class default, not a preset's or a task's
    del data["runner"]["checkpoints"]["interval"], data["algo"]["actor_hidden"]
    back = TrainConfig.from_dict(data)
    assert back.runner.checkpoints.interval == RunnerConfig().checkpoints.interval == 50
    assert back.algo.actor_hidden == type(cfg.algo)().actor_hidden != cfg.algo.actor_hidden
    # keys of older runs are not read (nothing has been released under them)
    data["algo"]["actor_obs_group"] = "policy"
    with pytest.raises(ValueError, match=r"unknown config key 'algo\.actor_obs_group'"):
        TrainConfig.from_dict(data)
    with pytest.raises(ValueError, match=r"config lacks 'algo'"):
        TrainConfig.from_dict({"algo_name": "ppo", "env": {"task": "x"}})


def test_runner_keys_of_the_flat_form_are_read_in_their_sections_and_refused_on_a_command_line():
    cfg = make_config("cartpole-balance", "ppo")
    data = cfg.to_dict()
    runner = data["runner"]
    for section in ("checkpoints", "eval", "logging"):
        del runner[section]
    runner.update(save_interval=7, keep_checkpoints=0, save_replay=False, eval_interval=3)
    runner.update(run_name="old", loggers=["jsonl"], wandb={"project": "p"}, progress=False)
    back = TrainConfig.from_dict(data).runner
    assert (back.checkpoints.interval, back.checkpoints.keep, back.eval.interval) == (7, 0, 3)
    assert back.logging.run_name == "old" and back.logging.loggers == ("jsonl",)
    assert back.logging.wandb.project == "p" and back.logging.progress is False
    assert back.logging.log_dir == "runs"  # not in the data: the class default
    for old, new in RunnerConfig.MOVED_KEYS.items():
        with pytest.raises(ValueError, match=rf"'runner\.{old}' is now 'runner\.{new}'"):
            apply_overrides(cfg, [f"runner.{old}=1"])


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


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("launch.timeout=abc", "'launch.timeout' takes a number, not 'abc'"),
        ("algo.learning_rate=fast", "'algo.learning_rate' takes a number, not 'fast'"),
        ("algo.num_epochs=2.5", "'algo.num_epochs' takes an integer, not 2.5"),
        ("algo.actor.hidden=5", "'algo.actor.hidden' takes a list of integers, not 5"),
        ('algo.actor.hidden=[64,"x"]', "'algo.actor.hidden' takes a list of integers, not"),
        ("algo.lr_bounds=[1e-5]", "'algo.lr_bounds' takes a list of 2 numbers, not [1e-05]"),
        ("algo.schedule=adapt", "'algo.schedule' takes one of 'fixed', 'adaptive', not 'adapt'"),
        ("algo.max_grad_norm=off", "'algo.max_grad_norm' takes a number or null, not 'off'"),
        ("algo.actor.rnn_type=rnn", "takes one of 'gru', 'lstm' or null, not 'rnn'"),
        ("algo.rnd=5", "'algo.rnd' takes RNDConfig fields"),
        ("runner.imports=my_tasks", "'runner.imports' takes a list of strings, not 'my_tasks'"),
        ("runner.check_finite=yes", "'runner.check_finite' takes true or false, not 'yes'"),
    ],
)
def test_wrong_types_name_the_field_the_type_and_the_value(override, message):
    cfg = make_config("cartpole-balance", "ppo")
    with pytest.raises(TypeError) as info:
        apply_overrides(cfg, [override])
    assert message in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("override", "suggestion"),
    [
        ("algo.learnin_rate=1", "did you mean 'algo.learning_rate'?"),
        ("runner.iteration=3", "did you mean 'runner.iterations'?"),
        ("algo.rnd.wieght=1", "did you mean 'algo.rnd.weight'? RNDConfig has: obs,"),
    ],
)
def test_unknown_key_suggests_the_closest(override, suggestion):
    cfg = make_config("cartpole-balance", "ppo")
    with pytest.raises(ValueError, match=re.escape(suggestion)):
        apply_overrides(cfg, [override])


def test_string_fields_take_the_text_as_typed():
    cfg = apply_overrides(
        make_config("cartpole-balance", "ppo"),
        ["launch.gpus=0,1", "runner.logging.run_name=2024", "runner.teacher=null"],
    )
    assert cfg.launch.gpus == "0,1"  # not the literal tuple (0, 1)
    assert cfg.runner.logging.run_name == "2024" and cfg.runner.teacher is None


def test_none_default_config_field_is_built_from_its_declared_type():
    """`PPOConfig.rnd: RNDConfig | None` (default None) becomes an RNDConfig from an
    override and from the dict a worker reads back from config.json, not a plain dict."""
    from unilab_algos import RNDConfig

    cfg = apply_overrides(
        make_config("cartpole-balance", "ppo"),
        ["algo.rnd.weight=0.5", "algo.rnd.predictor_hidden=[32]", "algo.rnd.learning_rate=1"],
    )
    assert cfg.algo.rnd == RNDConfig(weight=0.5, predictor_hidden=(32,), learning_rate=1.0)
    back = TrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert isinstance(back.algo.rnd, RNDConfig) and back == cfg
    assert apply_overrides(cfg, ["algo.rnd=null"]).algo.rnd is None
    base = make_config("cartpole-balance", "ppo")
    assert apply_overrides(base, ["algo.rnd={}"]).algo.rnd == RNDConfig()
    data = cfg.to_dict()
    data["algo"]["rnd"]["num_outputs"] = "16"
    with pytest.raises(TypeError, match=r"'algo.rnd.num_outputs' takes an integer, not '16'"):
        TrainConfig.from_dict(data)


@pytest.mark.parametrize(
    ("launch", "present", "world"),
    [
        ({"cpu_workers": 3}, 2, (3, "cpu")),
        ({"cpu_workers": 2, "hosts": "a, b"}, 0, (4, "cpu")),
        ({}, 0, (1, "cpu")),
        ({"hosts": "a,b,c"}, 0, (3, "cpu")),
        ({}, 4, (4, "cuda")),
        ({"gpus": "all", "hosts": "a,b"}, 4, (8, "cuda")),
        ({"gpus": " 1 , 0 "}, 2, (2, "cuda")),
        ({"gpus": "3", "hosts": "a,b"}, 0, (2, "cuda")),  # the other hosts' GPUs: not checked
    ],
)
def test_plan_world_reads_launch_settings_with_the_launchers_parsers(
    monkeypatch, launch, present, world
):
    from unilab_integration import _train

    monkeypatch.setattr(_train, "_visible_gpus", lambda: present)
    cfg = attrs.evolve(make_config("cartpole-balance", "ppo"), launch=LaunchSettings(**launch))
    assert _train.plan_world(cfg) == world


@pytest.mark.parametrize(
    ("launch", "message"),
    [
        ({"gpus": "0,x"}, "--gpus: malformed GPU list '0,x': use 'all' or indices like '0,1'"),
        ({"gpus": "0,"}, "--gpus: malformed GPU list '0,': use 'all' or indices like '0,1'"),
        ({"gpus": "1,1"}, "--gpus: GPU indices must be distinct, got [1, 1]"),
        ({"gpus": "-1"}, "--gpus: GPU indices must be >= 0, got [-1]"),
        ({"gpus": "0,2"}, "--gpus 0,2 asks for GPU 2 but only 2 GPU(s) are visible"),
        ({"gpus": "all", "hosts": "a"}, "--gpus all: no CUDA GPU is visible"),
        ({"hosts": "a,,b"}, "--hosts: malformed host list: empty host name in 'a,,b'"),
        ({"hosts": "a,a", "cpu_workers": 1}, "--hosts: malformed host list: ['a'] appear more"),
        ({"hosts": "a b"}, "--hosts: malformed host list: 'a b' in 'a b' is not a host name"),
    ],
)
def test_plan_world_refuses_what_the_launcher_would(monkeypatch, launch, message):
    from unilab_integration import _train

    monkeypatch.setattr(_train, "_visible_gpus", lambda: 2 if "hosts" not in launch else 0)
    cfg = attrs.evolve(make_config("cartpole-balance", "ppo"), launch=LaunchSettings(**launch))
    with pytest.raises(ValueError) as info:
        _train.plan_world(cfg)
    assert message in str(info.value)


@pytest.mark.parametrize("gpus", ["0", "all"])
def test_gpus_on_a_machine_without_one_suggest_cpu_workers(monkeypatch, gpus):
    from unilab_integration import _train

    monkeypatch.setattr(_train, "_visible_gpus", lambda: 0)
    cfg = attrs.evolve(make_config("cartpole-balance", "ppo"), launch=LaunchSettings(gpus=gpus))
    with pytest.raises(ValueError, match=r"; to train on the CPU, use --cpu-workers N instead$"):
        _train.plan_world(cfg)


def test_plan_world_counts_the_slurm_allocations_nodes(monkeypatch, tmp_path):
    from unilab_integration import _train
    from unilab_launch.testing import fake_slurm_env

    for name, value in fake_slurm_env(tmp_path, ["n1", "n2", "n3"]).items():
        monkeypatch.setenv(name, value)
    cfg = apply_overrides(make_config("cartpole-balance", "ppo"), ["launch.cpu_workers=2"])
    cfg = apply_overrides(cfg, ["launch.hosts=slurm"])
    assert _train.plan_world(cfg) == (6, "cpu")
    assert _train.with_slurm_hosts(cfg).launch.hosts == "n1,n2,n3"
