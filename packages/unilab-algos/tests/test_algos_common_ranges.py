"""The learners' profiler ranges: in a `torch.profiler` trace of an update, none without one."""

from __future__ import annotations

import pytest
import torch
from _fastsac_helpers import ACT, OBS, env_step, small_config
from _ppo_helpers import scripted_collect, small_ppo

from unilab_algos import NetworkConfig, PPOConfig
from unilab_algos.common import ranges
from unilab_algos.fastsac import FastSAC

DIMS = {"policy": 3}


def _ranges(prof) -> dict[str, int]:
    return {e.key: e.count for e in prof.key_averages() if e.key.startswith("unilab/")}


def _ppo():
    net = NetworkConfig(hidden=(8,))
    cfg = PPOConfig(actor=net, critic=net, critic_obs=("policy",), num_epochs=2)
    ppo = small_ppo(cfg, DIMS, 2, num_envs=4, num_steps=6)
    scripted_collect(ppo, DIMS, 6, seed=0)
    return ppo


def test_ppo_update_is_a_range_holding_each_mini_batchs_parts():
    ppo = _ppo()
    with torch.profiler.profile() as prof:
        metrics = ppo.update()
    n = metrics["mini_batches"]
    assert n == 2 * ppo.config.num_mini_batches
    assert _ranges(prof) == {
        "unilab/update": 1,
        "unilab/forward_backward": n,
        "unilab/grad_sync": n,
        "unilab/apply": n,
    }


def test_fastsac_update_is_a_range():
    torch.manual_seed(0)
    learner = FastSAC(OBS, ACT, small_config(), num_envs=4)
    gen = torch.Generator().manual_seed(1)
    obs = env_step(4, gen)
    for t in range(3):
        step = env_step(4, gen, t=t)
        learner.observe(obs, learner.act(obs), step)
        obs = step
    with torch.profiler.profile() as prof:
        assert learner.update()["updates"] == 4
    assert _ranges(prof) == {"unilab/update": 1}


def test_no_range_is_opened_without_a_profiler(monkeypatch):
    def refuse(name):
        raise AssertionError(f"record_function({name!r}) without a profiler")

    monkeypatch.setattr(ranges, "record_function", refuse)
    ppo = _ppo()
    assert ppo.update()["mini_batches"] > 0
    scripted_collect(ppo, DIMS, 6, seed=1)
    with pytest.raises(AssertionError, match="unilab/update"), torch.profiler.profile():
        ppo.update()
