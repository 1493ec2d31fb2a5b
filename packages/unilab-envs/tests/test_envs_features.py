"""`VecEnv.features`: the optional features an env states (docs/envs.md, "Optional features")."""

from __future__ import annotations

import math

import attrs
import pytest

import unilab_envs
from unilab_envs import Curriculum, EnvFeatures, LevelCurriculum


def test_vec_env_of_cartpole_reports_its_features():
    plain = unilab_envs.make("cartpole-balance", num_envs=2, device="cpu", seed=0).features
    assert plain == EnvFeatures(
        state=True,
        random_episode_start=True,
        cuda_graph=False,
        eager_reason="CUDA graphs need a CUDA device, got cpu",
        success_threshold=450.0,
        action_bound=1.0,
    )
    env = unilab_envs.make("cartpole-balance", num_envs=2, device="cpu", curriculum=True)
    features = env.features
    assert features.curriculum is env.curriculum and features.curriculum_mode == "scalar"
    assert attrs.evolve(features, curriculum=None, curriculum_mode=None) == plain


def test_vec_env_of_a_velocity_task_reports_its_features():
    env = unilab_envs.make("quadruped-velocity", num_envs=2, device="cpu", seed=1)
    features = env.features
    assert isinstance(features.curriculum, LevelCurriculum)
    assert features.curriculum is env.curriculum and features.curriculum_mode == "scalar"
    assert features.state and features.random_episode_start
    assert not features.cuda_graph
    assert features.success_threshold == env.task.spec.success_threshold > 0
    assert features.action_bound == 1.0
    off = unilab_envs.make("quadruped-velocity", num_envs=2, device="cpu", curriculum=False)
    assert off.features.curriculum is None and off.features.curriculum_mode is None


def test_what_an_env_that_reports_nothing_gets():
    nothing = EnvFeatures()
    assert nothing.curriculum is None and nothing.curriculum_mode is None
    assert not (nothing.state or nothing.random_episode_start)
    assert not nothing.cuda_graph and nothing.success_threshold is None
    assert nothing.action_bound == 1.0


class _Steps(Curriculum):
    level = 0.0

    def update(self, metrics):
        return False

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass


class _PerWorld(_Steps):
    per_world = True


def test_the_curriculum_mode_comes_from_the_class_and_must_agree_with_the_curriculum():
    assert Curriculum.per_world is False
    assert EnvFeatures.of_curriculum(_Steps()).curriculum_mode == "scalar"
    assert EnvFeatures.of_curriculum(_PerWorld(), state=True).curriculum_mode == "per_world"
    assert EnvFeatures.of_curriculum(None, success_threshold=math.inf) == EnvFeatures(
        success_threshold=math.inf
    )
    with pytest.raises(ValueError, match="give both"):
        EnvFeatures(curriculum=_Steps())
    with pytest.raises(ValueError, match="give both"):
        EnvFeatures(curriculum_mode="scalar")
    with pytest.raises(ValueError, match="one of"):
        EnvFeatures(curriculum=_Steps(), curriculum_mode="global")
