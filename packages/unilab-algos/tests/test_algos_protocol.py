"""The learner contract (`unilab_algos.Learner` and its two kinds): every learner of the package
is one, and `missing_members` names what an object lacks."""

from __future__ import annotations

import pytest
import torch
from _fastsac_helpers import ACT, OBS, small_config

from unilab_algos import (
    PPO,
    CaptureStatus,
    Distillation,
    DistillationConfig,
    FastSAC,
    Learner,
    NetworkConfig,
    OffPolicyLearner,
    OnPolicyLearner,
    PPOConfig,
)
from unilab_algos.common import missing_members

SHAPES = {"policy": (4,), "critic": (5,)}
NET = NetworkConfig(hidden=(8,))


def _learners():
    torch.manual_seed(0)
    ppo = PPO(SHAPES, 2, PPOConfig(actor=NET, critic=NET))
    distill = Distillation(SHAPES, 2, DistillationConfig(student=NET, teacher=NET))
    sac = FastSAC(OBS, ACT, small_config(), num_envs=4)
    return {
        "ppo": (ppo, "on-policy"),
        "distill": (distill, "on-policy"),
        "fastsac": (sac, "off-policy"),
    }


def test_every_learner_is_its_kind_of_learner():
    for name, (learner, kind) in _learners().items():
        assert isinstance(learner, Learner), name
        assert missing_members(learner, kind) == [], name
        protocol = OnPolicyLearner if kind == "on-policy" else OffPolicyLearner
        other = OffPolicyLearner if kind == "on-policy" else OnPolicyLearner
        assert isinstance(learner, protocol) and not isinstance(learner, other), name
        assert learner.config is not None
        assert all(isinstance(s, CaptureStatus) for s in learner.capture_status.values()), name


def test_fastsac_modes_switch_its_modules():
    sac = _learners()["fastsac"][0]
    sac.eval_mode()
    assert not any(m.training for m in sac.replicated_modules())
    sac.train_mode()
    assert all(m.training for m in sac.replicated_modules())


def test_missing_members_names_what_is_missing():
    ppo = _learners()["ppo"][0]

    class Partial:  # everything of PPO but `compute_returns` and `config`
        def __getattr__(self, name):
            if name in ("compute_returns", "config"):
                raise AttributeError(name)
            return getattr(ppo, name)

    assert missing_members(Partial(), "on-policy") == ["config", "compute_returns"]
    assert missing_members(Partial(), "off-policy") == ["config", "observe"]
    assert not isinstance(Partial(), OnPolicyLearner)
    with pytest.raises(ValueError, match="learner kind must be one of"):
        missing_members(ppo, "model-based")
