"""The velocity-tracking evaluator (`evaluate_tracking`, `unilab eval`), on CPU with few worlds."""

from __future__ import annotations

import json

import pytest
import torch

from unilab_integration import cli
from unilab_integration._mjlab import evaluate_tracking, load_policy_checkpoint

TASK = "go1-velocity-flat"
# every world standing (command 0), no heading control, 0.2 s episodes (10 steps, no push)
STANDING = {
    "rel_standing_envs": 1.0,
    "rel_heading_envs": 0.0,
    "heading_command": False,
    "episode_length_s": 0.2,
}


@pytest.fixture(scope="module")
def zero_policy(tmp_path_factory):
    """An MJLab-format checkpoint whose actor outputs 0 whatever it observes."""
    pytest.importorskip("rsl_rl")
    from test_integration_mjlab_checkpoint import _rsl_rl_checkpoint

    from unilab_envs.testing import mjlab_robot

    mjlab_robot("go1")
    path = tmp_path_factory.mktemp("zero") / "model_3.pt"
    _rsl_rl_checkpoint(path, TASK)
    raw = torch.load(path, weights_only=True)
    raw["actor_state_dict"]["mlp.6.weight"].zero_()
    raw["actor_state_dict"]["mlp.6.bias"].zero_()
    torch.save(raw, path)
    return path


def test_zero_policy_standing_error_is_the_speed(zero_policy):
    """Standing command, zero action: lin error = mean |v_xy|, yaw error = mean |w_z|, per
    episode over the observations acted on, then over the worlds' first episodes."""
    import unilab_envs

    n = 3
    result = evaluate_tracking(
        load_policy_checkpoint(zero_policy, TASK), num_envs=n, seed=5, env_kwargs=STANDING
    )
    assert (result.episodes, result.mean_length, result.time_limit_fraction) == (n, 10.0, 1.0)
    assert result.command_stage == (0, (-2.0, 3.0), (-0.7, 0.7))  # the final stage

    # by hand: the same worlds (same seed and options), zero actions, 10 observations each
    task = unilab_envs.make_task(TASK, **STANDING)
    env = unilab_envs.make(TASK, num_envs=n, seed=5, **{**task.full_range_overrides(), **STANDING})
    obs, lin, yaw = env.reset(), [], []
    for _ in range(10):
        t = env.task.velocity_tracking(obs)
        assert torch.equal(t["command"], torch.zeros(n, 3))
        lin.append(t["lin_vel"][:, :2].double().norm(dim=-1))
        yaw.append(t["ang_vel"][:, 2].double().abs())
        obs = env.step(torch.zeros(n, 12))
    assert bool(obs["truncated"].all())
    assert result.lin_vel_error == pytest.approx(
        float(torch.stack(lin).mean()), rel=1e-6
    )  # float32 norms there
    assert result.yaw_rate_error == pytest.approx(
        float(torch.stack(yaw).mean()), rel=1e-6
    )  # float32 norms there
    assert result.lin_vel_error > 0.0


def test_full_range_commands_exceed_the_first_stage():
    """The evaluator's env draws commands from the final stage, not the first (-1..1 m/s)."""
    import unilab_envs
    from unilab_envs.testing import mjlab_robot

    mjlab_robot("go1")
    task = unilab_envs.make_task(TASK)
    assert task.full_range_overrides() == {"command_stages": ((0, (-2.0, 3.0), (-0.7, 0.7)),)}
    env = unilab_envs.make(TASK, num_envs=32, seed=0, **task.full_range_overrides())
    vx = env.task.velocity_tracking(env.reset())["command"][:, 0]
    assert float(vx.max()) > 1.0 and float(vx.max()) <= 3.0 and float(vx.min()) >= -2.0


def test_unilab_eval_command_writes_json(zero_policy, tmp_path, capsys):
    out = tmp_path / "eval.json"
    kwargs = json.dumps({"episode_length_s": 0.1})
    argv = ["eval", str(zero_policy), "--task", TASK, "--num-envs", "2", "--env-kwargs", kwargs]
    assert cli.main([*argv, "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["episodes"] == 2 and data["mean_length"] == 5.0
    assert set(data) >= {"lin_vel_error", "yaw_rate_error", "time_limit_fraction", "mean_return"}
    assert "lin_vel_error" in capsys.readouterr().out
    # a checkpoint of another task is refused before anything runs (exit 2)
    assert cli.main(["eval", str(zero_policy), "--task", "g1-velocity-flat"]) == 2
