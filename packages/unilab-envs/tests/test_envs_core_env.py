"""The env layer on cartpole (warp CPU device): contract, resets, determinism, errors."""

from __future__ import annotations

import math
import warnings

import mujoco_warp as mjw
import numpy as np
import pytest
import torch
import warp as wp

import unilab_envs
from unilab_envs._core.reset import reset_state
from unilab_envs.testing import check_vec_env

N = 6


def _make(**kw):
    kw.setdefault("max_episode_steps", 15)
    return unilab_envs.make("cartpole-balance", num_envs=N, device="cpu", seed=3, **kw)


def test_check_vec_env_balance_and_swingup():
    counts = check_vec_env(_make(), steps=40, make_env=_make)
    # 40 steps with a 15-step limit: every world finishes at least two episodes.
    assert counts["steps"] == 40
    assert counts["episodes"] >= 2 * N
    assert counts["truncated"] + counts["terminated"] == counts["episodes"]
    swing = unilab_envs.make("cartpole-swingup", num_envs=4, seed=1, max_episode_steps=10)
    counts = check_vec_env(swing, steps=25)
    assert counts["truncated"] >= 8  # hanging pole: time limits, not failures


def test_reset_output_and_initial_state_ranges():
    env = _make()
    td = env.reset()
    assert set(td.keys(include_nested=True, leaves_only=True)) == {
        ("obs", "policy"),
        ("obs", "critic"),
    }
    obs = td["obs", "policy"]
    theta = torch.atan2(obs[:, 2], obs[:, 1])
    assert bool((obs[:, 0].abs() <= 0.5).all()) and bool((theta.abs() <= 0.2 + 1e-6).all())
    assert bool((obs[:, 3:].abs() <= 0.1 + 1e-6).all())
    assert len(set(obs[:, 0].tolist())) == N  # randomized per world
    assert torch.equal(env.episode_length, torch.zeros(N, dtype=torch.int32))


def test_auto_reset_and_truncation_exactly_at_limit():
    env = _make(max_episode_steps=5)
    env.reset()
    for t in range(1, 5):
        td = env.step(torch.zeros(N, 1))
        assert torch.equal(env.episode_length, torch.full((N,), t, dtype=torch.int32))
        assert not bool(td["done"].any())
        assert torch.equal(td["final_obs", "policy"], td["obs", "policy"])
    td = env.step(torch.zeros(N, 1))
    assert bool(td["truncated"].all()) and not bool(td["terminated"].any())
    assert torch.equal(td["episode", "length"], torch.full((N,), 5.0))
    assert torch.equal(env.episode_length, torch.zeros(N, dtype=torch.int32))
    # obs is the fresh episode's start; final_obs is where the old one ended.
    assert not torch.equal(td["final_obs", "policy"], td["obs", "policy"])
    theta = torch.atan2(td["obs", "policy"][:, 2], td["obs", "policy"][:, 1])
    assert bool((theta.abs() <= 0.2 + 1e-6).all())
    # the episode return is the sum of the five rewards (checked by check_vec_env too); the
    # log terms' episode sums add up to it.
    terms = sum(
        td["episode", k] for k in ("alive", "terminated", "pole_angle", "cart_vel", "pole_vel")
    )
    assert torch.allclose(terms, td["episode", "return"], atol=1e-5)


def test_random_episode_start_spreads_the_first_time_limits_and_nothing_else():
    n, limit = 64, 10
    env = unilab_envs.make(
        "cartpole-swingup", num_envs=n, device="cpu", seed=5, max_episode_steps=limit
    )
    with pytest.raises(RuntimeError, match=r"env.reset\(\) before"):
        env.randomize_episode_lengths()
    obs = env.reset()["obs", "policy"].clone()
    env.randomize_episode_lengths()
    start = env.episode_length.clone()
    assert int(start.min()) >= 0 and int(start.max()) < limit
    assert len(set(start.tolist())) == limit  # 64 draws cover the 10 steps
    assert torch.equal(env.get_observations()["obs", "policy"], obs)  # counters only
    # drawn from the seed: the same in another env of that seed, not in one of another seed
    again = unilab_envs.make(
        "cartpole-swingup", num_envs=n, device="cpu", seed=5, max_episode_steps=limit
    )
    again.reset()
    again.randomize_episode_lengths()
    assert torch.equal(again.episode_length, start)
    other = unilab_envs.make(
        "cartpole-swingup", num_envs=n, device="cpu", seed=6, max_episode_steps=limit
    )
    other.reset()
    other.randomize_episode_lengths()
    assert not torch.equal(other.episode_length, start)
    # each world's first time limit comes after limit - start steps, its length counted from
    # the drawn step; the next episodes run the whole limit
    ended_at = torch.full((n,), -1)
    for t in range(1, 2 * limit + 1):
        td = env.step(torch.zeros(n, 1))
        first = td["truncated"] & (ended_at < 0)
        ended_at[first] = t
        assert torch.equal(td["episode", "length"][first], torch.full((int(first.sum()),), 10.0))
        if t > limit:
            assert not bool(td["truncated"][ended_at == t - limit].logical_not().any())
    assert torch.equal(ended_at, limit - start.long())


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_random_episode_start_on_cuda_draws_as_on_cpu_and_the_graph_counts_on():
    # the draw is a function of (seed, counter, world): the CUDA env draws the CPU env's
    # lengths; the captured step then counts on from them
    def started(device):
        env = unilab_envs.make(
            "cartpole-swingup", num_envs=64, device=device, seed=5, max_episode_steps=10
        )
        env.reset()
        env.randomize_episode_lengths()
        return env, env.episode_length.clone().cpu()

    env, start = started("cuda")
    assert torch.equal(start, started("cpu")[1])
    for _ in range(3):
        td = env.step(torch.zeros(64, 1, device="cuda"))
    assert env.uses_cuda_graph
    done = (start + 3 >= 10).cpu()
    assert not bool((td["truncated"].cpu() & ~done).any())  # only worlds past their limit
    assert torch.equal(env.episode_length.cpu()[~done], (start + 3)[~done])


def test_termination_by_falling_pole_is_not_truncation():
    env = _make(max_episode_steps=500)
    env.reset()
    action = torch.ones(N, 1)  # full push: the pole falls back past 0.8 rad quickly
    for _ in range(200):
        td = env.step(action)
        if bool(td["done"].any()):
            break
    assert bool(td["terminated"].any()) and not bool(td["truncated"].any())
    d = td["done"]
    assert bool((td["episode", "length"][d] < 200).all())
    # a failure step pays -2 and no alive bonus
    assert bool((td["log", "terminated"][d] == -2.0).all()) and bool(
        (td["log", "alive"][d] == 0).all()
    )


def test_same_seed_same_numbers_other_seed_differs():
    a = _make().reset()["obs", "policy"]
    b = _make().reset()["obs", "policy"]
    c = unilab_envs.make("cartpole-balance", num_envs=N, seed=4).reset()["obs", "policy"]
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_resets_draw_new_numbers_each_time():
    env = _make()
    first = env.reset()["obs", "policy"].clone()
    second = env.reset()["obs", "policy"].clone()
    assert not torch.equal(first, second)  # the RNG counter advanced


def test_random_actions_hundreds_of_steps_without_nan():
    for name in ("cartpole-balance", "cartpole-swingup"):
        env = unilab_envs.make(name, num_envs=8, seed=0)
        env.reset()
        gen = torch.Generator().manual_seed(0)
        episodes = 0
        for _ in range(200):
            td = env.step(torch.rand(8, 1, generator=gen) * 2 - 1)
            for key in td.keys(include_nested=True, leaves_only=True):
                if td[key].is_floating_point():
                    assert bool(torch.isfinite(td[key]).all()), (name, key)
            episodes += int(td["done"].sum())
        assert episodes > 0


def test_bad_actions_and_names_raise_clear_errors():
    env = _make()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(torch.zeros(N, 1))
    env.reset()
    with pytest.raises(ValueError, match=r"action shape \(6, 2\)"):
        env.step(torch.zeros(N, 2))
    with pytest.raises(ValueError, match="NaN"):
        env.step(torch.tensor([[0.0], [float("nan")], [0.0], [0.0], [0.0], [0.0]]))
    with pytest.raises(TypeError, match=r"torch\.Tensor"):
        env.step(np.zeros((N, 1), np.float32))
    with pytest.raises(TypeError, match="floating"):
        env.step(torch.zeros(N, 1, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"unknown task 'cartpole-nope'.*cartpole-balance"):
        unilab_envs.make("cartpole-nope", num_envs=2)
    with pytest.raises(ValueError, match="no option"):
        unilab_envs.make("cartpole-balance", num_envs=2, wheels=4)
    with pytest.raises(ValueError, match="num_envs"):
        unilab_envs.make("cartpole-balance", num_envs=0)


def test_actions_are_clamped_to_unit_box():
    env = _make()
    env.reset()
    env.step(torch.full((N, 1), 7.0))
    assert torch.equal(wp.to_torch(env.ctx.data.ctrl), torch.ones(N, 1))


def test_fast_reset_matches_mujoco_warp_reset_data():
    env = _make()
    env.reset()
    for _ in range(3):
        env.step(torch.rand(N, 1))
    ctx = env.ctx
    mask = wp.array(np.array([1, 0, 1, 0, 0, 1], bool), dtype=wp.bool, device="cpu")
    fields = ("qpos", "qvel", "ctrl", "time", "qacc_warmstart", "qfrc_applied", "act")
    before = {f: wp.to_torch(getattr(ctx.data, f)).clone() for f in fields}
    with wp.ScopedDevice("cpu"):
        reset_state(ctx.model, ctx.data, mask, full=False)
        ours = {f: wp.to_torch(getattr(ctx.data, f)).clone() for f in fields}
        for f in fields:
            wp.to_torch(getattr(ctx.data, f)).copy_(before[f])
        mjw.reset_data(ctx.model, ctx.data, mask)
    for f in fields:
        assert torch.equal(ours[f], wp.to_torch(getattr(ctx.data, f))), f
    assert torch.equal(ours["qpos"][1], before["qpos"][1])  # unmasked world untouched
    assert torch.equal(ours["qpos"][0], torch.zeros(2))


def test_overflow_is_reported():
    env = _make(on_overflow="raise", overflow_check_interval=0)
    env.reset()
    env.step(torch.zeros(N, 1))
    assert env.check_overflow() == 0
    wp.to_torch(env.ctx.data.overflow)[2] = int(mjw._src.types.OverflowType.NEFC)
    env.step(torch.zeros(N, 1))
    with pytest.raises(RuntimeError, match=r"1 of 6 worlds overflowed MJWarp capacity \(NEFC\)"):
        env.check_overflow()
    warn_env = _make(on_overflow="warn", overflow_check_interval=1)
    warn_env.reset()
    wp.to_torch(warn_env.ctx.data.overflow)[0] = int(mjw._src.types.OverflowType.NARROWPHASE)
    with pytest.warns(RuntimeWarning, match="NARROWPHASE"):
        warn_env.step(torch.zeros(N, 1))


def test_solver_iteration_limits_are_not_capacity_overflows():
    env = _make(on_overflow="raise", overflow_check_interval=0)
    assert int(env.ctx.model.opt.warn_overflow) & int(mjw.OverflowType.LS_ITERATIONS) == 0
    env.reset()
    limit = int(mjw.OverflowType.LS_ITERATIONS) | int(mjw.OverflowType.ITERATIONS)
    for _ in range(2):
        wp.to_torch(env.ctx.data.overflow)[1] = limit
        env.step(torch.zeros(N, 1))
    opt = env.mjm.opt
    said = rf"1 of 6 worlds .* iteration limit \(opt.iterations={opt.iterations}, "
    said += rf"opt.ls_iterations={opt.ls_iterations}; first worlds \[1\]\)"
    with pytest.warns(RuntimeWarning, match=said):
        assert env.check_overflow() == 0  # no raise: nothing was dropped
    wp.to_torch(env.ctx.data.overflow)[1] = limit
    env.step(torch.zeros(N, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert env.check_overflow() == 0  # reported once only


def test_memory_and_attributes():
    env = _make()
    assert env.action_dim == 1 and env.observation_shapes == {"policy": (5,), "critic": (5,)}
    assert math.isclose(env.step_dt, 0.02) and env.max_episode_steps == 15
    mem = env.memory_bytes()
    assert mem["total"] == mem["model"] + mem["data"] + mem["env"]
    assert 0 < mem["per_env"] < 100_000
    assert "cartpole-balance" in unilab_envs.list_tasks()


def test_check_overrides_refuses_what_make_would_without_building():
    unilab_envs.check_overrides("cartpole-balance", max_episode_steps=50, on_overflow="raise")
    with pytest.raises(ValueError, match=r"has no option\(s\) \['pole_len'\]"):
        unilab_envs.check_overrides("cartpole-balance", pole_len=2.0)
    with pytest.raises(ValueError, match=r"'on_overflow' must be in"):
        unilab_envs.check_overrides("cartpole-balance", on_overflow="explode")
    with pytest.raises(ValueError, match=r"must be >= 0"):
        unilab_envs.check_overrides("cartpole-balance", overflow_check_interval=-1)
    with pytest.raises(ValueError, match=r"unknown task 'cartpole-balanse'"):
        unilab_envs.check_overrides("cartpole-balanse")


def test_deferred_action_check_raises_at_the_periodic_check():
    # On CUDA the finite check runs inside the captured step and is read every
    # overflow_check_interval steps; the same path is forced here on the CPU device.
    env = _make(overflow_check_interval=3)
    env._defer_action_check = True
    env.reset()
    nan = torch.zeros(N, 1)
    nan[4, 0] = float("nan")
    env.step(torch.zeros(N, 1))
    env.step(nan)  # no host read yet: the step runs
    with pytest.raises(ValueError, match=r"non-finite action.*steps 1-3 \(first world 4\)"):
        env.step(torch.zeros(N, 1))
    for _ in range(3):  # the flag was cleared: clean steps pass the next check
        env.step(torch.zeros(N, 1))
    off = _make(overflow_check_interval=3, check_actions=False)
    off._defer_action_check = True
    off.reset()
    for _ in range(3):
        off.step(nan)  # check_actions=False: never raises


def test_actions_are_clamped_inside_the_step():
    env = _make()
    env.reset()
    env.step(torch.tensor([[5.0], [-5.0], [0.5], [-0.25], [1.0], [-1.0]]))
    assert wp.to_torch(env.ctx.action).flatten().tolist() == [1.0, -1.0, 0.5, -0.25, 1.0, -1.0]


def test_step_outputs_are_contiguous_copies_or_live_views():
    env = _make()
    env.reset()
    first = env.step(torch.zeros(N, 1))
    keep = first.clone()
    second = env.step(torch.ones(N, 1))
    for key in first.keys(include_nested=True, leaves_only=True):
        assert first[key].is_contiguous(), key
        assert torch.equal(first[key], keep[key]), key  # the next step did not overwrite it
    assert not torch.equal(first["obs", "policy"], second["obs", "policy"])
    assert first["obs", "policy"].data_ptr() != second["obs", "policy"].data_ptr()
    live = _make(copy_outputs=False)
    obs0 = live.reset()["obs", "policy"]
    a = live.step(torch.zeros(N, 1))
    assert a["obs", "policy"].data_ptr() == obs0.data_ptr()  # views of the env's buffers
    b = live.step(torch.ones(N, 1))
    assert torch.equal(a["obs", "policy"], b["obs", "policy"])
    assert torch.equal(a["obs", "policy"], live.get_observations()["obs", "policy"])


def test_output_segments_hold_what_the_kernels_wrote():
    # The outputs are carved out of one byte buffer: every key must land on its own segment.
    env = _make(max_episode_steps=6)
    env.reset()
    g = torch.Generator().manual_seed(0)
    for _ in range(12):
        td = env.step(torch.rand(N, 1, generator=g) * 2 - 1)
        terms = torch.stack([td["log", k] for k in env.task.spec.log_terms])
        torch.testing.assert_close(terms.sum(0), td["reward"])  # balance: reward = sum of terms
        assert torch.equal(td["done"], td["terminated"] | td["truncated"])
        if bool(td["done"].any()):
            ended = td["done"]
            sums = torch.stack([td["episode", k] for k in env.task.spec.log_terms]).sum(0)
            torch.testing.assert_close(sums[ended], td["episode", "return"][ended])
            assert bool((td["episode", "length"][ended] >= 1).all())
            assert bool((td["episode", "return"][~ended] == 0).all())
    obs = env.get_observations()["obs"]
    assert torch.equal(obs["policy"], td["obs", "policy"])
    assert torch.equal(obs["critic"], td["obs", "critic"])
    assert bool(
        (td["obs", "policy"][:, 1] ** 2 + td["obs", "policy"][:, 2] ** 2 - 1).abs().max() < 1e-5
    )
