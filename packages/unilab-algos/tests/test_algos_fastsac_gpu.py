"""FastSAC on CUDA: captured (CUDA graph) updates equal eager updates; bf16 runs."""

from __future__ import annotations

import pytest
import torch
from _fastsac_helpers import ACT, OBS, flat_state, random_batch, small_config

from unilab_algos import CaptureMode

pytestmark = pytest.mark.gpu
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def _pair(**cfg):
    from unilab_algos.fastsac import FastSAC

    out = []
    for capture in (False, True):
        torch.manual_seed(0)
        out.append(
            FastSAC(OBS, ACT, small_config(capture=capture, **cfg), num_envs=4, device="cuda")
        )
    return out


@cuda
@pytest.mark.parametrize("distributional", [True, False])
def test_fastsac_captured_matches_eager(distributional):
    eager, captured = _pair(distributional=distributional, max_grad_norm=1.0)
    modes = (eager.capture_status["update"].mode, captured.capture_status["update"].mode)
    assert modes == (CaptureMode.OFF, CaptureMode.PENDING)
    gen = torch.Generator().manual_seed(1)
    for _ in range(8):
        batch = random_batch(4, 32, gen, device="cuda")
        m_e = eager.update_from_batch(batch)
        m_c = captured.update_from_batch(batch)
    assert captured.capture_status["update"].mode is CaptureMode.CAPTURED
    assert captured.critic_updates == eager.critic_updates == 32
    assert captured.actor_updates == eager.actor_updates == 16
    for k in ("critic_loss", "actor_loss", "alpha_loss"):
        assert m_c[k] == pytest.approx(m_e[k], rel=1e-3, abs=1e-5)
    se, sc = flat_state(eager), flat_state(captured)
    assert se.keys() == sc.keys()
    for k in se:
        torch.testing.assert_close(sc[k].float(), se[k].float(), rtol=1e-4, atol=1e-5, msg=k)


@cuda
def test_fastsac_capture_survives_load_state_dict():
    eager, captured = _pair()
    gen = torch.Generator().manual_seed(2)
    for _ in range(6):
        captured.update_from_batch(random_batch(4, 32, gen, device="cuda"))
    assert captured.capture_status["update"].mode is CaptureMode.CAPTURED
    eager.load_state_dict(captured.state_dict())
    captured.load_state_dict(captured.state_dict())
    # optimizer tensors replaced: graphs are captured again
    assert captured.capture_status["update"].mode is CaptureMode.PENDING
    for _ in range(6):
        batch = random_batch(4, 32, gen, device="cuda")
        eager.update_from_batch(batch)
        captured.update_from_batch(batch)
    assert captured.capture_status["update"].mode is CaptureMode.CAPTURED
    se, sc = flat_state(eager), flat_state(captured)
    for k in se:
        torch.testing.assert_close(sc[k].float(), se[k].float(), rtol=1e-4, atol=1e-5, msg=k)


@cuda
def test_fastsac_bf16_update_is_finite():
    _, learner = _pair(bf16=True)
    gen = torch.Generator().manual_seed(3)
    for _ in range(6):
        m = learner.update_from_batch(random_batch(4, 32, gen, device="cuda"))
    assert learner.capture_status["update"].mode is CaptureMode.CAPTURED
    assert all(torch.isfinite(torch.tensor(v)) for v in m.values())
