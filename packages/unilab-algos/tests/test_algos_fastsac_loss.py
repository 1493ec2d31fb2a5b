"""FastSAC loss pieces against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch
from _fastsac_helpers import small_config
from tensordict import TensorDict

from unilab_algos.fastsac import (
    FastSAC,
    SquashedGaussianActor,
    actor_loss,
    categorical_projection,
    distributional_critic_loss,
    polyak_update,
    scalar_critic_loss,
    soft_scalar_target,
    temperature_loss,
)

SUPPORT = torch.tensor([-1.0, 0.0, 1.0])
PROBS = torch.tensor([0.2, 0.3, 0.5])


def _proj(reward: float, discount: float, probs=PROBS) -> torch.Tensor:
    return categorical_projection(
        probs.unsqueeze(0), torch.tensor([reward]), torch.tensor([discount]), SUPPORT
    )[0]


def test_projection_between_atoms():
    # tz = -0.25 + 0.5 * [-1, 0, 1] = [-0.75, -0.25, 0.25] -> b = [0.25, 0.75, 1.25]
    # atom0: .2*.75 + .3*.25; atom1: .2*.25 + .3*.75 + .5*.75; atom2: .5*.25
    expected = torch.tensor([0.225, 0.65, 0.125])
    torch.testing.assert_close(_proj(-0.25, 0.5), expected)


def test_projection_exactly_on_atoms_keeps_mass_including_edges():
    # tz == support: every atom lands on itself, including the edge atoms 0 and K-1
    # (the floor == ceil case that a plain split would drop).
    torch.testing.assert_close(_proj(0.0, 1.0), PROBS)
    # Shift by one atom: -1 -> 0, 0 -> 1, 1 -> 2 clamps onto the upper edge.
    torch.testing.assert_close(_proj(1.0, 1.0), torch.tensor([0.0, 0.2, 0.8]))
    torch.testing.assert_close(_proj(-1.0, 1.0), torch.tensor([0.5, 0.5, 0.0]))


def test_projection_terminal_and_clamped():
    # discount 0 (terminal): a delta at the reward, split between neighbours.
    torch.testing.assert_close(_proj(0.5, 0.0), torch.tensor([0.0, 0.5, 0.5]))
    # far outside the support: all mass on the edge atom.
    torch.testing.assert_close(_proj(5.0, 0.5), torch.tensor([0.0, 0.0, 1.0]))
    torch.testing.assert_close(_proj(-7.0, 0.0), torch.tensor([1.0, 0.0, 0.0]))


def test_projection_batched_over_ensemble_preserves_mass():
    g = torch.Generator().manual_seed(0)
    probs = torch.rand(2, 5, 11, generator=g).softmax(-1)
    support = torch.linspace(-2, 2, 11)
    reward = torch.randn(5, generator=g)
    discount = torch.tensor([0.97, 0.0, 0.5, 0.97, 1.0])
    out = categorical_projection(probs, reward, discount, support)
    assert out.shape == (2, 5, 11)
    torch.testing.assert_close(out.sum(-1), torch.ones(2, 5))
    # Each ensemble member is projected on its own.
    one = categorical_projection(probs[1], reward, discount, support)
    torch.testing.assert_close(out[1], one)
    # Mean is preserved where nothing is clamped (row 4: discount 1, small reward shifts).
    mean_in = reward[2] + discount[2] * (probs[0, 2] * support).sum()
    torch.testing.assert_close((out[0, 2] * support).sum(), mean_in)


def test_distributional_critic_loss_value():
    logits = torch.zeros(2, 3, 2)
    target = torch.tensor([1.0, 0.0]).expand(2, 3, 2)
    # CE of uniform 2-way prediction = log 2 per sample; mean over B, summed over 2 critics.
    assert distributional_critic_loss(logits, target).item() == pytest.approx(2 * math.log(2))


def test_scalar_target_and_loss():
    t = soft_scalar_target(
        torch.tensor([1.0]),
        torch.tensor([0.5]),
        torch.tensor([[2.0], [3.0]]),
        torch.tensor([1.0]),
        0.1,
    )
    assert t.item() == pytest.approx(1.0 + 0.5 * (2.0 - 0.1))  # min over critics
    q = torch.tensor([[1.0, 2.0], [0.0, 0.0]])
    assert scalar_critic_loss(q, torch.tensor([1.0, 1.0])).item() == pytest.approx(0.5 + 1.0)


def test_actor_and_temperature_losses():
    logp = torch.tensor([1.0, -1.0])
    assert actor_loss(logp, torch.tensor([2.0, 0.0]), 0.5).item() == pytest.approx(-1.0)
    log_alpha = torch.tensor([math.log(0.5)], requires_grad=True)
    logp = torch.tensor([-1.0, -3.0], requires_grad=True)  # entropy 2
    loss = temperature_loss(log_alpha, logp, target_entropy=-1.0)
    assert loss.item() == pytest.approx(1.5)  # -0.5 * mean([-2, -4])
    loss.backward()
    # d/dlog_alpha = alpha * (entropy - target) = 0.5 * 3
    assert log_alpha.grad.item() == pytest.approx(1.5)
    assert logp.grad is None  # the policy gets no gradient from the temperature loss


def test_polyak_update_exact():
    target = [torch.tensor([0.0, 4.0]), torch.tensor([[1.0]])]
    online = [torch.tensor([8.0, 0.0]), torch.tensor([[-3.0]])]
    polyak_update(target, online, 0.25)
    assert target[0].tolist() == [2.0, 3.0]
    assert target[1].tolist() == [[0.0]]
    assert online[0].tolist() == [8.0, 0.0]


def test_squashed_gaussian_log_prob_matches_torch_distributions():
    torch.manual_seed(0)
    actor = SquashedGaussianActor(3, 2, (8, 8), log_std_min=-2.0, log_std_max=1.0)
    torch.nn.init.normal_(actor.mu.weight)
    torch.nn.init.normal_(actor.log_std.weight)
    obs, noise = torch.randn(5, 3), torch.randn(5, 2)
    action, logp = actor.sample(obs, noise)
    mean, log_std = actor.distribution(obs)
    base = torch.distributions.Normal(mean, log_std.exp())
    dist = torch.distributions.TransformedDistribution(base, [torch.distributions.TanhTransform()])
    u = mean + log_std.exp() * noise
    torch.testing.assert_close(action, torch.tanh(u))
    torch.testing.assert_close(logp, dist.log_prob(torch.tanh(u)).sum(-1), rtol=1e-4, atol=1e-4)
    assert ((log_std >= -2.0) & (log_std <= 1.0)).all()
    torch.testing.assert_close(actor(obs), torch.tanh(mean))


def _step(n, t, reward, term=False, trunc=False):
    obs = {"policy": torch.full((n, 3), float(t + 1)), "critic": torch.full((n, 4), float(t + 1))}
    fin = {"policy": torch.full((n, 3), -float(t + 1)), "critic": torch.full((n, 4), -1.0)}
    return TensorDict(
        {
            "obs": obs,
            "final_obs": fin if (term or trunc) else {k: v.clone() for k, v in obs.items()},
            "reward": torch.full((n,), reward),
            "terminated": torch.full((n,), term),
            "truncated": torch.full((n,), trunc),
            "done": torch.full((n,), term or trunc),
        },
        [n],
    )


@pytest.mark.parametrize("kind", ["none", "truncated", "terminated"])
def test_nstep_targets_through_observe(kind):
    """observe() -> replay -> n-step reward/discount/next obs, hand-computed (gamma 0.5, n 3)."""
    n = 2
    cfg = small_config(n_step=3, gamma=0.5, transitions_per_env=8, normalize_obs=False)
    learner = FastSAC({"policy": (3,), "critic": (4,)}, 2, cfg, num_envs=n)
    rewards = [1.0, 2.0, 4.0, 8.0]
    obs = TensorDict({"obs": {"policy": torch.zeros(n, 3), "critic": torch.zeros(n, 4)}}, [n])
    for t, r in enumerate(rewards):
        step = _step(
            n, t, r, term=(kind == "terminated" and t == 1), trunc=(kind == "truncated" and t == 1)
        )
        learner.observe(obs, torch.zeros(n, 2), step)
        obs = TensorDict({"obs": step["obs"]}, [n])
    batch = learner.replay.sample(256, torch.Generator().manual_seed(0))
    first = batch[batch["obs", "policy"][:, 0] == 0.0]  # transitions starting at t = 0
    assert first.shape[0] > 0
    if kind == "none":  # 1 + .5*2 + .25*4, bootstrap gamma^3 from the obs after step t=2
        exp_r, exp_d, exp_next = 3.0, 0.125, 3.0
    elif kind == "truncated":  # stops after t=1, keeps the bootstrap from the final obs
        exp_r, exp_d, exp_next = 2.0, 0.25, -2.0
    else:  # terminated at t=1: no bootstrap
        exp_r, exp_d, exp_next = 2.0, 0.0, -2.0
    assert torch.all(first["reward"] == exp_r)
    assert torch.all(first["discount"] == exp_d)
    assert torch.all(first["next_obs", "policy"] == exp_next)
