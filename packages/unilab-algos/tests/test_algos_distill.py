"""Distillation: RSL-RL 5.4.2 equivalence, accumulation/reduction/remainder, frozen teacher,
student-only gradient sync, teacher loading."""

from __future__ import annotations

import pytest
import torch
from _ppo_helpers import obs_td, scripted_rollout, step_td
from tensordict import TensorDict

from unilab_algos import PPO, Distillation, DistillationConfig, NetworkConfig, PPOConfig

N, T, A = 6, 7, 2
DIMS = {"policy": 4, "critic": 5}
NET = NetworkConfig(hidden=(8, 8))


def _make(cfg: DistillationConfig, grad_sync=None) -> Distillation:
    torch.manual_seed(0)
    d = Distillation({k: (v,) for k, v in DIMS.items()}, A, cfg, grad_sync=grad_sync)
    d.load_teacher({"actor": d.teacher.state_dict()})  # the seeded network is the teacher
    d.init_storage(N, T)
    return d


def _rollout(d: Distillation, seed: int = 3) -> None:
    obs, rew, dones, touts = scripted_rollout(N, T, DIMS, seed)
    with torch.no_grad():
        for t in range(T):
            d.act(obs_td(obs, t))
            d.process_env_step(step_td(obs, rew, dones, touts, t))


def _cfg(**kw) -> DistillationConfig:
    base = dict(student=NET, teacher=NET, student_obs=("policy",), teacher_obs=("critic",))
    base.update(kw)
    return DistillationConfig(**base)


class _Recorder:
    """A fake grad_sync recording which parameters it was given."""

    def __init__(self):
        self.calls: list[list[int]] = []

    def __call__(self, params, extra):
        self.calls.append([id(p) for p in params])
        return extra


@pytest.mark.parametrize(
    ("reduction", "remainder", "epochs", "steps"),
    [("sum", "drop", 1, 2), ("sum", "flush", 1, 3), ("mean", "flush", 2, 5), ("sum", "drop", 2, 4)],
)
def test_step_counts_and_student_only_sync(reduction, remainder, epochs, steps):
    rec = _Recorder()
    d = _make(
        _cfg(gradient_length=3, reduction=reduction, remainder=remainder, num_epochs=epochs), rec
    )
    teacher_before = {k: v.clone() for k, v in d.teacher.state_dict().items()}
    _rollout(d)
    m = d.update()
    # E*T = 7 or 14 time-step batches, windows of 3: floor (drop) or ceil (flush)
    assert m["optimizer_steps"] == steps == m["collectives"] == len(rec.calls)
    student_ids = {id(p) for n, p in d.student.named_parameters() if n != "std_param"}
    for call in rec.calls:
        assert set(call) == student_ids
    for k, v in d.teacher.state_dict().items():
        assert torch.equal(v, teacher_before[k]), k
    assert all(p.grad is None for p in d.teacher.parameters())


def _one_window_grad(reduction: str) -> torch.Tensor:
    d = _make(_cfg(gradient_length=T, reduction=reduction, remainder="drop", learning_rate=1e-2))
    _rollout(d)
    w0 = d.student.mlp[0].weight.detach().clone()
    d.optimizer.step = lambda: None  # keep the weights, inspect the gradient
    d.update()
    assert torch.equal(d.student.mlp[0].weight, w0)
    return d.student.mlp[0].weight.grad.clone()


def test_sum_reduction_is_window_length_times_mean():
    g_sum, g_mean = _one_window_grad("sum"), _one_window_grad("mean")
    torch.testing.assert_close(g_sum, g_mean * T, rtol=1e-5, atol=1e-7)
    assert g_sum.abs().sum() > 0


def test_drop_ignores_the_trailing_window_but_counts_its_loss():
    d1 = _make(_cfg(gradient_length=5, reduction="sum", remainder="drop"))
    d2 = _make(_cfg(gradient_length=5, reduction="sum", remainder="drop"))
    _rollout(d1)
    _rollout(d2)
    d2.storage.data["privileged_actions"][6] += 3.0  # only in the dropped window (steps 5, 6)
    m1, m2 = d1.update(), d2.update()
    for a, b in zip(d1.student.parameters(), d2.student.parameters(), strict=True):
        assert torch.equal(a, b)
    assert m2["behavior"] > m1["behavior"]


def test_matches_rsl_rl_distillation_bitwise():
    pytest.importorskip("rsl_rl")
    from rsl_rl.algorithms import Distillation as RslDistillation
    from rsl_rl.models import MLPModel
    from rsl_rl.storage import RolloutStorage

    from unilab_algos import convert_rsl_rl_state_dict

    obs0 = TensorDict({k: torch.zeros(N, v) for k, v in DIMS.items()}, batch_size=[N])
    groups = {"student": ["policy"], "teacher": ["critic"]}
    dist = {"class_name": "GaussianDistribution", "init_std": 1.0}
    kw = dict(hidden_dims=[8, 8], activation="elu", obs_normalization=True)
    torch.manual_seed(5)
    student = MLPModel(obs0, groups, "student", A, distribution_cfg=dict(dist), **kw)
    teacher = MLPModel(obs0, groups, "teacher", A, distribution_cfg=dict(dist), **kw)
    teacher.obs_normalizer.update(torch.randn(50, 5))
    teacher.eval()
    ref = RslDistillation(
        student,
        teacher,
        RolloutStorage("distillation", N, T, obs0, [A]),
        gradient_length=3,
        num_learning_epochs=2,
    )
    ref.teacher_loaded = True
    ours = _make(
        DistillationConfig.rsl_rl(
            student=NET,
            teacher=NET,
            student_obs=("policy",),
            teacher_obs=("critic",),
            gradient_length=3,
            num_epochs=2,
        )
    )
    ours.student.load_state_dict(convert_rsl_rl_state_dict(student.state_dict()))
    ours.load_teacher({"actor_state_dict": teacher.state_dict()})
    obs, rew, dones, touts = scripted_rollout(N, T, DIMS, seed=11)
    for learner in (ref, ours):
        torch.manual_seed(1)
        learner.train_mode()
        with torch.inference_mode():
            for t in range(T):
                if learner is ref:
                    learner.act(TensorDict({k: v[t] for k, v in obs.items()}, [N]))
                    learner.process_env_step(
                        TensorDict({k: v[t + 1] for k, v in obs.items()}, [N]), rew[t], dones[t], {}
                    )
                else:
                    learner.act(obs_td(obs, t))
                    learner.process_env_step(step_td(obs, rew, dones, touts, t))
    m_ref, m_our = ref.update(), ours.update()
    assert m_ref["behavior"] == m_our["behavior"]
    mine = ours.student.state_dict()
    for k, v in convert_rsl_rl_state_dict(ref.student.state_dict()).items():
        assert torch.equal(mine[k], v), k


def test_teacher_loads_from_ppo_and_rejects_bad_checkpoints():
    ppo_cfg = PPOConfig(actor=NET, critic=NET, actor_obs=("critic",), critic_obs=("critic",))
    ppo = PPO({k: (v,) for k, v in DIMS.items()}, A, ppo_cfg)
    with torch.no_grad():
        ppo.actor.mlp[0].weight.add_(1.0)
    d = _make(_cfg(obs_norm_mode="exact"))
    d.load_teacher(ppo.state_dict())
    assert torch.equal(d.teacher.mlp[0].weight, ppo.actor.mlp[0].weight)
    with pytest.raises(ValueError, match="actor_state_dict"):
        d.load_teacher({"model": {}})
    small = PPO(
        {"policy": (4,), "critic": (3,)}, A, PPOConfig(actor=NET, critic=NET, actor_obs=("critic",))
    )
    with pytest.raises(ValueError, match="does not match"):
        d.load_teacher(small.state_dict())


def test_recurrent_student_trains():
    cfg = _cfg(
        student=NetworkConfig(hidden=(8,), rnn_type="gru", rnn_hidden=8),
        gradient_length=3,
        num_epochs=2,
    )
    d = _make(cfg)
    _rollout(d)
    w0 = d.student.memory.rnn.weight_ih_l0.detach().clone()
    m = d.update()
    assert m["optimizer_steps"] == 5
    assert not torch.equal(d.student.memory.rnn.weight_ih_l0, w0)
    assert d.storage.data["hidden", "student", "h"].shape == (T, N, 1, 8)


def test_update_without_a_loaded_teacher_is_refused_naming_load_teacher():
    torch.manual_seed(0)
    d = Distillation({k: (v,) for k, v in DIMS.items()}, A, _cfg())
    d.init_storage(N, T)
    _rollout(d)
    with pytest.raises(RuntimeError, match=r"no teacher is loaded.*load_teacher"):
        d.update()
    d.load_teacher({"actor": d.teacher.state_dict()})
    assert d.update()["optimizer_steps"] > 0
