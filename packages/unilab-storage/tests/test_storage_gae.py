"""GAE and advantage normalization: hand-computed cases and RSL-RL 5.4.2's own arithmetic."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from tensordict import TensorDict

from unilab_storage import compute_gae, normalize_advantages

# gamma = lam = 0.5 keeps every intermediate value an exact binary fraction.
REWARDS = torch.tensor([[1.0, 1.0], [2.0, 1.0], [3.0, 1.0]])
VALUES = torch.tensor([[0.5, 1.0], [1.0, 2.0], [1.5, 4.0]])
DONES = torch.tensor([[False, False], [False, True], [False, False]])
LAST = torch.tensor([2.0, 8.0])


def test_gae_time_out_bootstrap_hand_computed():
    time_outs = DONES.clone()
    adv, ret = compute_gae(REWARDS, VALUES, DONES, LAST, 0.5, 0.5, time_outs=time_outs)
    # env 0 (no done): deltas 1.0, 1.75, 2.5 -> A = 1.59375, 2.375, 2.5
    # env 1: time-out at t=1 -> r1 = 1 + 0.5 * 2 = 2; deltas 1, 0, 1 -> A = 1, 0, 1
    assert torch.equal(adv, torch.tensor([[1.59375, 1.0], [2.375, 0.0], [2.5, 1.0]]))
    assert torch.equal(ret, torch.tensor([[2.09375, 2.0], [3.375, 2.0], [4.0, 5.0]]))


def test_gae_termination_has_no_bootstrap():
    adv, ret = compute_gae(REWARDS, VALUES, DONES, LAST, 0.5, 0.5)
    # env 1 terminated at t=1: delta1 = 1 - 2 = -1; A0 = 1 + 0.25 * (-1) = 0.75
    assert torch.equal(adv[:, 1], torch.tensor([0.75, -1.0, 1.0]))
    assert torch.equal(ret[:, 1], torch.tensor([1.75, 1.0, 5.0]))
    assert torch.equal(adv[:, 0], torch.tensor([1.59375, 2.375, 2.5]))


def test_gae_lambda_one_gamma_one_is_monte_carlo_return():
    rewards = torch.tensor([[1.0], [2.0], [4.0], [8.0]])
    values = torch.tensor([[3.0], [5.0], [7.0], [9.0]])
    dones = torch.tensor([[False], [True], [False], [False]])
    _, ret = compute_gae(rewards, values, dones, torch.tensor([16.0]), 1.0, 1.0)
    # episode 1: 1 + 2 = 3, 2; episode 2: 4 + 8 + V_last 16 = 28, 24
    assert ret.flatten().tolist() == [3.0, 2.0, 28.0, 24.0]


class _Critic:
    """Stand-in for an RSL-RL critic: returns fixed last values."""

    def __init__(self, last_values: torch.Tensor) -> None:
        self.last_values = last_values

    def get_hidden_state(self) -> None:
        return None

    def reset(self, hidden_state=None) -> None:
        pass

    def __call__(self, obs):
        return self.last_values


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rsl_rl_mode_equals_rsl_rl_compute_returns_bitwise(seed):
    from rsl_rl.algorithms import PPO
    from rsl_rl.storage import RolloutStorage as RslStorage

    g = torch.Generator().manual_seed(seed)
    T, N, gamma, lam = 24, 37, 0.99, 0.95
    obs = TensorDict({"policy": torch.zeros(N, 3)}, batch_size=[N])
    st = RslStorage("rl", N, T, obs, (2,), device="cpu")
    rewards = torch.randn(T, N, generator=g)
    values = torch.randn(T, N, generator=g)
    dones = torch.rand(T, N, generator=g) < 0.1
    time_outs = dones & (torch.rand(T, N, generator=g) < 0.5)
    last = torch.randn(N, generator=g)
    # RSL-RL stores rewards already bootstrapped (PPO.process_env_step).
    boot = rewards + gamma * torch.squeeze(values.unsqueeze(-1) * time_outs.unsqueeze(-1), -1)
    st.rewards.copy_(boot.unsqueeze(-1))
    st.values.copy_(values.unsqueeze(-1))
    st.dones.copy_(dones.unsqueeze(-1))
    fake = SimpleNamespace(
        storage=st,
        critic=_Critic(last.unsqueeze(-1)),
        gamma=gamma,
        lam=lam,
        normalize_advantage_per_mini_batch=False,
    )
    PPO.compute_returns(fake, obs)
    adv, ret = compute_gae(rewards, values, dones, last, gamma, lam, time_outs, rsl_rl=True)
    assert torch.equal(ret, st.returns.squeeze(-1))
    assert torch.equal(normalize_advantages(adv), st.advantages.squeeze(-1))
    # Same call on RSL-RL's own [T, N, 1] layout with pre-bootstrapped rewards.
    _, ret3 = compute_gae(
        st.rewards, st.values, st.dones, last.unsqueeze(-1), gamma, lam, rsl_rl=True
    )
    assert torch.equal(ret3, st.returns)
    # Default mode: the raw GAE advantage, equal up to rounding.
    adv_raw, ret_raw = compute_gae(rewards, values, dones, last, gamma, lam, time_outs)
    assert torch.equal(ret_raw, ret)
    torch.testing.assert_close(adv_raw, adv, rtol=0, atol=1e-5)


def test_normalize_local_matches_formula_and_population_option():
    adv = torch.tensor([1.0, 2.0, 3.0, 6.0])
    # mean 3, sum sq dev 14: unbiased var 14/3, population var 3.5
    out = normalize_advantages(adv, eps=0.0)
    torch.testing.assert_close(out, (adv - 3.0) / (14.0 / 3.0) ** 0.5)
    out_pop = normalize_advantages(adv, eps=0.0, unbiased=False)
    torch.testing.assert_close(out_pop, (adv - 3.0) / 3.5**0.5)


def test_normalize_with_identity_reducer_equals_local():
    g = torch.Generator().manual_seed(3)
    adv = torch.randn(24, 64, generator=g) * 3 + 1
    calls = []

    def reducer(x):
        calls.append(x.clone())
        return x

    out = normalize_advantages(adv, reduce_sum=reducer)
    assert len(calls) == 1 and calls[0].dtype == torch.float64 and calls[0][0].item() == 1536.0
    torch.testing.assert_close(out, normalize_advantages(adv), rtol=0, atol=2e-6)


def test_gae_bad_input():
    with pytest.raises(ValueError, match="same"):
        compute_gae(REWARDS, VALUES[:2], DONES, LAST, 0.9, 0.9)
    with pytest.raises(ValueError, match="last_values"):
        compute_gae(REWARDS, VALUES, DONES, LAST[:1], 0.9, 0.9)
    with pytest.raises(ValueError, match="time_outs"):
        compute_gae(REWARDS, VALUES, DONES, LAST, 0.9, 0.9, time_outs=DONES[:1])
    with pytest.raises(TypeError, match="floating"):
        normalize_advantages(torch.arange(4))
    with pytest.raises(ValueError, match="too few"):
        normalize_advantages(torch.ones(1))
