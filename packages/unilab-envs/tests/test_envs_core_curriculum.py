"""Curricula (state round trip, update rules, env mirroring) and domain randomization."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import warp as wp

import unilab_envs
from unilab_envs import DomainRandomization, LevelCurriculum


def test_level_curriculum_rules_and_round_trip():
    c = LevelCurriculum(metric="return", num_levels=5, up_threshold=10.0, down_threshold=2.0)
    assert c.level == 0.0
    assert c.update({"return": 11.0}) and c.index == 1 and c.level == 0.25
    assert not c.update({"return": 5.0}) and c.index == 1  # between thresholds: stay
    assert c.update({"return": 1.0}) and c.index == 0
    assert not c.update({"return": 1.0}) and c.index == 0  # clipped at 0
    assert not c.update({"return": float("nan")})  # no finished episode: no change
    for _ in range(7):
        c.update({"return": 10.0})
    assert c.index == 4 and c.level == 1.0
    state = c.state_dict()
    assert state == {"index": 4, "num_levels": 5}
    d = LevelCurriculum(metric="return", num_levels=5, up_threshold=10.0)
    d.load_state_dict(state)
    assert d.index == 4 and d.level == 1.0
    with pytest.raises(ValueError, match="does not match"):
        LevelCurriculum(metric="return", num_levels=3, up_threshold=1.0).load_state_dict(state)
    with pytest.raises(KeyError, match="needs metric 'return'"):
        c.update({"length": 3.0})
    with pytest.raises(ValueError, match="down_threshold"):
        LevelCurriculum(metric="r", num_levels=2, up_threshold=1.0, down_threshold=2.0)


def test_env_mirrors_curriculum_level_into_initial_states():
    env = unilab_envs.make(
        "cartpole-balance", num_envs=64, seed=0, curriculum=True, init_angle=0.05
    )
    assert isinstance(env.curriculum, LevelCurriculum)
    theta = lambda td: torch.atan2(td["obs", "policy"][:, 2], td["obs", "policy"][:, 1]).abs()  # noqa: E731
    low = theta(env.reset())
    assert float(low.max()) <= 0.05 + 1e-6
    env.curriculum.load_state_dict({"index": 4, "num_levels": 5})
    high = theta(env.reset())
    assert float(wp.to_torch(env.ctx.curriculum_level)[0]) == 1.0
    assert float(high.max()) <= 0.6 + 1e-6 and float(high.max()) > 0.3  # range widened to 0.6


def test_domain_randomization_draws_per_world_within_ranges():
    dr = DomainRandomization(
        mass_scale=(0.5, 1.5), actuator_gain_scale=(0.8, 1.2), friction_scale=(0.3, 0.6)
    )

    def make(seed):
        return unilab_envs.make("cartpole-balance", num_envs=8, seed=seed, randomization=dr)

    env = make(0)
    env.reset()
    mass = wp.to_torch(env.ctx.model.body_mass)  # [8, nbody]
    nominal = torch.tensor(env.mjm.body_mass, dtype=torch.float32)
    ratio = mass[:, 1:] / nominal[1:]
    assert mass.shape == (8, env.mjm.nbody)
    assert bool(((ratio >= 0.5) & (ratio <= 1.5)).all()) and len(set(ratio[:, 0].tolist())) == 8
    assert torch.equal(mass[:, 0], nominal[0].expand(8))  # the world body is not randomized
    gain = wp.to_torch(env.ctx.model.actuator_gainprm)[:, 0, 0] / float(
        env.mjm.actuator_gainprm[0, 0]
    )
    assert bool(((gain >= 0.8) & (gain <= 1.2)).all())
    fr = wp.to_torch(env.ctx.model.geom_friction)[:, :, 0] / torch.tensor(
        env.mjm.geom_friction[:, 0]
    )
    assert torch.allclose(fr, fr[:, :1].expand_as(fr))  # one factor per world
    assert bool(((fr >= 0.3 - 1e-6) & (fr <= 0.6 + 1e-6)).all())
    again = make(0)
    again.reset()
    assert torch.equal(wp.to_torch(again.ctx.model.body_mass), mass)  # same seed, same draws
    first = mass.clone()
    env.reset()
    assert not torch.equal(wp.to_torch(env.ctx.model.body_mass), first)  # redrawn per reset


def test_mass_randomization_keeps_subtree_masses_and_the_centre_of_mass_exact():
    import mujoco_warp as mjw

    dr = DomainRandomization(mass_scale=(0.5, 1.5))
    env = unilab_envs.make("quadruped-velocity", num_envs=4, seed=1, randomization=dr)
    env.reset()
    mass = wp.to_torch(env.ctx.model.body_mass).double()  # [4, nbody]
    subtree = wp.to_torch(env.ctx.model.body_subtreemass).double()
    parent = env.mjm.body_parentid
    expected = mass.clone()
    for b in range(env.mjm.nbody - 1, 0, -1):
        expected[:, parent[b]] += expected[:, b]
    assert subtree.shape == (4, env.mjm.nbody)
    torch.testing.assert_close(subtree, expected, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(subtree[:, 0], torch.tensor(env.mjm.body_subtreemass[0]).double())
    # the whole robot's centre of mass, as MJWarp computes it, is the mass-weighted mean
    with wp.ScopedDevice("cpu"):
        mjw.forward(env.ctx.model, env.ctx.data)
    xipos = wp.to_torch(env.ctx.data.xipos).double()  # [4, nbody, 3]
    com = (mass[:, 1:, None] * xipos[:, 1:]).sum(1) / mass[:, 1:].sum(1, keepdim=True)
    root = wp.to_torch(env.ctx.data.subtree_com).double()[:, 1]
    torch.testing.assert_close(root, com, rtol=1e-4, atol=1e-5)


def test_pushes_change_velocity_at_the_interval():
    step_dt = 0.02
    dr = DomainRandomization(
        push_joint="slider", push_velocity=(1.0,), push_interval_s=(3 * step_dt, 3 * step_dt)
    )
    pushed = unilab_envs.make("cartpole-balance", num_envs=4, seed=0, randomization=dr)
    plain = unilab_envs.make("cartpole-balance", num_envs=4, seed=0, randomization=None)
    a, b = pushed.reset(), plain.reset()
    assert torch.equal(a["obs", "policy"], b["obs", "policy"])
    for t in range(1, 4):
        a, b = pushed.step(torch.zeros(4, 1)), plain.step(torch.zeros(4, 1))
        same = torch.equal(a["obs", "policy"], b["obs", "policy"])
        assert same == (t < 3), t  # timers fire on the third control step
    dv = (a["obs", "policy"][:, 3] - b["obs", "policy"][:, 3]).abs()
    assert bool((dv > 0).all()) and bool((dv <= 1.0 + 0.05).all())
    with pytest.raises(ValueError, match="joint 'nope'"):
        unilab_envs.make(
            "cartpole-balance",
            num_envs=2,
            randomization=DomainRandomization(push_joint="nope", push_velocity=(1.0,)),
        )
    with pytest.raises(ValueError, match="mass_scale"):
        DomainRandomization(mass_scale=(2.0, 1.0))
    assert math.isclose(pushed.step_dt, step_dt)
    assert np.isfinite(a["reward"].numpy()).all()
