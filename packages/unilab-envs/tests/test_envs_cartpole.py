"""Cart-pole rewards on hand-made states, and the rsl_rl 5.4.2 adapter."""

from __future__ import annotations

import math

import torch
import warp as wp

import unilab_envs
from unilab_envs.rsl_rl import RslRlVecEnv


def _evaluate_at(name: str, qpos, qvel, action):
    env = unilab_envs.make(name, num_envs=len(qpos), seed=0)
    env.reset()
    ctx = env.ctx
    wp.to_torch(ctx.data.qpos).copy_(torch.tensor(qpos))
    wp.to_torch(ctx.data.qvel).copy_(torch.tensor(qvel))
    wp.to_torch(ctx.action).copy_(torch.tensor(action))
    with wp.ScopedDevice("cpu"):
        env.task.evaluate(ctx, env._reward, env._terminated, env._log)
    return wp.to_torch(env._reward).clone(), wp.to_torch(env._terminated).clone()


def test_balance_reward_hand_computed():
    r, term = _evaluate_at(
        "cartpole-balance",
        qpos=[[0.0, 0.0], [1.0, 0.5], [0.0, 0.9], [2.5, 0.0]],
        qvel=[[0.0, 0.0], [2.0, -4.0], [0.0, 0.0], [0.0, 0.0]],
        action=[[0.0], [0.0], [0.0], [0.0]],
    )
    expected = [1.0, 1.0 - 0.25 - 0.02 - 0.02, -2.0 - 0.81, -2.0]
    assert torch.allclose(r, torch.tensor(expected), atol=1e-6)
    assert term.tolist() == [False, False, True, True]


def test_swingup_reward_hand_computed():
    r, term = _evaluate_at(
        "cartpole-swingup",
        qpos=[[0.0, 0.0], [0.0, math.pi], [1.0, 0.0], [3.0, 0.0]],
        qvel=[[0.0, 0.0], [0.0, 0.0], [0.0, 5.0], [0.0, 0.0]],
        action=[[0.0], [0.0], [1.0], [0.0]],
    )
    third = 1.0 * (1 + math.exp(-1)) / 2 * (4 + math.exp(-1)) / 5 * (1 + math.exp(-1)) / 2
    assert torch.allclose(r, torch.tensor([1.0, 0.0, third, 0.0]), atol=1e-6)
    assert term.tolist() == [False, False, False, True]


def _stepped(name: str, *, seed: int, steps: int):
    """A 16-world cart-pole env after `steps` random actions (a state away from the reset)."""
    env = unilab_envs.make(name, num_envs=16, seed=seed)
    env.reset()
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        env.step(torch.rand(16, 1, generator=g) * 2 - 1)
    return env


def test_fused_evaluate_and_observe_equals_the_two_hooks():
    from unilab_envs import Task

    for name in ("cartpole-balance", "cartpole-swingup"):
        env = _stepped(name, seed=3, steps=30)
        ctx, results = env.ctx, []
        for hook in (type(env.task).evaluate_and_observe, Task.evaluate_and_observe):
            out = {
                "reward": wp.zeros(16, dtype=float, device="cpu"),
                "terminated": wp.zeros(16, dtype=wp.bool, device="cpu"),
                "log": wp.zeros((5, 16), dtype=float, device="cpu"),
                "policy": wp.zeros((16, 5), dtype=float, device="cpu"),
                "critic": wp.zeros((16, 5), dtype=float, device="cpu"),
            }
            final = {"policy": out["policy"], "critic": out["critic"]}
            with wp.ScopedDevice("cpu"):
                hook(env.task, ctx, out["reward"], out["terminated"], out["log"], final)
            results.append({k: wp.to_torch(v).clone() for k, v in out.items()})
        fused, plain = results
        assert type(env.task).evaluate_and_observe is not Task.evaluate_and_observe
        for key in fused:
            assert torch.equal(fused[key], plain[key]), (name, key)
        assert bool(fused["policy"].abs().sum() > 0)


def test_fused_reset_and_observe_equals_the_two_hooks():
    from unilab_envs import Task

    for name in ("cartpole-balance", "cartpole-swingup"):
        env = _stepped(name, seed=5, steps=10)
        ctx, results = env.ctx, []
        state = {k: wp.to_torch(getattr(ctx.data, k)).clone() for k in ("qpos", "qvel")}
        mask = wp.array([i % 3 == 0 for i in range(16)], dtype=wp.bool, device="cpu")
        for hook in (type(env.task).reset_and_observe, Task.reset_and_observe):
            for k, v in state.items():
                wp.to_torch(getattr(ctx.data, k)).copy_(v)
            obs = {g: wp.zeros((16, 5), dtype=float, device="cpu") for g in ("policy", "critic")}
            with wp.ScopedDevice("cpu"):
                hook(env.task, ctx, mask, obs)
            out = {g: wp.to_torch(v).clone() for g, v in obs.items()}
            out.update({k: wp.to_torch(getattr(ctx.data, k)).clone() for k in state})
            results.append(out)
        fused, plain = results
        assert type(env.task).reset_and_observe is not Task.reset_and_observe
        for key in fused:
            assert torch.equal(fused[key], plain[key]), (name, key)
        # the masked worlds were reset (new state), the others kept theirs
        moved = (fused["qpos"] != state["qpos"]).any(dim=1)
        assert moved.tolist() == [i % 3 == 0 for i in range(16)]
        assert torch.equal(fused["policy"][:, 0], fused["qpos"][:, 0])


def test_success_thresholds_and_limits():
    bal = unilab_envs.make("cartpole-balance", num_envs=1)
    swing = unilab_envs.make("cartpole-swingup", num_envs=1)
    assert (bal.success_threshold, bal.max_episode_steps) == (450.0, 500)
    assert (swing.success_threshold, swing.max_episode_steps) == (300.0, 500)


def test_rsl_rl_adapter_interface_and_runner_rollout():
    from rsl_rl.env import VecEnv as RslVecEnv

    env = RslRlVecEnv(unilab_envs.make("cartpole-balance", num_envs=4, seed=0, max_episode_steps=3))
    assert isinstance(env, RslVecEnv)
    assert (env.num_envs, env.num_actions, env.max_episode_length) == (4, 1, 3)
    obs = env.get_observations()
    assert obs["policy"].shape == (4, 5) and obs["critic"].shape == (4, 5)
    for t in range(3):
        obs, rew, dones, extras = env.step(torch.zeros(4, 1))
        assert rew.shape == (4,) and dones.dtype == torch.long
        assert torch.equal(extras["time_outs"], torch.full((4,), t == 2))
    assert torch.equal(dones, torch.ones(4, dtype=torch.long))
    assert float(extras["log"]["/episode/length"]) == 3.0
    assert torch.equal(env.episode_length_buf, torch.zeros(4, dtype=torch.long))
    # rsl_rl's init_at_random_ep_len: the lengths it sets decide the next time limits
    env.episode_length_buf = torch.tensor([0, 1, 2, 2])
    _, _, _, extras = env.step(torch.zeros(4, 1))
    assert torch.equal(extras["time_outs"], torch.tensor([False, False, True, True]))
