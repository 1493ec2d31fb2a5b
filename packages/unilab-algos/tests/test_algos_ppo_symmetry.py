"""Mirror maps: augmentation and mirror loss as RSL-RL 5.4.2 defines them."""

from __future__ import annotations

import pytest
import torch

from unilab_algos.ppo.symmetry import (
    Mirror,
    SignedPermutation,
    augment,
    mirror_loss,
    repeat_rollout,
)

# 4-dim obs: (left, right, lateral, forward); 2-dim action: (left, right) swapped.
OBS = SignedPermutation(index=(1, 0, 2, 3), sign=(1, 1, -1, 1))
ACT = SignedPermutation(index=(1, 0), sign=(1, 1))
MIRROR = Mirror(obs={"policy": OBS}, action=ACT)


def test_augment_doubles_with_mirrored_samples() -> None:
    obs = {"policy": torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])}
    act = torch.tensor([[0.1, 0.2], [0.3, 0.4]])
    aug_obs, aug_act = augment(MIRROR, obs, act)
    expect_obs = torch.tensor(
        [[1, 2, 3, 4], [5, 6, 7, 8], [2, 1, -3, 4], [6, 5, -7, 8]], dtype=torch.float32
    )
    assert torch.equal(aug_obs["policy"], expect_obs)
    assert torch.equal(aug_act, torch.tensor([[0.1, 0.2], [0.3, 0.4], [0.2, 0.1], [0.4, 0.3]]))
    logp = torch.tensor([[-1.0], [-2.0]])
    assert torch.equal(repeat_rollout(logp), torch.tensor([[-1.0], [-2.0], [-1.0], [-2.0]]))


def test_mirror_loss_against_hand_value() -> None:
    w = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])  # a(o) = (o0, 0)
    obs = {"policy": torch.tensor([[1.0, 2.0, 3.0, 4.0]])}

    def mean(o: dict[str, torch.Tensor]) -> torch.Tensor:
        return o["policy"] @ w.T

    # mean(mirror(o)) = (2, 0); mirror_act(mean(o)) = mirror((1, 0)) = (0, 1); mse = (4 + 1) / 2
    assert mirror_loss(MIRROR, mean, obs).item() == pytest.approx(2.5)


def test_symmetric_policy_has_zero_loss() -> None:
    w = torch.tensor([[1.0, 2.0, 0.0, 3.0], [2.0, 1.0, 0.0, 3.0]])  # swaps with left/right

    def mean(o: dict[str, torch.Tensor]) -> torch.Tensor:
        return o["policy"] @ w.T

    obs = {"policy": torch.randn(16, 4, generator=torch.Generator().manual_seed(0))}
    assert mirror_loss(MIRROR, mean, obs).item() == 0.0


def test_bad_maps_named() -> None:
    with pytest.raises(ValueError, match="permutation"):
        SignedPermutation(index=(0, 0), sign=(1, 1))
    with pytest.raises(ValueError, match="sign"):
        SignedPermutation(index=(0, 1), sign=(1, 2))
    with pytest.raises(KeyError, match="critic"):
        MIRROR.observations({"critic": torch.zeros(1, 4)})
