"""The large-batch recipe: mini-batch count and KL target resolved per env count."""

from __future__ import annotations

import attrs
import pytest

from unilab_algos.ppo import LargeBatch, PPOConfig, scale_for_envs


@pytest.mark.parametrize(
    ("num_envs", "mini_batches", "kl"), [(4096, 4, 0.01), (8192, 8, 0.02), (16384, 16, 0.04)]
)
def test_scales_with_envs_per_rank(num_envs: int, mini_batches: int, kl: float) -> None:
    cfg = scale_for_envs(PPOConfig(), LargeBatch(), num_envs=num_envs)
    assert cfg.num_mini_batches == mini_batches
    assert cfg.desired_kl == pytest.approx(kl, rel=1e-12)
    assert cfg.learning_rate == PPOConfig().learning_rate
    assert cfg.lr_bounds == PPOConfig().lr_bounds


def test_reference_count_is_plain_settings() -> None:
    for base in (PPOConfig(), PPOConfig.rsl_rl()):
        assert scale_for_envs(base, LargeBatch(), num_envs=4096) == base


def test_scope_rank_vs_global_on_ranks() -> None:
    per_rank = scale_for_envs(PPOConfig(), LargeBatch(), num_envs=4096, world_size=4)
    assert per_rank == PPOConfig()
    glob = scale_for_envs(PPOConfig(), LargeBatch(scope="global"), num_envs=4096, world_size=4)
    assert glob.num_mini_batches == 16
    assert glob.desired_kl == pytest.approx(0.04, rel=1e-12)
    half = scale_for_envs(PPOConfig(), LargeBatch(scope="global"), num_envs=2048, world_size=2)
    assert half == PPOConfig()


def test_fractional_mini_batches_named() -> None:
    with pytest.raises(ValueError, match="whole number"):
        scale_for_envs(PPOConfig(), LargeBatch(), num_envs=5000)


def test_learner_applies_the_recipe_for_its_env_count() -> None:
    """`PPOConfig.large_batch` set: the learner built for 8192 envs per rank runs 8 mini-batches
    and twice the KL target; its `config` is the scaled one (`large_batch=None`), so nothing
    scales twice. Without the env count it refuses."""
    from unilab_algos import PPO, LargeBatch, NetworkConfig, PPOConfig

    net = NetworkConfig(hidden=(8,))
    cfg = PPOConfig(actor=net, critic=net, large_batch=LargeBatch(reference_envs=4096))
    shapes = {"policy": (3,), "critic": (3,)}
    ppo = PPO(shapes, 2, cfg, num_envs=8192)
    assert ppo.config == attrs.evolve(cfg, large_batch=None, num_mini_batches=8, desired_kl=0.02)
    assert ppo.state.config is ppo.config
    two = PPO(
        shapes,
        2,
        attrs.evolve(cfg, large_batch=LargeBatch(scope="global")),
        num_envs=4096,
        world_size=2,
    )
    assert two.config.num_mini_batches == 8
    with pytest.raises(ValueError, match="num_envs="):
        PPO(shapes, 2, cfg)
