"""`unilab play` and the runner's evaluator clamp the policy's actions as the task does:
to [-b, b] with b = `TaskSpec.action_bound`, not at all when it is None (MJLab's tasks)."""

from __future__ import annotations

import attrs
import pytest
import torch

import unilab_envs
from unilab_dist import DistContext
from unilab_envs import VecEnv
from unilab_envs.tasks.cartpole import make_cartpole_balance
from unilab_integration import apply_overrides, make_config
from unilab_integration._play import play_episodes
from unilab_integration._runners import OnPolicyRunner

UNBOUNDED = "cartpole-unbounded-test"
MEAN = 3.0  # the deterministic action every world plays (outside [-1, 1])


def _unbounded_cartpole(**overrides):
    task = make_cartpole_balance(**overrides)
    task.spec = attrs.evolve(task.spec, name=UNBOUNDED, action_bound=None)
    return task


@pytest.fixture(autouse=True)
def _registered():
    unilab_envs.register_task(UNBOUNDED, _unbounded_cartpole, overwrite=True)


@pytest.fixture
def stepped(monkeypatch):
    """Every action tensor passed to `VecEnv.step`, by task name."""
    seen: dict[str, list[torch.Tensor]] = {}
    step = VecEnv.step

    def recording(self, action):
        seen.setdefault(self.task.spec.name, []).append(action.detach().clone())
        return step(self, action)

    monkeypatch.setattr(VecEnv, "step", recording)
    return seen


@pytest.mark.parametrize(("task", "bound"), [(UNBOUNDED, None), ("cartpole-balance", 1.0)])
def test_play_and_the_evaluator_use_the_task_action_bound(task, bound, stepped, tmp_path):
    cfg = apply_overrides(
        make_config(task, "ppo"),
        ["env.num_envs=2", "runner.eval.interval=1", "runner.eval.envs=2"],
    )
    runner = OnPolicyRunner(cfg, DistContext(), tmp_path)
    last = [m for m in runner.learner.actor.modules() if isinstance(m, torch.nn.Linear)][-1]
    with torch.no_grad():  # the action mean is MEAN whatever the observation
        last.weight.zero_()
        last.bias.fill_(MEAN)
    want = MEAN if bound is None else bound
    runner.evaluator.run()
    actions = torch.stack(stepped.pop(task))
    assert torch.all(actions == want), f"evaluator: {actions.unique().tolist()}"
    play_episodes(runner.save(), episodes=1, num_envs=2, seed=1, max_steps=5)
    actions = torch.stack(stepped.pop(task))
    assert torch.all(actions == want), f"play: {actions.unique().tolist()}"
