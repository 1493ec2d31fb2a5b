"""RolloutStorage: allocation from a template, in-place add, clear, and clear errors."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from unilab_storage import FeedForwardBatcher, RolloutStorage, compute_gae, recurrent_batches

N, A = 4, 2


def _step(value: float) -> TensorDict:
    return TensorDict(
        {
            "obs": {"policy": torch.full((N, 3), value), "critic": torch.full((N, 5), -value)},
            "actions": torch.full((N, A), value),
            "log_prob": torch.full((N,), value),
            "values": torch.full((N,), 2 * value),
            "rewards": torch.full((N,), value),
            "dones": torch.tensor([True, False, False, value > 1]),
            "time_outs": torch.zeros(N, dtype=torch.bool),
            "hidden": {"actor": torch.full((N, 1, 6), value)},
        },
        batch_size=[N],
    )


def test_add_writes_rows_in_place_and_clear_rewinds():
    st = RolloutStorage(3, N, _step(0.0))
    assert st.data.batch_size == (3, N) and st.step == 0 and not st.is_full
    assert st.data["obs", "critic"].shape == (3, N, 5)
    assert st.data["dones"].dtype == torch.bool
    assert st.data["hidden", "actor"].shape == (3, N, 1, 6)
    buf = st.data["obs", "policy"]
    for t in range(3):
        st.add(_step(float(t + 1)))
    assert st.is_full and st.step == 3
    assert st.data["obs", "policy"].data_ptr() == buf.data_ptr()  # written in place
    assert st.data["values"][:, 0].tolist() == [2.0, 4.0, 6.0]
    assert st.data["obs", "critic"][2, 3, 4].item() == -3.0
    assert st.data["dones"][:, 3].tolist() == [False, True, True]
    with pytest.raises(OverflowError, match="full"):
        st.add(_step(9.0))
    st.clear()
    assert st.step == 0
    st.add(_step(7.0))
    assert st.data["rewards"][:, 0].tolist() == [7.0, 2.0, 3.0]
    assert buf.data_ptr() == st.data["obs", "policy"].data_ptr()


def test_derived_keys_on_data_do_not_affect_add():
    st = RolloutStorage(2, N, _step(0.0))
    st.data["advantages"] = torch.ones(2, N)
    st.add(_step(1.0))
    assert st.data["advantages"].sum().item() == 8.0


def test_bad_input_errors_name_the_key():
    st = RolloutStorage(2, N, _step(0.0))
    bad = _step(1.0)
    bad["obs", "policy"] = torch.zeros(N, 4)
    with pytest.raises(ValueError, match=r"'obs', 'policy'.*\(4, 4\).*\(4, 3\)"):
        st.add(bad)
    bad = _step(1.0)
    bad["actions"] = torch.zeros(N, A, dtype=torch.float64)
    with pytest.raises(TypeError, match=r"actions.*float64"):
        st.add(bad)
    bad = _step(1.0)
    del bad["rewards"]
    with pytest.raises(ValueError, match=r"missing keys.*rewards"):
        st.add(bad)
    bad = _step(1.0)
    bad["extra"] = torch.zeros(N)
    with pytest.raises(ValueError, match=r"unexpected keys.*extra"):
        st.add(bad)
    with pytest.raises(TypeError, match="TensorDict"):
        st.add({"actions": torch.zeros(N, A)})
    assert st.step == 0  # nothing was written


def test_batches_of_an_inference_mode_rollout_work_with_autograd():
    st = RolloutStorage(3, N, _step(0.0))
    with torch.inference_mode():
        for t in range(3):
            st.add(_step(float(t + 1)))
        d = st.data
        adv, _ = compute_gae(d["rewards"], d["values"], d["dones"], torch.ones(N), 0.5, 0.5)
        d["advantages"] = adv
    w = torch.ones((), requires_grad=True)
    ff = next(iter(FeedForwardBatcher(num_mini_batches=1, num_epochs=1).batches(d)))
    rec = next(iter(recurrent_batches(d, d["dones"], 1, 1, hidden_keys=())))
    ((ff["advantages"] + rec["data", "advantages"].flatten()) * w).sum().backward()
    assert w.grad.item() == pytest.approx(2 * adv.sum().item())
    assert not rec["data", "advantages"].is_inference()


def test_device_mismatch_is_an_error():
    st = RolloutStorage(2, N, _step(0.0), device="meta")
    assert st.data["actions"].device.type == "meta"
    with pytest.raises(ValueError, match="is on cpu, expected meta"):
        st.add(_step(1.0))


def test_bad_construction():
    with pytest.raises(ValueError, match="num_steps must be >= 1"):
        RolloutStorage(0, N, _step(0.0))
    with pytest.raises(ValueError, match="first dimension must be the number of envs 5"):
        RolloutStorage(2, 5, _step(0.0))
    with pytest.raises(TypeError, match="must be a TensorDict"):
        RolloutStorage(2, N, {"a": torch.zeros(N)})


@pytest.mark.gpu
def test_cuda_storage_and_cpu_step_mismatch():
    template = _step(0.0).to("cuda")
    st = RolloutStorage(2, N, template)
    assert st.device == torch.device("cuda", torch.cuda.current_device())
    st.add(_step(1.0).to("cuda"))
    assert st.data["values"][0, 0].item() == 2.0
    with pytest.raises(ValueError, match="is on cpu"):
        st.add(_step(1.0))
