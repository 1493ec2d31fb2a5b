"""Recurrent mini-batches: padding, masks, initial hidden states, unpad, and RSL-RL 5.4.2."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from unilab_storage import (
    RecurrentBatcher,
    recurrent_batches,
    split_and_pad_trajectories,
    unpad_trajectories,
)

T, N = 5, 3


def _dones():
    d = torch.zeros(T, N, dtype=torch.bool)
    d[1, 0] = d[3, 0] = d[2, 2] = True
    return d


def test_split_and_pad_hand_computed():
    x = torch.arange(T * N, dtype=torch.float32).reshape(T, N)  # x[t, n] = t * N + n
    padded, masks = split_and_pad_trajectories(x, _dones())
    # env 0: [0, 3 | 6, 9 | 12]; env 1: [1 4 7 10 13]; env 2: [2 5 8 | 11 14]
    assert padded.T.tolist() == [
        [0, 3, 0, 0, 0],
        [6, 9, 0, 0, 0],
        [12, 0, 0, 0, 0],
        [1, 4, 7, 10, 13],
        [2, 5, 8, 0, 0],
        [11, 14, 0, 0, 0],
    ]
    assert masks.T.int().tolist() == [
        [1, 1, 0, 0, 0],
        [1, 1, 0, 0, 0],
        [1, 0, 0, 0, 0],
        [1, 1, 1, 1, 1],
        [1, 1, 1, 0, 0],
        [1, 1, 0, 0, 0],
    ]
    assert torch.equal(unpad_trajectories(padded, masks), x)


def _data():
    x = torch.arange(T * N, dtype=torch.float32).reshape(T, N)
    return TensorDict(
        {
            "obs": {"policy": torch.stack((x, -x), -1)},
            "hidden": {"actor": 100 + x.reshape(T, N, 1, 1)},
            "actions": x.unsqueeze(-1),
        },
        batch_size=[T, N],
    )


def test_batches_drop_and_spread_hand_computed():
    data = _data()
    drop = list(recurrent_batches(data, _dones(), 2, 2))
    assert len(drop) == 4  # M=2 x E=2; q = 1 env per batch, env 2 dropped
    assert [b["env_ids"].tolist() for b in drop] == [[0], [1], [0], [1]]
    first = drop[0]
    assert first["padded", "obs", "policy"][..., 0].T.tolist() == [
        [0, 3, 0, 0, 0],
        [6, 9, 0, 0, 0],
        [12, 0, 0, 0, 0],
    ]
    assert first["padded", "obs", "policy"][..., 1].T.tolist()[0] == [0, -3, 0, 0, 0]
    assert first["masks"].sum(0).tolist() == [2, 2, 1]
    # the state entering each trajectory: the stored hidden state at its first step
    assert first["initial", "hidden", "actor"].flatten().tolist() == [100, 106, 112]
    assert first["data", "actions"].squeeze(-1).T.tolist() == [[0, 3, 6, 9, 12]]
    assert drop[1]["initial", "hidden", "actor"].flatten().tolist() == [101]
    spread = list(recurrent_batches(data, _dones(), 2, 1, remainder="spread"))
    assert [b["env_ids"].tolist() for b in spread] == [[0, 1], [2]]
    assert spread[0]["masks"].shape == (T, 4) and spread[1]["masks"].shape == (T, 2)
    assert spread[1]["initial", "hidden", "actor"].flatten().tolist() == [102, 111]
    out = unpad_trajectories(spread[1]["padded", "obs", "policy"], spread[1]["masks"])
    assert torch.equal(out, data["obs", "policy"][:, 2:3])
    td_out = unpad_trajectories(spread[0]["padded"], spread[0]["masks"])
    assert torch.equal(td_out["obs", "policy"], data["obs", "policy"][:, 0:2])


def _rsl_storage(T, N, L, H, seed):
    from rsl_rl.storage import RolloutStorage as RslStorage

    g = torch.Generator().manual_seed(seed)
    obs = TensorDict({"policy": torch.zeros(N, 4), "critic": torch.zeros(N, 6)}, batch_size=[N])
    st = RslStorage("rl", N, T, obs, (2,), device="cpu")
    st.observations["policy"].copy_(torch.randn(T, N, 4, generator=g))
    st.observations["critic"].copy_(torch.randn(T, N, 6, generator=g))
    st.dones.copy_((torch.rand(T, N, 1, generator=g) < 0.2).byte())
    for name in ("actions", "values", "returns", "actions_log_prob"):
        getattr(st, name).normal_(generator=g)
    st.advantages = torch.randn(T, N, 1, generator=g)
    st.distribution_params = (torch.randn(T, N, 2, generator=g), torch.rand(T, N, 2, generator=g))
    # LSTM actor ([h, c]) and GRU critic ([h]), RSL-RL layout [T, layers, N, H]
    st.saved_hidden_state_a = [torch.randn(T, L, N, H, generator=g) for _ in range(2)]
    st.saved_hidden_state_c = [torch.randn(T, L, N, H, generator=g)]
    data = TensorDict(
        {
            "obs": {"policy": st.observations["policy"], "critic": st.observations["critic"]},
            "actions": st.actions,
            "values": st.values.squeeze(-1),
            "advantages": st.advantages.squeeze(-1),
            "log_prob": st.actions_log_prob.squeeze(-1),
            "mean": st.distribution_params[0],
            "hidden": {
                "actor": {
                    "h": st.saved_hidden_state_a[0].transpose(1, 2),
                    "c": st.saved_hidden_state_a[1].transpose(1, 2),
                },
                "critic": st.saved_hidden_state_c[0].transpose(1, 2),
            },
            "dones": st.dones.squeeze(-1).bool(),
        },
        batch_size=[T, N],
    )
    return st, data


@pytest.mark.parametrize(("T_", "N_", "M", "E"), [(8, 6, 2, 2), (24, 13, 4, 1), (6, 5, 5, 1)])
def test_rsl_rl_mode_equals_rsl_rl_recurrent_generator(T_, N_, M, E):
    st, data = _rsl_storage(T_, N_, 2, 3, seed=N_)
    torch.manual_seed(9)
    ref = list(st.recurrent_mini_batch_generator(M, E))
    ref_rng = torch.rand(2)
    torch.manual_seed(9)
    ours = list(RecurrentBatcher.rsl_rl(M, E).batches(data, data["dones"]))
    assert torch.equal(torch.rand(2), ref_rng)  # neither draws random numbers
    assert len(ours) == len(ref) == M * E
    for b, r in zip(ours, ref, strict=True):
        assert torch.equal(b["padded", "obs", "policy"], r.observations["policy"])
        assert torch.equal(b["padded", "obs", "critic"], r.observations["critic"])
        assert torch.equal(b["masks"], r.masks)
        assert torch.equal(b["data", "actions"], r.actions)
        assert torch.equal(b["data", "values"], r.values.squeeze(-1))
        assert torch.equal(b["data", "advantages"], r.advantages.squeeze(-1))
        assert torch.equal(b["data", "log_prob"], r.old_actions_log_prob.squeeze(-1))
        assert torch.equal(b["data", "mean"], r.old_distribution_params[0])
        h_a, h_c = r.hidden_states
        assert torch.equal(b["initial", "hidden", "actor", "h"].transpose(0, 1), h_a[0])
        assert torch.equal(b["initial", "hidden", "actor", "c"].transpose(0, 1), h_a[1])
        assert torch.equal(b["initial", "hidden", "critic"].transpose(0, 1), h_c)


@pytest.mark.gpu
def test_cuda_batches_equal_cpu_batches():
    _, data = _rsl_storage(24, 13, 2, 3, seed=1)
    cpu = list(recurrent_batches(data, data["dones"], 4, 2, remainder="spread"))
    gpu = list(recurrent_batches(data.to("cuda"), data["dones"].cuda(), 4, 2, remainder="spread"))
    assert len(cpu) == len(gpu) == 8
    for a, b in zip(cpu, gpu, strict=True):
        assert b["masks"].device.type == "cuda"
        assert (a == b.cpu()).all()


def test_bad_input():
    data = _data()
    with pytest.raises(ValueError, match=r"pad_keys \['obs_typo'\] are not in the data"):
        recurrent_batches(data, _dones(), 1, 1, pad_keys="obs_typo")
    with pytest.raises(ValueError, match="larger than the number of envs 3"):
        recurrent_batches(data, _dones(), 4, 1)
    with pytest.raises(ValueError, match="do not match"):
        recurrent_batches(data, _dones()[:2], 1, 1)
    with pytest.raises(ValueError, match=r"must be \[T, N\]"):
        split_and_pad_trajectories(torch.zeros(T, N), torch.zeros(T))
    with pytest.raises(ValueError, match="agree"):
        unpad_trajectories(torch.zeros(T, 2), torch.ones(T, 3, dtype=torch.bool))
