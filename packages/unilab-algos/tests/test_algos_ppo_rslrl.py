"""The `rsl_rl` preset against RSL-RL 5.4.2 itself: identical parameters after full updates."""

from __future__ import annotations

import copy

import pytest
import torch
from _ppo_helpers import obs_td, scripted_rollout, step_td
from tensordict import TensorDict

rsl_rl = pytest.importorskip("rsl_rl")
from rsl_rl.algorithms import PPO as RslPPO  # noqa: E402
from rsl_rl.models import MLPModel, RNNModel  # noqa: E402
from rsl_rl.storage import RolloutStorage as RslStorage  # noqa: E402

from unilab_algos import PPO, NetworkConfig, PPOConfig, convert_rsl_rl_state_dict  # noqa: E402

N, T, A = 10, 7, 3


DIMS = {"policy": 5, "critic": 6}


def _rsl_models(rnn_type: str | None):
    obs = TensorDict({k: torch.zeros(N, d) for k, d in DIMS.items()}, batch_size=[N])
    groups = {"actor": ["policy"], "critic": ["critic"]}
    kw = dict(hidden_dims=[16, 8], activation="elu", obs_normalization=True)
    dist = {"class_name": "GaussianDistribution", "init_std": 1.0, "std_type": "scalar"}
    if rnn_type is None:
        actor = MLPModel(obs, groups, "actor", A, distribution_cfg=dist, **kw)
        critic = MLPModel(obs, groups, "critic", 1, **kw)
    else:
        rkw = dict(rnn_type=rnn_type, rnn_hidden_dim=8, rnn_num_layers=1)
        actor = RNNModel(obs, groups, "actor", A, distribution_cfg=dist, **kw, **rkw)
        critic = RNNModel(obs, groups, "critic", 1, **kw, **rkw)
    storage = RslStorage("rl", N, T, obs, [A])
    return actor, critic, storage


def _run_pair(rnn_type: str | None, iterations: int, schedule: str = "adaptive", **over):
    torch.manual_seed(0)
    actor, critic, storage = _rsl_models(rnn_type)
    ref = RslPPO(actor, critic, storage, learning_rate=1e-3, schedule=schedule, **over)
    net = NetworkConfig(hidden=(16, 8), rnn_type=rnn_type, rnn_hidden=8)
    cfg = PPOConfig.rsl_rl(actor=net, critic=net, schedule=schedule, **_map(over))
    ours = PPO({k: (d,) for k, d in DIMS.items()}, A, cfg)
    ours.actor.load_state_dict(convert_rsl_rl_state_dict(actor.state_dict()))
    ours.critic.load_state_dict(convert_rsl_rl_state_dict(critic.state_dict()))
    ours.init_storage(N, T)
    metrics = []
    for it in range(iterations):
        obs, rew, dones, touts = scripted_rollout(N, T, DIMS, seed=100 + it)
        results = []
        for learner in (ref, ours):
            torch.manual_seed(1000 + it)
            learner.train_mode()
            with torch.inference_mode():
                for t in range(T):
                    if learner is ref:
                        learner.act(TensorDict({k: v[t] for k, v in obs.items()}, [N]))
                        nxt = TensorDict({k: v[t + 1] for k, v in obs.items()}, [N])
                        learner.process_env_step(nxt, rew[t], dones[t], {"time_outs": touts[t]})
                    else:
                        learner.act(obs_td(obs, t))
                        learner.process_env_step(step_td(obs, rew, dones, touts, t))
                last = (
                    TensorDict({k: v[T] for k, v in obs.items()}, [N])
                    if learner is ref
                    else obs_td(obs, T)
                )
                learner.compute_returns(last)
            results.append(learner.update())
        metrics.append(results)
    return ref, ours, metrics


def _map(over: dict) -> dict:
    names = {
        "use_clipped_value_loss": "use_clipped_value_loss",
        "normalize_advantage_per_mini_batch": "advantage_norm_per_mini_batch",
    }
    return {names[k]: v for k, v in over.items()}


def _assert_same(ref, ours):
    ra = convert_rsl_rl_state_dict(ref.actor.state_dict())
    rc = convert_rsl_rl_state_dict(ref.critic.state_dict())
    for mine, theirs in ((ours.actor.state_dict(), ra), (ours.critic.state_dict(), rc)):
        assert mine.keys() == theirs.keys()
        for k in mine:
            assert torch.equal(mine[k], theirs[k]), k
    assert ours.learning_rate == ref.learning_rate
    s_ref = ref.optimizer.state_dict()["state"]
    s_our = ours.optimizer.state_dict()["state"]
    assert s_ref.keys() == s_our.keys()
    for i in s_ref:
        for k in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(s_ref[i][k], s_our[i][k])


@pytest.mark.parametrize("schedule", ["adaptive", "fixed"])
def test_feed_forward_matches_rsl_rl_bitwise(schedule):
    ref, ours, metrics = _run_pair(None, iterations=2, schedule=schedule)
    _assert_same(ref, ours)
    for r, o in metrics:
        for k in ("value", "surrogate", "entropy"):
            assert r[k] == o[k], k
        assert o["mini_batches"] == 20 and o["collectives"] == 0
    if schedule == "adaptive":
        assert ours.learning_rate != 1e-3  # the KL rule fired at least once


def test_feed_forward_variants_match_rsl_rl():
    ref, ours, _ = _run_pair(
        None, iterations=1, use_clipped_value_loss=False, normalize_advantage_per_mini_batch=True
    )
    _assert_same(ref, ours)


@pytest.mark.parametrize("rnn_type", ["gru", "lstm"])
def test_recurrent_matches_rsl_rl_bitwise(rnn_type):
    ref, ours, metrics = _run_pair(rnn_type, iterations=2)
    _assert_same(ref, ours)
    for r, o in metrics:
        for k in ("value", "surrogate", "entropy"):
            assert r[k] == o[k], k


def test_normalizer_stats_match_after_rollout():
    ref, ours, _ = _run_pair(None, iterations=1)
    assert int(ours.actor.obs_normalizer.count) == N * T
    assert torch.equal(ours.actor.obs_normalizer.std, ref.actor.obs_normalizer._std[0])
    assert copy.deepcopy(ours.critic.obs_normalizer.mean).dtype == torch.float32
