"""Distillation state round trip: state_dict -> torch.save/load -> fresh learner ->
load_state_dict, then the next rollout + update give bitwise the same student, teacher and Adam
state."""

from __future__ import annotations

import io

import pytest
import torch
from _ppo_helpers import obs_td, scripted_rollout, step_td

from unilab_algos import Distillation, DistillationConfig, NetworkConfig

N, T, A = 6, 7, 2
DIMS = {"policy": 4, "critic": 5}


def _make(rnn: str | None, seed: int) -> Distillation:
    torch.manual_seed(seed)
    student = NetworkConfig(hidden=(8,), rnn_type=rnn, rnn_hidden=8)
    cfg = DistillationConfig(
        student=student,
        teacher=NetworkConfig(hidden=(8, 8)),
        student_obs=("policy",),
        teacher_obs=("critic",),
        gradient_length=3,
        num_epochs=2,
        max_grad_norm=1.0,
    )
    d = Distillation({k: (v,) for k, v in DIMS.items()}, A, cfg)
    d.load_teacher({"actor": d.teacher.state_dict()})  # the seeded network is the teacher
    d.init_storage(N, T)
    return d


def _iteration(d: Distillation, seed: int) -> dict:
    d.student.reset()
    obs, rew, dones, touts = scripted_rollout(N, T, DIMS, seed)
    torch.manual_seed(500 + seed)
    with torch.no_grad():
        for t in range(T):
            d.act(obs_td(obs, t))
            d.process_env_step(step_td(obs, rew, dones, touts, t))
    return d.update()


def _roundtrip(sd: dict) -> dict:
    buf = io.BytesIO()
    torch.save(sd, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=True)


@pytest.mark.parametrize("rnn", [None, "gru"])
def test_round_trip_then_update_is_bitwise_identical(rnn):
    a = _make(rnn, seed=0)
    with torch.no_grad():  # a non-trivial teacher, different from b's fresh one
        for p in a.teacher.parameters():
            p.add_(0.1)
    _iteration(a, 1)
    b = _make(rnn, seed=77)
    b.load_state_dict(_roundtrip(a.state_dict()))
    assert b.teacher_loaded and b.num_updates == 1
    ma, mb = _iteration(a, 2), _iteration(b, 2)
    assert ma == mb and ma["optimizer_steps"] == 5  # ceil(2 * 7 / 3), flushed
    for name in ("student", "teacher"):
        sa, sb = getattr(a, name).state_dict(), getattr(b, name).state_dict()
        assert sa.keys() == sb.keys()
        for k in sa:
            assert torch.equal(sa[k], sb[k]), f"{name}.{k}"
    oa, ob = a.optimizer.state_dict()["state"], b.optimizer.state_dict()["state"]
    assert oa.keys() == ob.keys() and len(oa) > 0
    for i in oa:
        for k in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(oa[i][k], ob[i][k])
    with pytest.raises(ValueError, match=r"missing entries.*teacher"):
        b.load_state_dict({k: v for k, v in a.state_dict().items() if k != "teacher"})
