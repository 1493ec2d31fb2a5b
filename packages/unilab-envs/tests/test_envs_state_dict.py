"""`VecEnv.state_dict` / `load_state_dict`: a restored env continues bit for bit (CPU)."""

from __future__ import annotations

import contextlib
import io

import pytest
import torch

import unilab_envs
from unilab_envs import DomainRandomization

_FULL_DR = DomainRandomization(
    friction_scale=(0.5, 1.25),
    mass_scale=(0.8, 1.2),
    actuator_gain_scale=(0.9, 1.1),
    push_joint="root",
    push_velocity=(0.5, 0.5),
    push_interval_s=(0.02, 0.1),  # a push every 1-5 control steps
)


def _actions(env, steps: int, seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(env.num_envs, env.action_dim, generator=g) * 2 - 1 for _ in range(steps)]


def _run(env, actions) -> list:
    return [env.step(a) for a in actions]


def _assert_same(a, b) -> None:
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        for key in x.keys(include_nested=True, leaves_only=True):
            assert torch.equal(x[key], y[key]), (i, key)


@pytest.mark.parametrize(
    ("name", "kwargs", "warm", "steps"),
    [
        # short episodes: resets happen inside the compared window; a curriculum is saved too
        ("cartpole-balance", {"max_episode_steps": 9, "curriculum": True}, 5, 20),
        # per-world friction, masses and gains redrawn at the resets of 5-step episodes, frequent
        # pushes, foot contacts
        ("quadruped-velocity", {"randomization": _FULL_DR, "episode_length_s": 0.1}, 3, 12),
    ],
)
def test_restored_env_continues_bit_for_bit(name, kwargs, warm, steps):
    env = unilab_envs.make(name, num_envs=5, seed=11, **kwargs)
    env.reset()
    _run(env, _actions(env, warm, seed=1))
    if env.curriculum is not None:
        env.curriculum.load_state_dict({"index": 2, "num_levels": 5})
    saved_obs = env.get_observations()
    buf = io.BytesIO()
    torch.save(env.state_dict(), buf)  # through a file, as a checkpoint would
    actions = _actions(env, steps, seed=2)
    first = _run(env, actions)
    assert any(bool(td["done"].any()) for td in first)  # resets inside the window

    # the same env, rewound
    buf.seek(0)
    state = torch.load(buf, weights_only=True)
    env.load_state_dict(state)
    _assert_same(first, _run(env, actions))

    # a fresh env with the same config, as after a restart
    other = unilab_envs.make(name, num_envs=5, seed=11, **kwargs)
    other.reset()
    other.load_state_dict(state)
    restored = other.get_observations()  # the observation of the saved moment
    for key in saved_obs.keys(include_nested=True, leaves_only=True):
        assert torch.equal(restored[key], saved_obs[key]), key
    _assert_same(first, _run(other, actions))
    if env.curriculum is not None:
        assert other.curriculum.state_dict() == {"index": 2, "num_levels": 5}


def test_state_dict_refuses_what_does_not_fit():
    env = unilab_envs.make("cartpole-balance", num_envs=4, seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        env.state_dict()
    env.reset()
    state = env.state_dict()
    bigger = unilab_envs.make("cartpole-balance", num_envs=6, seed=0)
    bigger.reset()
    with pytest.raises(ValueError, match="4 envs does not fit"):
        bigger.load_state_dict(state)
    swing = unilab_envs.make("cartpole-swingup", num_envs=4, seed=0)
    swing.reset()
    with pytest.raises(ValueError, match="cartpole-balance"):
        swing.load_state_dict(state)
    with pytest.raises(ValueError, match="lacks 'arrays'"):
        env.load_state_dict({"task": "cartpole-balance", "num_envs": 4})
    broken = dict(state, arrays=dict(state["arrays"]))
    broken["arrays"].pop("data.qpos")
    with pytest.raises(ValueError, match=r"data\.qpos"):
        env.load_state_dict(broken)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_graph_survives_a_restore_and_flags_nan_actions_later():
    # On CUDA the control step is a captured graph: load_state_dict writes in place, so the
    # same graph continues from the restored state; NaN actions are flagged inside the graph
    # and raised at the next periodic check (every 4 steps here), not at the step itself.
    env = unilab_envs.make(
        "cartpole-balance", num_envs=256, device="cuda", seed=4, overflow_check_interval=4
    )
    env.reset()
    warm = [a.cuda() for a in _actions(env, 3, seed=1)]
    _run(env, warm)
    assert env.uses_cuda_graph
    state = env.state_dict()
    actions = [a.cuda() for a in _actions(env, 8, seed=2)]
    first = [td.clone() for td in _run(env, actions)]
    env.load_state_dict(state)
    again = _run(env, actions)
    for x, y in zip(first, again, strict=True):  # no contacts: the replay is deterministic
        for key in x.keys(include_nested=True, leaves_only=True):
            torch.testing.assert_close(x[key], y[key], rtol=1e-6, atol=1e-6)
    bad = torch.zeros(256, 1, device="cuda")
    bad[17, 0] = float("nan")
    while env._steps % 4 != 3:
        env.step(torch.zeros(256, 1, device="cuda"))
    with pytest.raises(ValueError, match=r"first world 17"):
        env.step(bad)  # the 4th step since the last check: the check runs after it


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_graph_replays_in_order_on_the_callers_stream():
    # The captured step is replayed on the caller's current torch stream (no cross-stream
    # wait): on a side stream, with each action written by a slow kernel just before the step,
    # the outputs equal those of the same steps on the default stream.
    def run(stream: torch.cuda.Stream | None) -> list:
        env = unilab_envs.make("cartpole-balance", num_envs=256, device="cuda", seed=6)
        env.reset()
        outs = []
        big = torch.randn(2048, 2048, device="cuda")
        ctx = torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()
        with ctx:
            for a in _actions(env, 12, seed=8):
                action = torch.empty(256, 1, device="cuda")
                # a slow producer: the action is only ready after this matmul
                action.copy_((big @ big)[:256, :1] * 0 + a.cuda())
                outs.append(env.step(action))
            assert env.uses_cuda_graph
            torch.cuda.current_stream().synchronize()
        return outs

    side = run(torch.cuda.Stream())
    default = run(None)
    for x, y in zip(side, default, strict=True):
        for key in x.keys(include_nested=True, leaves_only=True):
            torch.testing.assert_close(x[key], y[key], rtol=0, atol=0)
