"""PPO loss/gradient against a hand-written reference, and PPO solving a torch point mass."""

from __future__ import annotations

import math

import torch
from tensordict import TensorDict

from unilab_algos import PPO, NetworkConfig, PPOConfig
from unilab_algos.ppo import ppo_loss


def test_loss_and_gradient_match_hand_formula():
    torch.manual_seed(0)
    mean = torch.tensor([[0.1, -0.3], [0.5, 0.2], [-0.4, 0.0]], requires_grad=True)
    std = torch.tensor([0.5, 1.2], requires_grad=True)
    values = torch.tensor([0.3, -0.2, 1.5], requires_grad=True)
    actions = torch.tensor([[0.0, 0.1], [0.9, -0.5], [-0.2, 0.4]])
    old_lp = torch.tensor([-1.9, -2.4, -1.7])
    adv = torch.tensor([1.0, -0.5, 2.0])
    old_v = torch.tensor([0.0, 0.1, 1.0])
    ret = torch.tensor([0.5, -0.4, 1.2])
    out = ppo_loss(
        torch.distributions.Normal(mean, std),
        actions,
        old_lp,
        adv,
        values,
        old_v,
        ret,
        clip_param=0.2,
        value_loss_coef=0.5,
        entropy_coef=0.01,
        use_clipped_value_loss=True,
    )
    grads = torch.autograd.grad(out["loss"], (mean, std, values))

    m2, s2, v2 = (x.detach().clone().requires_grad_(True) for x in (mean, std, values))
    lp = (-((actions - m2) ** 2) / (2 * s2**2) - torch.log(s2) - 0.5 * math.log(2 * math.pi)).sum(1)
    r = torch.exp(lp - old_lp)
    surr = torch.max(-adv * r, -adv * r.clamp(0.8, 1.2)).mean()
    vc = old_v + (v2 - old_v).clamp(-0.2, 0.2)
    vl = torch.max((v2 - ret) ** 2, (vc - ret) ** 2).mean()
    ent = (0.5 + 0.5 * math.log(2 * math.pi) + torch.log(s2)).sum() * 1.0  # same for every row
    loss = surr + 0.5 * vl - 0.01 * ent
    ref = torch.autograd.grad(loss, (m2, s2, v2))
    torch.testing.assert_close(out["surrogate"], surr)
    torch.testing.assert_close(out["value"], vl)
    torch.testing.assert_close(out["entropy"], ent)
    torch.testing.assert_close(out["loss"], loss)
    for a, b in zip(grads, ref, strict=True):
        torch.testing.assert_close(a, b)
    # the clip is active for some samples: the clipped value term differs from the plain one
    assert vl > ((v2 - ret) ** 2).mean()


def _point_mass_return(ppo: PPO, n: int, steps: int, iters: int, seed: int) -> list[float]:
    """2-D point mass: p += 0.1 * clip(a), reward -|p|, 20-step episodes from random starts."""
    g = torch.Generator().manual_seed(seed)
    pos = torch.rand(n, 2, generator=g) * 2 - 1
    t_ep = torch.zeros(n)
    ret = torch.zeros(n)
    finished: list[float] = []
    history = []
    ppo.init_storage(n, steps)
    for _ in range(iters):
        finished.clear()
        with torch.no_grad():
            for _s in range(steps):
                obs = TensorDict({("obs", "policy"): pos.clone()}, batch_size=[n])
                a = ppo.act(obs).clamp(-1, 1)
                pos = pos + 0.1 * a
                rew = -pos.norm(dim=1)
                ret += rew
                t_ep += 1
                done = t_ep >= 20
                finished += ret[done].tolist()
                ret[done] = 0
                t_ep[done] = 0
                pos[done] = torch.rand(int(done.sum()), 2, generator=g) * 2 - 1
                step = TensorDict(
                    {
                        ("obs", "policy"): pos.clone(),
                        "reward": rew,
                        "done": done,
                        "truncated": done,
                    },
                    batch_size=[n],
                )
                ppo.process_env_step(step)
            ppo.compute_returns(TensorDict({("obs", "policy"): pos.clone()}, batch_size=[n]))
        ppo.update()
        history.append(sum(finished) / max(len(finished), 1))
    return history


def test_ppo_solves_point_mass():  # one thread: conftest's autouse fixture
    torch.manual_seed(0)
    net = NetworkConfig(hidden=(32, 32), activation="tanh")
    cfg = PPOConfig(
        actor=net,
        critic=net,
        critic_obs=("policy",),
        learning_rate=3e-3,
        entropy_coef=0.0,
        num_epochs=4,
        num_mini_batches=2,
    )
    ppo = PPO({"policy": (2,)}, 2, cfg)
    hist = _point_mass_return(ppo, n=128, steps=20, iters=15, seed=1)
    # random policy: about -15; straight to the target: about -4
    assert hist[0] < -10.0
    assert max(hist[-3:]) > -7.0, hist
