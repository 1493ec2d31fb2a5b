"""MJLab / RSL-RL checkpoints (`model_<it>.pt`) load into UniLab's policy with the same actions.

The checkpoints here are built with RSL-RL 5.4.2's own `MLPModel` (MJLab's actor and critic
config) and saved in `OnPolicyRunner.save`'s format. The same check against a checkpoint that
MJLab's train script wrote, loaded by MJLab's play path, is tools/parity/mjlab_policy_actions.py
+ compare_mjlab_policy.py (docs/integration.md, "MJLab checkpoints").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from unilab_integration import CheckpointError
from unilab_integration._mjlab import load_policy_checkpoint
from unilab_integration._restore import policy_from_checkpoint

DATA = Path(__file__).resolve().parents[2] / "packages/unilab-envs/tests/data/mjlab"
# task -> (actor obs, critic obs, actions): the task's observation_dims and action_dim
SIZES = {"go1-velocity-flat": (48, 72, 12), "g1-velocity-flat": (99, 111, 29)}


def _rsl_rl_checkpoint(path: Path, task: str, seed: int = 0):
    """An MJLab-shaped RSL-RL checkpoint (512-256-128 ELU, normalized obs, scalar std) with
    non-trivial normalizer statistics; returns RSL-RL's actor."""
    pytest.importorskip("rsl_rl")
    from rsl_rl.models import MLPModel
    from tensordict import TensorDict

    torch.manual_seed(seed)
    actor_dim, critic_dim, action_dim = SIZES[task]
    obs = TensorDict(
        {"actor": torch.zeros(2, actor_dim), "critic": torch.zeros(2, critic_dim)},
        batch_size=[2],
    )
    dist = {"class_name": "GaussianDistribution", "init_std": 1.0, "std_type": "scalar"}
    groups = {"actor": ["actor"], "critic": ["critic"]}
    actor = MLPModel(obs, groups, "actor", action_dim, (512, 256, 128), "elu", True, dist)
    critic = MLPModel(obs, groups, "critic", 1, (512, 256, 128), "elu", True, None)
    for model in (actor, critic):  # as after training: mean and std away from 0 and 1
        norm = model.obs_normalizer
        norm._mean.normal_()
        norm._std.uniform_(0.2, 3.0)
        norm._var.copy_(norm._std**2)
    torch.save(
        {
            "actor_state_dict": actor.state_dict(),
            "critic_state_dict": critic.state_dict(),
            "optimizer_state_dict": {},
            "iter": 3,
            "infos": {"env_state": {"common_step_counter": 72}},
        },
        path,
    )
    return actor.eval()


@pytest.mark.parametrize("task", sorted(SIZES))
def test_converted_actor_matches_rsl_rl(tmp_path, task):
    from tensordict import TensorDict

    path = tmp_path / "model_3.pt"
    actor = _rsl_rl_checkpoint(path, task)
    ckpt = load_policy_checkpoint(path, task=task)
    assert (ckpt["task"], ckpt["algo_name"], ckpt["iteration"]) == (task, "ppo", 3)
    policy, learner, _ = policy_from_checkpoint(ckpt)
    obs = torch.randn(64, SIZES[task][0], generator=torch.Generator().manual_seed(1)) * 3.0
    with torch.no_grad():
        want = actor(TensorDict({"actor": obs}, batch_size=[64]))
        got = policy(obs)
    assert torch.equal(got, want)
    # the normalizer and the std came along (not just the MLP)
    norm = learner.actor.obs_normalizer
    assert torch.equal(norm.mean, actor.obs_normalizer._mean.squeeze(0))
    assert torch.equal(learner.actor.std(), actor.distribution.std_param.detach())


def test_wrong_task_and_missing_task_are_named(tmp_path):
    path = tmp_path / "model_3.pt"
    _rsl_rl_checkpoint(path, "go1-velocity-flat")
    with pytest.raises(
        CheckpointError, match=r"48 observations to 12 outputs; task 'g1-velocity-flat' gives 99"
    ):
        load_policy_checkpoint(path, task="g1-velocity-flat")
    with pytest.raises(CheckpointError, match="does not record its task: name it with --task"):
        load_policy_checkpoint(path)
    bogus = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(1)}, bogus)
    with pytest.raises(CheckpointError, match="not a UniLab checkpoint"):
        load_policy_checkpoint(bogus, task="go1-velocity-flat")


@pytest.mark.parametrize(("fixture", "robot"), [("go1_flat", "go1"), ("g1_flat", "g1")])
def test_mjlab_action_order_is_the_task_joint_order(fixture, robot):
    """MJLab's JointPositionAction order (recorded by MJLab) is the task's joint order, so
    the converted actor's outputs need no permutation."""
    from unilab_envs.testing import mjlab_robot

    recorded = json.loads((DATA / f"{fixture}.json").read_text())["action"]["joint_names"]
    assert tuple(recorded) == tuple(mjlab_robot(robot).joint_names)
