"""FastSAC learner: config validation, update cadence, grad_sync calls, state round trip."""

from __future__ import annotations

import io

import pytest
import torch
from _capture_helpers import RefusingBackend
from _fastsac_helpers import ACT, OBS, env_step, flat_state, random_batch, small_config
from tensordict import TensorDict

from unilab_algos import CaptureMode
from unilab_algos.common import RerunBackend
from unilab_algos.fastsac import FastSAC, FastSACConfig


def test_defaults_are_holosoma():
    c = FastSACConfig()
    assert (c.gamma, c.tau, c.batch_size, c.num_updates, c.policy_frequency) == (
        0.97,
        0.125,
        8192,
        8,
        4,
    )
    assert (c.num_atoms, c.v_min, c.v_max, c.alpha_init) == (101, -20.0, 20.0, 1e-3)
    assert (c.target_entropy_ratio, c.transitions_per_env, c.num_q) == (0.0, 1024, 2)
    assert c.actor_hidden == (512, 256, 128) and c.critic_hidden == (768, 384, 192)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"batch_size": 0}, "batch_size"),
        ({"gamma": 1.5}, "gamma"),
        ({"v_min": 1.0, "v_max": 1.0}, "v_min"),
        ({"obs_norm_scope": "sometimes"}, "obs_norm_scope"),
        ({"actor_obs": ()}, "actor_obs"),
        ({"actor_hidden": ()}, "actor_hidden"),
        ({"betas": (0.9, 1.0)}, "betas"),
        ({"num_atoms": 1}, "num_atoms"),
    ],
)
def test_config_rejects_bad_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FastSACConfig(**kwargs)


def test_constructor_errors_name_the_cause():
    with pytest.raises(KeyError, match="critic"):
        FastSAC({"policy": (3,)}, ACT, small_config(), num_envs=2)
    with pytest.raises(ValueError, match="1-D"):
        FastSAC({"policy": (3, 2), "critic": (4,)}, ACT, small_config(), num_envs=2)
    with pytest.raises(ValueError, match="not divisible"):
        FastSAC(OBS, ACT, small_config(batch_size=33), num_envs=2, world_size=2)
    with pytest.raises(TypeError, match="FastSACConfig"):
        FastSAC(OBS, ACT, {"gamma": 0.9}, num_envs=2)
    learner = FastSAC(OBS, ACT, small_config(), num_envs=2)
    with pytest.raises(ValueError, match="num_updates"):
        learner.update(0)
    with pytest.raises(ValueError, match="actions"):
        learner.observe(
            env_step(2, torch.Generator()), torch.zeros(3, ACT), env_step(2, torch.Generator())
        )


def _filled(num_envs=4, steps=5, seed=0, **cfg):
    torch.manual_seed(seed)
    learner = FastSAC(OBS, ACT, small_config(**cfg), num_envs=num_envs)
    gen = torch.Generator().manual_seed(seed + 100)
    obs = env_step(num_envs, gen)
    for t in range(steps):
        step = env_step(num_envs, gen, done_every=3, t=t)
        learner.observe(obs, learner.act(obs), step)
        obs = step
    return learner


def test_act_range_and_policy_module():
    learner = _filled()
    obs = env_step(4, torch.Generator().manual_seed(5))
    a = learner.act(obs)
    assert a.shape == (4, ACT) and a.dtype == torch.float32
    assert bool((a.abs() <= 1).all())
    det = learner.act(obs, deterministic=True)
    torch.testing.assert_close(det, learner.policy_module()(obs["obs", "policy"]))
    # plain group TensorDict works too
    torch.testing.assert_close(learner.act(obs["obs"], deterministic=True), det)


def test_an_actor_of_two_groups_reads_them_concatenated():
    """`actor_obs` of two groups, as PPO's: each group normalized by its own normalizer, then
    concatenated; the policy module takes the raw groups concatenated in that order."""
    torch.manual_seed(0)
    cfg = small_config(actor_obs=("policy", "critic"), critic_obs=("critic", "policy"))
    learner = FastSAC(OBS, ACT, cfg, num_envs=4)
    assert learner.actor.obs_dim == 7 and set(learner.normalizers) == {"policy", "critic"}
    gen = torch.Generator().manual_seed(1)
    obs = env_step(4, gen)
    for t in range(6):  # statistics away from their initial values
        step = env_step(4, gen, done_every=3, t=t)
        learner.observe(obs, learner.act(obs), step)
        obs = step
    assert learner.update()["updates"] > 0
    raw = torch.cat([obs["obs", "policy"], obs["obs", "critic"]], dim=-1)
    torch.testing.assert_close(learner.policy_module()(raw), learner.act(obs, deterministic=True))
    swapped = torch.cat([obs["obs", "critic"], obs["obs", "policy"]], dim=-1)[:, :7]
    assert not torch.allclose(
        learner.policy_module()(swapped), learner.act(obs, deterministic=True)
    )


def test_capture_status_on_cpu():
    off = FastSAC(OBS, ACT, small_config(capture=False), num_envs=4)
    assert off.capture_status["update"].mode is CaptureMode.OFF
    on = FastSAC(OBS, ACT, small_config(capture=True), num_envs=4)
    assert str(on.capture_status["update"]) == "eager: CUDA graphs need a CUDA device, got cpu"


def _eager_and_captured(backend, **cfg):
    out = []
    for capture, b in ((False, None), (True, backend)):
        torch.manual_seed(0)
        config = small_config(capture=capture, capture_warmup=2, **cfg)
        out.append(FastSAC(OBS, ACT, config, num_envs=4, graph_backend=b))
    return out


@pytest.mark.parametrize("distributional", [True, False])
def test_captured_path_equals_eager_bitwise(distributional):
    """Static batch inputs, per-half warm-up, capture and replays (bodies re-run where CUDA
    would replay them) give the eager learner's updates bit for bit."""
    backend = RerunBackend()
    eager, captured = _eager_and_captured(backend, distributional=distributional)
    assert captured.capture_status["update"].mode is CaptureMode.PENDING
    gen = torch.Generator().manual_seed(1)
    for _ in range(4):
        batch = random_batch(4, 32, gen)
        assert eager.update_from_batch(batch) == captured.update_from_batch(batch)
    assert captured.capture_status["update"].mode is CaptureMode.CAPTURED
    # 16 updates, the actor on every 2nd: each of the 4 bodies warms up twice, then captures
    assert backend.calls == {"warmup": 8, "capture": 4, "replay": 2 * (8 - 3) + 2 * (8 - 3)}
    se, sc = flat_state(eager), flat_state(captured)
    assert se.keys() == sc.keys()
    for k in se:
        assert torch.equal(se[k], sc[k]), k
    captured.load_state_dict(captured.state_dict())
    assert captured.capture_status["update"].mode is CaptureMode.PENDING


def test_a_failed_capture_falls_back_to_eager_with_the_reason():
    eager, captured = _eager_and_captured(
        RefusingBackend("", "graph capture is not supported here")
    )
    gen = torch.Generator().manual_seed(2)
    with pytest.warns(UserWarning, match="FastSAC update CUDA graphs off, running eagerly"):
        for _ in range(2):
            batch = random_batch(4, 32, gen)
            assert eager.update_from_batch(batch) == captured.update_from_batch(batch)
    status = captured.capture_status["update"]
    assert status.mode is CaptureMode.FALLBACK
    assert "graph capture is not supported here" in status.reason
    batch = random_batch(4, 32, gen)
    assert eager.update_from_batch(batch) == captured.update_from_batch(batch)
    for k, v in flat_state(eager).items():
        assert torch.equal(v, flat_state(captured)[k]), k


def test_update_waits_for_learning_starts():
    learner = _filled(steps=2, learning_starts=3)
    assert learner.update() == {"updates": 0.0, "collectives": 0.0}
    assert learner.critic_updates == 0


class CountingSync:
    """A grad_sync that averages nothing but records which parameters it was given."""

    def __init__(self):
        self.calls: list[tuple[int, bool]] = []

    def __call__(self, params, extra):
        params = list(params)
        assert all(p.grad is not None for p in params)
        self.calls.append((len(params), extra is not None))
        return extra


def test_update_cadence_and_fused_grad_sync():
    sync = CountingSync()
    torch.manual_seed(0)
    learner = FastSAC(
        OBS, ACT, small_config(num_updates=8, policy_frequency=4), num_envs=4, grad_sync=sync
    )
    gen = torch.Generator().manual_seed(0)
    m = learner.update_from_batch(random_batch(8, 16, gen))
    n_critic = len(list(learner.critic.parameters()))
    n_actor = len(list(learner.actor.parameters())) + 1  # + log_alpha
    # 8 critic updates, one collective each; on updates 4 and 8 critic+actor+alpha fused.
    expected = [(n_critic, False)] * 3 + [(n_critic + n_actor, False)]
    expected += [(n_critic, False)] * 3 + [(n_critic + n_actor, True)]  # metrics ride the last
    assert sync.calls == expected
    assert (m["updates"], m["actor_updates"], m["collectives"]) == (8.0, 2.0, 8.0)
    assert (learner.critic_updates, learner.actor_updates) == (8, 2)
    m = learner.update_from_batch(random_batch(4, 16, gen))  # updates 9..12: 12 is an actor one
    assert m["actor_updates"] == 1.0 and learner.actor_updates == 3


def test_targets_follow_polyak_and_actor_only_on_actor_steps():
    torch.manual_seed(0)
    learner = FastSAC(OBS, ACT, small_config(policy_frequency=2, tau=0.5), num_envs=4)
    actor0 = [p.detach().clone() for p in learner.actor.parameters()]
    tgt0 = [p.detach().clone() for p in learner.critic_target.parameters()]
    learner.update_from_batch(random_batch(1, 16, torch.Generator().manual_seed(1)))
    # update 1 is critic-only: actor untouched; target = 0.5 * (old target + new critic)
    for a, b in zip(actor0, learner.actor.parameters(), strict=True):
        assert torch.equal(a, b)
    for t0, t, c in zip(
        tgt0, learner.critic_target.parameters(), learner.critic.parameters(), strict=True
    ):
        torch.testing.assert_close(t, 0.5 * (t0 + c))
    learner.update_from_batch(random_batch(1, 16, torch.Generator().manual_seed(2)))
    assert any(
        not torch.equal(a, b) for a, b in zip(actor0, learner.actor.parameters(), strict=True)
    )


def test_temperature_moves_toward_target_entropy():
    torch.manual_seed(0)
    # Initial std is exp(-2.5) per dim: entropy far below a target of +1 per dim -> alpha grows.
    learner = FastSAC(
        OBS,
        ACT,
        small_config(policy_frequency=1, target_entropy_ratio=-1.0, alpha_lr=1e-2),
        num_envs=4,
    )
    a0 = learner.alpha
    learner.update_from_batch(random_batch(5, 16, torch.Generator().manual_seed(3)))
    assert learner.alpha > a0
    assert learner.state.target_entropy == 2.0


@pytest.mark.parametrize("distributional", [True, False])
def test_state_round_trip(distributional):
    a = _filled(seed=0, distributional=distributional)
    for _ in range(3):
        a.update()
    buf = io.BytesIO()
    torch.save(a.state_dict(include_replay=True), buf)
    buf.seek(0)
    b = _filled(seed=7, steps=1, distributional=distributional)
    b.load_state_dict(torch.load(buf, weights_only=True))
    assert (b.env_steps, b.critic_updates, b.actor_updates) == (5, 12, 6)
    sa, sb = flat_state(a), flat_state(b)
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    ma, mb = a.update(), b.update()  # same generator state and replay -> identical updates
    assert ma == mb
    sa, sb = flat_state(a), flat_state(b)
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_load_rejects_incomplete_or_mismatched_state():
    a = _filled()
    state = a.state_dict()
    del state["critic_target"]
    with pytest.raises(KeyError, match="critic_target"):
        a.load_state_dict(state)
    other = FastSAC({"policy": (5,), "critic": (4,)}, ACT, small_config(), num_envs=4)
    with pytest.raises(RuntimeError, match="size mismatch"):
        other.load_state_dict(a.state_dict())


def test_observe_uses_final_obs_and_normalizers_update():
    learner = _filled(steps=0)
    gen = torch.Generator().manual_seed(0)
    obs, step = env_step(4, gen), env_step(4, gen)
    learner.observe(obs, torch.zeros(4, ACT), step)
    stored = learner.replay.data[0]
    assert torch.equal(stored["next_obs", "policy"], step["final_obs", "policy"])
    assert torch.equal(stored["obs", "critic"], obs["obs", "critic"])
    norm = learner.normalizers["policy"]
    assert int(norm.count) == 4
    torch.testing.assert_close(norm.mean.float(), obs["obs", "policy"].mean(0))
    assert learner.env_steps == 1
    assert len(learner.replicated_modules()) == 6  # actor, critic, target, alpha, 2 normalizers
    bad = step.exclude(("final_obs", "critic"), ("obs", "critic"))
    with pytest.raises(KeyError, match="critic"):
        learner.observe(obs, torch.zeros(4, ACT), bad)


def test_step_td_shape_errors():
    learner = _filled(steps=0)
    td = TensorDict({"obs": {"policy": torch.zeros(4, 3)}}, [4])
    with pytest.raises(KeyError, match="critic"):
        learner.observe(td, torch.zeros(4, ACT), env_step(4, torch.Generator()))
