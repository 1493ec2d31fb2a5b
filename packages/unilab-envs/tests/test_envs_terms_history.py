"""Observation history of terms: the last H frames, oldest first, advanced once per step,
filled with the first frame after a reset, carried by `state_dict` (MJLab's history_length)."""

from __future__ import annotations

import pytest
import torch
import warp as wp

from unilab_envs import EnvConfig, VecEnv, mdp, terms
from unilab_envs.tasks import robots
from unilab_envs.tasks.term_task import TermTask, TermTaskConfig
from unilab_envs.terms import EnvState

N, H = 2, 3


@wp.struct
class StepParams:
    per_step: wp.array(dtype=float)


@terms.term(size="per_step")
@wp.func
def scaled_steps(w: int, k: int, s: EnvState, p: StepParams) -> float:
    return p.per_step[k] * float(s.episode_length[w])


def _steps(history: int = 0) -> terms.ObservationTerm:
    return terms.ObservationTerm(
        func=scaled_steps, params={"per_step": [1.0, -2.0]}, history_length=history
    )


def _env(group_history: int | None = None, history: int = H) -> VecEnv:
    policy = {
        "gravity": terms.ObservationTerm(func=mdp.projected_gravity),
        "steps": _steps(history),
    }
    config = TermTaskConfig(
        episode_length_s=0.1,  # 5 steps
        observations={
            "policy": terms.ObservationGroup(terms=policy, history_length=group_history),
            "critic": terms.ObservationGroup(terms={"steps": _steps()}),
        },
        rewards={"alive": terms.RewardTerm(func=mdp.is_alive, weight=1.0)},
        terminations={"time_out": terms.TerminationTerm(func=mdp.time_out, time_out=True)},
    )
    task = TermTask(robots.quadruped(), config, "quadruped-history")
    return VecEnv(task, EnvConfig(num_envs=N, device="cpu", seed=3))


def frames(obs: torch.Tensor) -> list[list[float]]:
    """The steps term's frames (oldest first) of world 0: its k=0 values."""
    return obs[0, 3:].reshape(H, 2)[:, 0].tolist()


def test_frames_are_oldest_first_filled_after_reset_and_advanced_once_per_step():
    env = _env()
    assert env.task.spec.observation_dims == {"policy": 3 + 2 * H, "critic": 2}
    obs = env.reset()["obs", "policy"]
    assert frames(obs) == [0.0, 0.0, 0.0]
    seen = []
    for _ in range(5):
        td = env.step(torch.zeros(N, env.action_dim))
        seen.append((frames(td["final_obs", "policy"]), frames(td["obs", "policy"])))
        # the frames of one step: k=1 is -2 x k=0
        steps = td["obs", "policy"][0, 3:].reshape(H, 2)
        torch.testing.assert_close(steps[:, 1], -2.0 * steps[:, 0])
    assert [obs for _, obs in seen[:4]] == [[0, 0, 1], [0, 1, 2], [1, 2, 3], [2, 3, 4]]
    # the time-out at step 5: the final observation continues the history, the next one
    # starts over, filled with the first frame of the new episode
    assert seen[4] == ([3.0, 4.0, 5.0], [0.0, 0.0, 0.0])
    assert td["done"].all()
    td = env.step(torch.zeros(N, env.action_dim))
    assert frames(td["obs", "policy"]) == [0.0, 0.0, 1.0]


def test_the_group_setting_replaces_the_terms_and_deployment_names_the_history():
    env = _env(group_history=H, history=0)  # the group's H over the term's 0
    assert env.task.spec.observation_dims["policy"] == H * (3 + 2)
    assert env.task.terms.history == {"policy": {"gravity": H, "steps": H}, "critic": {}}
    info = env.task.deployment_info()["observations"]
    assert [(e["name"], e["size"], e.get("history_length")) for e in info["policy"]] == [
        ("gravity", 3 * H, H),
        ("steps", 2 * H, H),
    ]
    assert "history_length" not in info["critic"][0]
    obs = env.reset()["obs", "policy"]
    gravity = obs[:, : 3 * H].reshape(N, H, 3)
    torch.testing.assert_close(gravity, gravity[:, -1:].expand(N, H, 3))  # filled at reset
    assert torch.allclose(gravity[:, -1], torch.tensor([0.0, 0.0, -1.0]), atol=1e-3)


def test_the_history_is_state_carried_by_name():
    env = _env()
    env.reset()
    for _ in range(2):
        env.step(torch.zeros(N, env.action_dim))
    saved = env.state_dict()
    key = "task.terms.observations.policy.steps.history"
    assert key in saved["arrays"]
    expected = frames(env.step(torch.zeros(N, env.action_dim))["obs", "policy"])
    env.step(torch.zeros(N, env.action_dim))
    env.load_state_dict(saved)
    assert (
        frames(env.step(torch.zeros(N, env.action_dim))["obs", "policy"])
        == expected
        == [
            1.0,
            2.0,
            3.0,
        ]
    )


def test_observe_stays_one_launch_with_history(monkeypatch):
    env = _env()
    env.reset()
    real, launched = wp.launch, []

    def counted(kernel, *args, **kwargs):
        launched.append(kernel.key)
        return real(kernel, *args, **kwargs)

    monkeypatch.setattr(wp, "launch", counted)
    env.task.observe(env.ctx, env._obs)
    env.task.reset_worlds(env.ctx, env._all)
    monkeypatch.setattr(wp, "launch", real)
    assert launched.count("observe_terms") == 1 and launched.count("reset_terms") == 1


def test_a_negative_history_is_refused():
    with pytest.raises(ValueError, match="history_length must be an int >= 0"):
        _steps(-1)
    with pytest.raises(ValueError, match="history_length must be an int >= 0"):
        terms.ObservationGroup(terms={}, history_length=-2)


def test_a_history_is_set_by_plain_data():
    from unilab_envs.tasks.term_task import with_overrides

    config = _env(history=0).task.config
    longer = with_overrides(config, {"observations.policy.steps.history_length": 4})
    task = TermTask(robots.quadruped(), longer, "quadruped-history")
    assert task.terms.history["policy"] == {"steps": 4}
    assert task.spec.observation_dims["policy"] == 3 + 2 * 4
    with pytest.raises(TypeError, match="history_length takes an integer >= 0"):
        with_overrides(config, {"observations.policy.steps.history_length": -1})
