"""Task defaults: every built-in task x algorithm x preset composes exactly the recorded config.

`data/task_configs.json` holds `make_config(task, algo, preset=preset).to_dict()` of every
combination, recorded from the dotted-string table that the typed per-task functions replaced.
A deliberate change of a default (here or in an algorithm's config) rewrites it:

    python integration/tests/test_integration_task_defaults.py --write
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import attrs
import pytest

from unilab_integration import EnvConfig, TrainConfig, make_config, register_task_defaults
from unilab_integration._algorithms import ALGORITHMS
from unilab_integration._envs import BUILTIN_TASK_NAMES
from unilab_integration._task_defaults import task_defaults

RECORD = Path(__file__).parent / "data" / "task_configs.json"
COMBINATIONS = [
    (task, algo, preset)
    for task in BUILTIN_TASK_NAMES
    for algo, spec in ALGORITHMS.items()
    for preset in spec.presets
]


def _flat(data: object, prefix: str = "") -> dict[str, str]:
    """Dotted keys -> JSON text of each leaf (so 1 and 1.0 differ)."""
    if isinstance(data, dict):
        out: dict[str, str] = {}
        for k, v in data.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else k))
        return out
    return {prefix: json.dumps(data)}


def _record() -> dict[str, dict]:
    return {f"{t}/{a}/{p}": make_config(t, a, preset=p).to_dict() for t, a, p in COMBINATIONS}


def test_every_combination_is_recorded():
    assert sorted(json.loads(RECORD.read_text())) == sorted(
        f"{t}/{a}/{p}" for t, a, p in COMBINATIONS
    )


@pytest.mark.parametrize(("task", "algo", "preset"), COMBINATIONS)
def test_task_defaults_compose_the_recorded_config(task, algo, preset):
    expected = json.loads(RECORD.read_text())[f"{task}/{algo}/{preset}"]
    cfg = make_config(task, algo, preset=preset)
    want, got = _flat(expected), _flat(cfg.to_dict())
    diff = {
        k: (want.get(k), got.get(k)) for k in want.keys() | got.keys() if want.get(k) != got.get(k)
    }
    assert diff == {}  # key: (recorded, now), JSON texts: a type change shows (1 vs 1.0)
    # the same values as the declared types hold them (a list where a tuple belongs differs)
    assert TrainConfig.from_dict(expected) == cfg


def test_every_builtin_task_has_defaults():
    assert all(task_defaults(t) is not None for t in BUILTIN_TASK_NAMES)


def test_a_task_without_defaults_has_no_env_count():
    cfg = make_config("no-defaults-task", "ppo")
    assert cfg.env.num_envs is None and cfg.env.scope == "per-rank"
    with pytest.raises(ValueError, match=r"task 'no-defaults-task' has no default env count: "):
        cfg.env.per_rank(1)
    assert EnvConfig(task="t").num_envs is None


@pytest.fixture
def registry(monkeypatch):
    from unilab_integration import _task_defaults

    monkeypatch.setattr(_task_defaults, "_REGISTRY", dict(_task_defaults._REGISTRY))


def test_registered_defaults_are_layered_over_the_preset(registry):
    def mine(cfg):
        return attrs.evolve(
            cfg,
            env=attrs.evolve(cfg.env, num_envs=128),
            algo=attrs.evolve(cfg.algo, learning_rate=5e-4),
        )

    assert register_task_defaults("mine", mine) is mine
    cfg = make_config("mine", "ppo", preset="rsl_rl")
    assert cfg.env.num_envs == 128 and cfg.algo.learning_rate == 5e-4
    assert cfg.algo.obs_norm_scope == "local" and cfg.runner.curriculum_sync == "local"
    assert register_task_defaults("mine", mine) is mine  # the same function again: no-op
    with pytest.raises(ValueError, match=r"task 'mine' already has defaults .*overwrite=True"):
        register_task_defaults("mine", lambda cfg: cfg)
    with pytest.raises(ValueError, match=r"task 'cartpole-balance' already has defaults"):
        register_task_defaults("cartpole-balance", mine)
    register_task_defaults("mine", lambda cfg: cfg, overwrite=True)
    assert make_config("mine", "ppo").env.num_envs is None


def test_a_misspelled_or_wrong_default_is_an_error(registry):
    register_task_defaults(
        "typo", lambda c: attrs.evolve(c, runner=attrs.evolve(c.runner, iteration=3))
    )
    with pytest.raises(TypeError, match="iteration"):
        make_config("typo", "ppo")
    register_task_defaults("zero", lambda c: attrs.evolve(c, env=attrs.evolve(c.env, num_envs=0)))
    with pytest.raises(
        ValueError, match=r"'EnvConfig.num_envs' takes a positive integer or null, not 0"
    ):
        make_config("zero", "ppo")
    register_task_defaults("none", lambda c: None)
    with pytest.raises(TypeError, match=r"the defaults of task 'none' .* not NoneType"):
        make_config("none", "ppo")
    register_task_defaults("other", lambda c: make_config("cartpole-balance", c.algo_name))
    with pytest.raises(TypeError, match=r"same task, algorithm and preset"):
        make_config("other", "ppo")


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    RECORD.write_text(json.dumps(_record(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {RECORD}: {len(COMBINATIONS)} configs")
