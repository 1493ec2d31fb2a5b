"""`runner.eval.interval`'s evaluator, in one process on CPU: it plays the learner's current
deterministic policy, one episode per world, at the training env's curriculum level."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from unilab_dist import DistContext
from unilab_integration import apply_overrides, make_config
from unilab_integration._play import play_episodes
from unilab_integration._rollout import PolicyStepper
from unilab_integration._runners import OffPolicyRunner, OnPolicyRunner
from unilab_integration._runners._eval import eval_means

_GRU = ['algo.actor.rnn_type="gru"', 'algo.critic.rnn_type="gru"', "algo.actor.rnn_hidden=8"]
CASES = {
    "ppo": ("ppo", OnPolicyRunner, []),
    "ppo-gru": ("ppo", OnPolicyRunner, [*_GRU, "algo.critic.rnn_hidden=8"]),
    "fastsac": ("fastsac", OffPolicyRunner, ["algo.capture=false"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_evaluation_plays_the_current_parameters(case, tmp_path):
    algo, runner_cls, more = CASES[case]
    cfg = apply_overrides(
        make_config("cartpole-balance", algo),
        ["env.num_envs=4", "runner.eval.interval=1", "runner.eval.envs=5", *more],
    )
    runner = runner_cls(cfg, DistContext(), tmp_path)
    evaluator = runner.evaluator
    evaluator.env.reset()
    start = evaluator.env.state_dict()  # each evaluation draws new initial states: pin them
    first = evaluator.run()
    evaluator.env.load_state_dict(start)
    again = evaluator.run()
    assert {**again, "perf/eval_s": 0} == {**first, "perf/eval_s": 0}  # same params, same play
    assert first["eval/count"] == 5 and first["eval/length_sum"] <= 5 * 500
    means = eval_means({k: v for k, v in first.items() if k != "perf/eval_s"})
    terms = sum(v for k, v in means.items() if k.startswith("eval_term/"))
    assert math.isclose(terms, means["eval/return"], rel_tol=1e-5, abs_tol=1e-5)
    # the policy's output layer moved: the evaluation must see it (no stale copy)
    actor = runner.learner.actor  # the layer that gives the action mean
    last = (
        actor.mu
        if algo == "fastsac"
        else [m for m in actor.modules() if isinstance(m, torch.nn.Linear)][-1]
    )
    with torch.no_grad():
        last.bias.add_(0.9)
    evaluator.env.load_state_dict(start)
    assert evaluator.run()["eval/return_sum"] != first["eval/return_sum"]
    # the same checkpoint plays (recurrent ones too)
    played = play_episodes(runner.save(), episodes=3, num_envs=3, seed=1)
    assert len(played.returns) == 3 and all(math.isfinite(r) for r in played.returns)


def test_eval_means_of_no_episodes_are_nan() -> None:
    means = eval_means({"eval/count": 0.0, "eval/return_sum": 0.0, "eval_term/alive_sum": 0.0})
    assert means["eval/count"] == 0.0 and math.isnan(means["eval/return"])
    assert math.isnan(means["eval_term/alive"])


@pytest.mark.parametrize("rnn", [nn.GRU, nn.LSTM])
def test_the_stepper_carries_a_recurrent_state_like_training(rnn):
    from unilab_algos.common.config import GaussianConfig, NetworkConfig
    from unilab_algos.common.models import GaussianActor
    from unilab_algos.ppo.networks import ExportRecurrentPolicy

    kind = "gru" if rnn is nn.GRU else "lstm"
    torch.manual_seed(0)
    net = NetworkConfig(hidden=(8,), rnn_type=kind, rnn_hidden=5)
    actor = GaussianActor(3, 2, net, GaussianConfig())
    stepper = PolicyStepper(ExportRecurrentPolicy(actor), num_envs=4, device="cpu")
    actor.reset(None)
    done = torch.tensor([False, True, False, True])
    with torch.no_grad():
        for t in range(5):
            x = torch.randn(4, 3)
            torch.testing.assert_close(stepper(x), actor(x), rtol=1e-6, atol=1e-6)
            if t == 2:  # two worlds end their episode: both start the next one from zero
                stepper.reset(done)
                actor.reset(done)
