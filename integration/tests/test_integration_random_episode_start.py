"""`runner.random_episode_start` (RSL-RL's `init_at_random_ep_len`, on in the MJLab tasks'
defaults): a new run starts every world at a random step of its first episode; a resume that
restores the env keeps the saved counters; an env that cannot do it is refused by name. In one
process on CPU (cart-poles)."""

from __future__ import annotations

import attrs
import pytest
import torch

import unilab_integration._runners._base as base
from unilab_dist import DistContext
from unilab_integration import apply_overrides, make_config
from unilab_integration._runners import OnPolicyRunner

TINY = [
    "env.num_envs=64",
    "env.kwargs.max_episode_steps=40",
    "runner.num_steps_per_env=8",
    'runner.logging.loggers=["console","jsonl"]',
    "runner.logging.progress=false",
]


def _runner(run_dir, *more):
    cfg = apply_overrides(make_config("cartpole-balance", "ppo"), [*TINY, *more])
    return OnPolicyRunner(cfg, DistContext(), run_dir)


def test_a_new_run_starts_its_worlds_at_random_steps(tmp_path):
    plain = _runner(tmp_path / "plain")
    assert not bool(plain.env.episode_length.any())  # off by default for cart-pole
    spread = _runner(tmp_path / "spread", "runner.random_episode_start=true")
    start = spread.env.episode_length.clone()
    assert int(start.min()) >= 0 and int(start.max()) < 40
    assert len(set(start.tolist())) > 20  # 64 draws over 40 steps


def test_a_resume_keeps_the_saved_counters(tmp_path, capsys):
    said = "worlds start at random steps of their first episode"
    first = _runner(tmp_path / "a", "runner.random_episode_start=true", "runner.iterations=2")
    first.run()
    assert said in capsys.readouterr().out  # the run's first line says so
    saved = first.env.episode_length.clone()
    (tmp_path / "b").mkdir()
    more = ["runner.random_episode_start=true", "runner.seed=9", "runner.iterations=3"]
    again = _runner(tmp_path / "b", *more)
    redrawn = again.env.episode_length.clone()
    again.load(first.last_checkpoint)
    assert torch.equal(again.env.episode_length, saved)
    assert not torch.equal(redrawn, saved)
    again.run()
    out = capsys.readouterr().out
    assert "resumed" in out and said not in out


class _WithoutStart:
    """A VecEnv-like wrapper without `randomize_episode_lengths` (its features say so)."""

    def __init__(self, env):
        self._env = env
        self.features = attrs.evolve(env.features, random_episode_start=False)

    def __getattr__(self, name):
        if name == "randomize_episode_lengths":
            raise AttributeError(name)
        return getattr(self._env, name)


def test_an_env_without_it_is_refused_naming_the_option(tmp_path, monkeypatch):
    real = base.make_env
    monkeypatch.setattr(base, "make_env", lambda *a, **k: _WithoutStart(real(*a, **k)))
    with pytest.raises(ValueError, match=r"runner.random_episode_start=false"):
        _runner(tmp_path, "runner.random_episode_start=true")
