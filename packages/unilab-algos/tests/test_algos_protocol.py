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


def test_optimizers_are_every_optimizer_of_the_learner_once():
    """`optimizers()` (what the replica check compares) lists every optimizer the learner
    steps, and PPO and FastSAC hold their networks and optimizers once, in their state."""
    learners = _learners()
    for name, (learner, _) in learners.items():
        opts = learner.optimizers()
        assert opts and all(isinstance(o, torch.optim.Optimizer) for o in opts), name
        assert len({id(o) for o in opts}) == len(opts), name
        trained = {id(p) for o in opts for g in o.param_groups for p in g["params"]}
        for module in learner.replicated_modules():
            for p in module.parameters():
                assert not p.requires_grad or id(p) in trained, name
    ppo, sac = learners["ppo"][0], learners["fastsac"][0]
    assert ppo.optimizers() == [ppo.state.optimizer]
    assert sac.optimizers() == [
        sac.state.critic_optimizer,
        sac.state.actor_optimizer,
        sac.state.alpha_optimizer,
    ]
    for learner in (ppo, sac):
        own = vars(learner).values()
        assert not [v for v in own if isinstance(v, torch.optim.Optimizer)]
        assert not {id(v) for v in own} & {id(m) for m in learner.replicated_modules()}
    assert ppo.actor is ppo.state.actor and ppo.critic is ppo.state.critic
    assert sac.actor is sac.state.actor and sac.critic_target is sac.state.critic_target
