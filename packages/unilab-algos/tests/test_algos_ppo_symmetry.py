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


# ------------------------------------------------------------- in the PPO update
N, T, A = 8, 6, 2
DIMS = {"policy": 4, "critic": 4}
PPO_MIRROR = Mirror(obs={"policy": OBS, "critic": OBS}, action=ACT)


def _cfg(**kw):
    from unilab_algos import NetworkConfig, PPOConfig

    net = NetworkConfig(hidden=(16,))
    return PPOConfig(actor=net, critic=net, num_epochs=2, num_mini_batches=3, **kw)


class _Recorder:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, params, extra):
        self.calls += 1
        return extra


@pytest.mark.parametrize("mirror_loss", [False, True])
def test_captured_symmetric_update_equals_eager_bitwise(mirror_loss: bool) -> None:
    """Symmetry inside the captured update (static buffers, warm-up, capture, replays re-run by
    `RerunBackend`) equals the eager update bit for bit, with one `grad_sync` per mini-batch as
    without symmetry (no collective of its own)."""
    from _ppo_helpers import scripted_collect, small_ppo

    from unilab_algos import CaptureMode, SymmetryConfig
    from unilab_algos.common import RerunBackend

    sym = SymmetryConfig(mirror_loss=mirror_loss, mirror_loss_coef=0.3)
    rec_a, rec_b, backend = _Recorder(), _Recorder(), RerunBackend()
    kw = dict(mirror=PPO_MIRROR)
    eager = small_ppo(_cfg(symmetry=sym, capture="none"), DIMS, A, N, T, grad_sync=rec_a, **kw)
    static = small_ppo(
        _cfg(symmetry=sym, capture="cuda_graph"),
        DIMS,
        A,
        N,
        T,
        grad_sync=rec_b,
        graph_backend=backend,
        **kw,
    )
    for it in range(2):
        ma, mb = ({}, {})
        for ppo, out in ((eager, ma), (static, mb)):  # each update right after its rollout
            scripted_collect(ppo, DIMS, T, it)  # (it seeds the RNG the update's shuffle reads)
            out.update(ppo.update())
        assert ma == mb and ma["symmetry"] > 0.0 and ma["collectives"] == 6
    assert static.capture_status["update"].mode is CaptureMode.CAPTURED
    assert rec_a.calls == rec_b.calls == 2 * 6
    for x, y in zip(eager.replicated_modules(), static.replicated_modules(), strict=True):
        for (k, v), (_, w) in zip(x.state_dict().items(), y.state_dict().items(), strict=True):
            assert torch.equal(v, w), k


def test_symmetry_changes_the_update_and_default_stays() -> None:
    """Augmentation trains on the mirrored samples too (other parameters than without it); a
    config without symmetry ignores `mirror` and trains as before."""
    from _ppo_helpers import scripted_collect, small_ppo

    from unilab_algos import SymmetryConfig

    runs = {}
    for name, cfg, mirror in (
        ("plain", _cfg(), None),
        ("plain+mirror", _cfg(), PPO_MIRROR),
        ("augmented", _cfg(symmetry=SymmetryConfig()), PPO_MIRROR),
    ):
        ppo = small_ppo(cfg, DIMS, A, N, T, mirror=mirror)
        scripted_collect(ppo, DIMS, T, 0)
        metrics = ppo.update()
        runs[name] = (torch.cat([p.flatten() for p in ppo.actor.parameters()]), metrics)
    assert torch.equal(runs["plain"][0], runs["plain+mirror"][0])
    assert "symmetry" not in runs["plain"][1] and "symmetry" in runs["augmented"][1]
    assert not torch.equal(runs["plain"][0], runs["augmented"][0])


def test_symmetry_needs_fitting_maps() -> None:
    from unilab_algos import PPO, SymmetryConfig

    shapes = {k: (d,) for k, d in DIMS.items()}
    with pytest.raises(ValueError, match="needs the mirror maps"):
        PPO(shapes, A, _cfg(symmetry=SymmetryConfig()))
    narrow = Mirror(obs={"policy": OBS}, action=ACT)
    with pytest.raises(ValueError, match=r"critic \(mirror width None, data width 4\)"):
        PPO(shapes, A, _cfg(symmetry=SymmetryConfig()), mirror=narrow)
    with pytest.raises(ValueError, match=r"actions \(mirror width 2, data width 3\)"):
        PPO(shapes, 3, _cfg(symmetry=SymmetryConfig()), mirror=PPO_MIRROR)
