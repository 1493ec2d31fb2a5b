"""Checkpoint files: atomic writes, the latest pointer, compatibility checks, RNG states."""

from __future__ import annotations

import random

import pytest
import torch

from unilab_integration import CheckpointError, load_checkpoint, resolve_checkpoint, save_checkpoint
from unilab_integration._checkpoint import (
    capture_rng,
    check_compatible,
    restore_rng,
    tensor_shapes,
)


def _payload(task="cartpole-balance", algo="ppo", w=None):
    w = torch.ones(2, 3) if w is None else w
    return {"task": task, "algo_name": algo, "shapes": {"actor.w": tuple(w.shape)}, "w": w}


def test_save_load_and_latest_pointer(tmp_path):
    d = tmp_path / "checkpoints"
    p1 = save_checkpoint(d, 5, _payload(w=torch.full((2, 3), 1.0)))
    p2 = save_checkpoint(d, 10, _payload(w=torch.full((2, 3), 2.0)))
    assert p1.name == "ckpt_000005.pt" and p2.name == "ckpt_000010.pt"
    assert (d / "latest").read_text().strip() == "ckpt_000010.pt"
    assert resolve_checkpoint(tmp_path) == p2  # run folder -> checkpoints/latest
    assert resolve_checkpoint(d) == p2
    ck = load_checkpoint(p1)
    assert ck["iteration"] == 5 and torch.equal(ck["w"], torch.full((2, 3), 1.0))
    assert load_checkpoint(tmp_path)["iteration"] == 10
    assert sorted(x.name for x in d.iterdir()) == ["ckpt_000005.pt", "ckpt_000010.pt", "latest"]


def test_failed_write_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    d = tmp_path / "checkpoints"
    save_checkpoint(d, 1, _payload(w=torch.full((2, 3), 7.0)))

    def broken_save(obj, f):
        f.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(OSError, match=r"disk full"):
        save_checkpoint(d, 2, _payload())
    monkeypatch.undo()
    assert sorted(x.name for x in d.iterdir()) == ["ckpt_000001.pt", "latest"]
    ck = load_checkpoint(d)
    assert ck["iteration"] == 1 and torch.equal(ck["w"], torch.full((2, 3), 7.0))


def test_missing_and_foreign_files(tmp_path):
    with pytest.raises(CheckpointError, match=r"no checkpoint at"):
        resolve_checkpoint(tmp_path / "nope")
    bad = tmp_path / "x.pt"
    torch.save({"hello": 1}, bad)
    with pytest.raises(CheckpointError, match=r"is not a UniLab checkpoint"):
        load_checkpoint(bad)
    (tmp_path / "latest").write_text("ckpt_000009.pt\n")
    with pytest.raises(CheckpointError, match=r"points to ckpt_000009.pt, which does not exist"):
        resolve_checkpoint(tmp_path)


def test_compatibility_names_what_differs():
    ck = {"path": "C", "task": "cartpole-balance", "algo_name": "ppo", "shapes": {"a.w": (4, 5)}}
    check_compatible(ck, task="cartpole-balance", algo_name="ppo", shapes={"a.w": (4, 5)})
    with pytest.raises(
        CheckpointError,
        match=r"trained on task 'cartpole-balance', this run is task 'cartpole-swingup'",
    ):
        check_compatible(ck, task="cartpole-swingup", algo_name="ppo", shapes={"a.w": (4, 5)})
    with pytest.raises(CheckpointError, match=r"algorithm 'ppo', this run uses 'fastsac'"):
        check_compatible(ck, task="cartpole-balance", algo_name="fastsac", shapes={})
    with pytest.raises(
        CheckpointError, match=r"network shape: a.w: \[4, 5\] in the checkpoint, \[8, 5\] here"
    ):
        check_compatible(ck, task="cartpole-balance", algo_name="ppo", shapes={"a.w": (8, 5)})
    with pytest.raises(CheckpointError, match=r"b.w: absent in the checkpoint, \[1\] here"):
        check_compatible(
            ck, task="cartpole-balance", algo_name="ppo", shapes={"a.w": (4, 5), "b.w": (1,)}
        )


def test_tensor_shapes_skip_optimizer_state():
    state = {
        "actor": {"w": torch.zeros(3, 2), "b": torch.zeros(3)},
        "optimizer": {"s": torch.zeros(9)},
    }
    assert tensor_shapes(state) == {"actor.w": (3, 2), "actor.b": (3,)}


def test_rng_round_trip():
    random.seed(3)
    torch.manual_seed(3)
    state = capture_rng(torch.device("cpu"))
    a = (random.random(), torch.rand(4))
    random.seed(99)
    torch.manual_seed(99)
    restore_rng(state, torch.device("cpu"))
    b = (random.random(), torch.rand(4))
    assert a[0] == b[0] and torch.equal(a[1], b[1])


def test_a_missing_pointer_or_a_truncated_file_names_the_complete_checkpoints(tmp_path):
    d = tmp_path / "checkpoints"
    for i in (1, 2, 3):
        save_checkpoint(d, i, _payload())
    (d / "latest").unlink()
    with pytest.raises(CheckpointError) as e:
        resolve_checkpoint(tmp_path)
    assert str(e.value) == (
        f"no 'latest' pointer in {d}; its complete checkpoints: ckpt_000003.pt, ckpt_000002.pt, "
        f"ckpt_000001.pt: give one as the path, e.g. {d / 'ckpt_000003.pt'}"
    )
    # a killed write of ckpt 3 (the pointer still names it): the older whole ones are named
    (d / "latest").write_text("ckpt_000003.pt\n")
    data = (d / "ckpt_000003.pt").read_bytes()
    (d / "ckpt_000003.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(tmp_path)
    text = str(e.value)
    assert text.startswith(f"cannot read checkpoint {d / 'ckpt_000003.pt'}: ")
    assert text.endswith(
        f"; its older complete checkpoints: ckpt_000002.pt, ckpt_000001.pt: give one as the "
        f"path, e.g. {d / 'ckpt_000002.pt'}"
    )
    assert "\n" not in text


def test_teacher_errors_say_teacher(tmp_path):
    from unilab_integration._checkpoint import load_teacher_checkpoint

    with pytest.raises(CheckpointError, match=r"^--teacher: no checkpoint at "):
        load_teacher_checkpoint(tmp_path / "nope", "cartpole-balance")
    save_checkpoint(tmp_path, 1, {**_payload(algo="fastsac")})
    with pytest.raises(CheckpointError, match=r"^teacher .* was trained with 'fastsac', not 'ppo'"):
        load_teacher_checkpoint(tmp_path, "cartpole-balance")
