"""ReplayShard: n-step returns at dones, time-outs and the write head, wrap-around, state."""

from __future__ import annotations

import io

import pytest
import torch
from tensordict import TensorDict

from unilab_storage import ReplayShard

N = 2


def _row(add_idx: int, reward, terminated, truncated) -> TensorDict:
    ids = torch.tensor([add_idx * N + e for e in range(N)])
    return TensorDict(
        {
            "obs": {"policy": ids.float().unsqueeze(-1)},
            "actions": ids.float().unsqueeze(-1) * 10,
            "id": ids,
            "reward": torch.tensor(reward, dtype=torch.float32),
            "terminated": torch.tensor(terminated),
            "truncated": torch.tensor(truncated),
            "next_obs": {"policy": (100 + ids).float().unsqueeze(-1)},
        },
        batch_size=[N],
    )


ROWS = [
    ([1.0, 1.0], [False, False], [False, False]),
    ([2.0, 2.0], [False, True], [False, False]),
    ([4.0, 4.0], [False, False], [True, False]),
    ([8.0, 8.0], [False, False], [False, False]),
    ([16.0, 16.0], [False, False], [False, False]),
    ([32.0, 32.0], [False, False], [False, False]),
]


def _by_id(out: TensorDict) -> dict[int, tuple]:
    """Per sampled transition id: (reward, discount, next obs, n_steps), checked consistent."""
    assert torch.equal(out["obs", "policy"][:, 0], out["id"].float())  # first-step fields kept
    cols = torch.stack(
        (
            out["reward"].double(),
            out["discount"].double(),
            out["next_obs", "policy"][:, 0].double(),
            out["n_steps"].double(),
        ),
        dim=1,
    )
    table: dict[int, tuple] = {}
    for key in out["id"].unique().tolist():
        rows = cols[out["id"] == key]
        assert (rows == rows[0]).all()
        r, d, o, k = rows[0].tolist()
        table[key] = (r, d, o, int(k))
    return table


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("device", DEVICES)
def test_n_step_returns_at_dones_and_head_hand_computed(device):
    shard = ReplayShard(8, _row(0, *ROWS[0]).to(device), n_step=3, gamma=0.5)
    for i in range(3):
        shard.add(_row(i, *ROWS[i]).to(device))
    assert len(shard) == 6 and shard.head == 3
    out = shard.sample(3000, generator=torch.Generator(device).manual_seed(0))
    assert out.device.type == device
    out = out.cpu()
    table = _by_id(out)
    assert table == {
        # env 0: truncated at add 2 -> sum stops, bootstrap kept (gamma^K)
        0: (1 + 0.5 * 2 + 0.25 * 4, 0.125, 104.0, 3),
        2: (2 + 0.5 * 4, 0.25, 104.0, 2),
        4: (4.0, 0.5, 104.0, 1),
        # env 1: terminated at add 1 -> sum stops, bootstrap zero
        1: (1 + 0.5 * 2, 0.0, 103.0, 2),
        3: (2.0, 0.0, 103.0, 1),
        5: (4.0, 0.5, 105.0, 1),  # newest row: the head stops the chain
    }
    counts = torch.bincount(out["id"], minlength=6)
    assert counts.sum() == 3000 and counts.min() > 400 and counts.max() < 600


def test_ring_wrap_around_never_crosses_the_head():
    shard = ReplayShard(9, _row(0, *ROWS[0]), n_step=3, gamma=0.5)  # 4 rows of 2
    assert shard.capacity == 8 and shard.rows == 4
    for i in range(6):
        shard.add(_row(i, *ROWS[i]))
    assert len(shard) == 8 and shard.head == 2 and shard.num_added == 12
    table = _by_id(shard.sample(4000, generator=torch.Generator().manual_seed(1)))
    assert sorted(table) == list(range(4, 12))  # adds 0 and 1 were overwritten
    assert table[5] == (4 + 0.5 * 8 + 0.25 * 16, 0.125, 109.0, 3)  # env 1, add 2 -> 4
    assert table[9] == (16 + 0.5 * 32, 0.25, 111.0, 2)  # add 4: stops at newest (add 5)
    assert table[11] == (32.0, 0.5, 111.0, 1)
    assert table[4] == (4.0, 0.5, 104.0, 1)  # env 0 add 2 was truncated


def test_one_step_discount_and_fields():
    shard = ReplayShard(4, _row(0, *ROWS[0]), gamma=0.9)
    shard.add(_row(0, *ROWS[1]))
    out = shard.sample(64, generator=torch.Generator().manual_seed(2))
    env = out["id"]
    assert set(env.tolist()) == {0, 1}
    assert torch.equal(out["reward"], torch.full((64,), 2.0))
    assert torch.equal(out["discount"], torch.where(env == 1, 0.0, torch.tensor(0.9)))
    assert torch.equal(out["next_obs", "policy"][:, 0], 100.0 + env)
    assert out["discount"].dtype == torch.float32


def test_state_round_trip_with_and_without_data():
    shard = ReplayShard(8, _row(0, *ROWS[0]), n_step=2, gamma=0.5)
    for i in range(5):
        shard.add(_row(i, *ROWS[i]))
    buf = io.BytesIO()
    torch.save(shard.state_dict(), buf)
    buf.seek(0)
    state = torch.load(buf, weights_only=True)
    other = ReplayShard(8, _row(0, *ROWS[0]), n_step=2, gamma=0.5)
    other.load_state_dict(state)
    assert (other.head, len(other), other.num_added) == (1, 8, 10)
    a = shard.sample(100, generator=torch.Generator().manual_seed(3))
    b = other.sample(100, generator=torch.Generator().manual_seed(3))
    assert (a == b).all()
    empty = ReplayShard(8, _row(0, *ROWS[0]), n_step=2, gamma=0.5)
    empty.load_state_dict(shard.state_dict(include_data=False))
    assert len(empty) == 0 and empty.num_added == 10
    with pytest.raises(ValueError, match="empty"):
        empty.sample(4)
    wrong = ReplayShard(16, _row(0, *ROWS[0]), n_step=2)
    with pytest.raises(ValueError, match="capacity=8 in the state, 16 here"):
        wrong.load_state_dict(state)


def test_bad_input():
    template = _row(0, *ROWS[0])
    with pytest.raises(ValueError, match="empty"):
        ReplayShard(8, template).sample(4)
    with pytest.raises(ValueError, match="need at least n_step=5 rows"):
        ReplayShard(8, template, n_step=5)
    with pytest.raises(ValueError, match="lacks the next_obs key"):
        ReplayShard(8, template.exclude("next_obs"))
    bad_reward = template.clone()
    bad_reward["reward"] = torch.zeros(N, 1)
    with pytest.raises(ValueError, match=r"'reward' must be \[N\]"):
        ReplayShard(8, bad_reward)
    bad_flag = template.clone()
    bad_flag["terminated"] = torch.zeros(N, 1, dtype=torch.bool)
    with pytest.raises(ValueError, match="'terminated' has per-env shape"):
        ReplayShard(8, bad_flag)
    with pytest.raises(ValueError, match="gamma"):
        ReplayShard(8, template, gamma=1.5)
    shard = ReplayShard(8, template)
    bad = template.clone()
    bad["actions"] = torch.zeros(N, 2)
    with pytest.raises(ValueError, match="actions"):
        shard.add(bad)
    shard.add(template)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        shard.sample(0)
