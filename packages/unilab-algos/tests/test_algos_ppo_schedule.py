"""Adaptive-KL learning rate on device: same LR sequence as RSL-RL's float rule, and no host
read per mini-batch (one read of all metrics at the end of `update()`)."""

from __future__ import annotations

import pytest
import torch
from _ppo_helpers import obs_td, scripted_rollout, step_td

from unilab_algos import PPO, NetworkConfig, PPOConfig
from unilab_algos.ppo import _step as ppo_step
from unilab_algos.ppo import adaptive_lr, adaptive_lr_tensor

RULE = dict(desired_kl=0.01, factor=1.5, bounds=(1e-5, 1e-2))
N, T, A = 8, 6, 2
DIMS = {"policy": 3, "critic": 4}


def _float_sequence(lr: float, kls: list[torch.Tensor], **rule) -> list[float]:
    out = []
    for kl in kls:
        lr = adaptive_lr(lr, kl, **(rule or RULE))
        out.append(lr)
    return out


def _tensor_sequence(lr: float, kls: list[torch.Tensor]) -> list[float]:
    t = torch.tensor(lr, dtype=torch.float64)
    out = []
    for kl in kls:
        t = adaptive_lr_tensor(t, kl, **RULE)
        out.append(t.item())
    return out


def test_rule_branches_by_hand():
    f32 = torch.float32
    kls = [torch.tensor(v, dtype=f32) for v in (0.05, 0.001, 0.01, 0.0, -1.0, float("nan"))]
    seq = _float_sequence(1e-3, kls)
    # down (/1.5), up (*1.5), in band, kl == 0, negative, NaN: unchanged
    assert seq == [1e-3 / 1.5, 1e-3 / 1.5 * 1.5] + [1e-3 / 1.5 * 1.5] * 4
    assert _tensor_sequence(1e-3, kls) == seq
    # bounds: 9e-3 * 1.5 is clamped to 1e-2; 1.2e-5 / 1.5 to 1e-5
    assert _float_sequence(9e-3, [torch.tensor(0.001)]) == [1e-2]
    assert _tensor_sequence(9e-3, [torch.tensor(0.001)]) == [1e-2]
    assert _tensor_sequence(1.2e-5, [torch.tensor(0.5)]) == [1e-5]


def test_tensor_rule_equals_float_rule_on_a_recorded_kl_sequence():
    # KLs straddling the thresholds, including float32 values next to 2*d and d/2
    g = torch.Generator().manual_seed(0)
    kls = list(torch.rand(400, generator=g) * 0.04)
    edges = [0.02, 0.005]
    for e in edges:
        v = torch.tensor(e, dtype=torch.float32)
        kls += [v, torch.nextafter(v, torch.tensor(1.0)), torch.nextafter(v, torch.tensor(0.0))]
    seq_f = _float_sequence(1e-3, kls)
    seq_t = _tensor_sequence(1e-3, kls)
    assert seq_t == seq_f  # bitwise: float64 arithmetic on both sides
    assert len(set(seq_f)) > 10  # the rule moved the LR both ways many times


def _rollout(ppo: PPO, seed: int) -> None:
    obs, rew, dones, touts = scripted_rollout(N, T, DIMS, seed)
    with torch.no_grad():
        for t in range(T):
            ppo.act(obs_td(obs, t))
            ppo.process_env_step(step_td(obs, rew, dones, touts, t))
        ppo.compute_returns(obs_td(obs, T))


def _ppo(grad_sync=None, **kw) -> PPO:
    torch.manual_seed(0)
    net = NetworkConfig(hidden=(16,))
    cfg = PPOConfig(actor=net, critic=net, num_epochs=3, num_mini_batches=2, **kw)
    ppo = PPO({k: (d,) for k, d in DIMS.items()}, A, cfg, grad_sync=grad_sync)
    ppo.init_storage(N, T)
    return ppo


def test_learner_lr_follows_the_float_rule_on_its_own_kls(monkeypatch):
    ppo = _ppo(learning_rate=5e-3, desired_kl=0.002)
    kls, lrs = [], []
    inner = ppo_step.adapt_lr

    def spy(st, kl):
        kls.append(kl.clone())
        inner(st, kl)
        lrs.append(st.lr.item())
        assert st.lr_opt.item() == pytest.approx(lrs[-1], rel=1e-7)  # Adam reads the copy

    monkeypatch.setattr(ppo_step, "adapt_lr", spy)
    for it in range(3):
        _rollout(ppo, seed=it)
        m = ppo.update()
        assert m["learning_rate"] == lrs[-1]
    assert len(kls) == 3 * 6
    assert lrs == _float_sequence(5e-3, kls, desired_kl=0.002, factor=1.5, bounds=(1e-5, 1e-2))
    assert len(set(lrs)) > 2


def _f32(x: float) -> float:
    return torch.tensor(x, dtype=torch.float32).item()


@pytest.mark.parametrize("lr_on_device", [False, True])
def test_float32_sync_rounds_the_lr_after_every_rule_with_a_grad_sync(lr_on_device, monkeypatch):
    """`lr_float32_sync` (the rsl_rl preset): RSL-RL multi-GPU's float32 LR broadcast, on
    both LR paths; one process (no grad_sync) keeps the float64 rule."""
    assert PPOConfig.rsl_rl().lr_float32_sync is True
    identity = lambda params, extra: extra  # noqa: E731  (a one-rank stand-in)
    for sync, rounded in ((identity, True), (None, False)):
        ppo = _ppo(sync, lr_on_device=lr_on_device, lr_float32_sync=True, desired_kl=0.002)
        kls = []
        inner = ppo_step.adapt_lr
        monkeypatch.setattr(
            ppo_step,
            "adapt_lr",
            lambda st, kl, kls=kls, inner=inner: (kls.append(kl.clone()), inner(st, kl)),
        )
        _rollout(ppo, seed=0)
        ppo.update()
        monkeypatch.undo()
        lr = 1e-3
        for kl in kls:
            lr = adaptive_lr(lr, kl, **{**RULE, "desired_kl": 0.002})
            lr = _f32(lr) if rounded else lr
        assert ppo.learning_rate == lr and lr != 1e-3
        assert (lr == _f32(lr)) is rounded


class _HostReads:
    """Counts Python-level device->host reads of tensors."""

    NAMES = ("item", "tolist", "__bool__", "__float__", "__int__", "cpu", "numpy")

    def __init__(self, monkeypatch):
        self.counts = dict.fromkeys(self.NAMES, 0)
        for name in self.NAMES:
            orig = getattr(torch.Tensor, name)
            monkeypatch.setattr(torch.Tensor, name, self._wrap(name, orig))

    def _wrap(self, name, orig):
        def wrapped(t, *args, **kwargs):
            self.counts[name] += 1
            return orig(t, *args, **kwargs)

        return wrapped

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def test_device_lr_update_reads_the_host_once(monkeypatch):
    ppo = _ppo()
    _rollout(ppo, seed=1)
    reads = _HostReads(monkeypatch)
    m = ppo.update()
    assert m["mini_batches"] == 6
    assert reads.counts == {**dict.fromkeys(_HostReads.NAMES, 0), "tolist": 1}


def test_rsl_rl_preset_reads_the_kl_every_mini_batch(monkeypatch):
    ppo = _ppo(lr_on_device=False)
    _rollout(ppo, seed=1)
    reads = _HostReads(monkeypatch)
    ppo.update()
    assert reads.counts["__bool__"] >= 6  # `kl > 2 d` per mini-batch (RSL-RL's behaviour)
    assert PPOConfig.rsl_rl().lr_on_device is False
