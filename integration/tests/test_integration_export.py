"""`unilab export` in one process on CPU: onnxruntime computes what the torch policy computes
(PPO MLP, GRU and LSTM with the hidden state as inputs and outputs, Distillation, FastSAC),
the actions are bounded as `play` bounds them, and the metadata is the task's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from unilab_dist import DistContext
from unilab_envs import make_task
from unilab_integration import (
    apply_overrides,
    export_onnx,
    load_checkpoint,
    make_config,
    read_onnx_metadata,
)
from unilab_integration._checkpoint import save_checkpoint
from unilab_integration._restore import policy_from_checkpoint
from unilab_integration._rollout import PolicyStepper
from unilab_integration._runners import OffPolicyRunner, OnPolicyRunner
from unilab_integration.cli import main

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")


def _rnn(kind):
    return [f'algo.{n}.rnn_type="{kind}"' for n in ("actor", "critic")] + [
        f"algo.{n}.rnn_hidden=8" for n in ("actor", "critic")
    ]


CASES = {
    "ppo-mlp": ("ppo", []),
    "ppo-gru": ("ppo", _rnn("gru")),
    "ppo-lstm": ("ppo", _rnn("lstm")),
    "fastsac": ("fastsac", ["algo.capture=false"]),
}


def _checkpoint(tmp_path, algo, more, task="cartpole-balance", num_envs=2):
    """A saved checkpoint whose policy weights and normalizer are random (not the init's)."""
    cfg = apply_overrides(make_config(task, algo), [f"env.num_envs={num_envs}", *more])
    cls = OffPolicyRunner if algo == "fastsac" else OnPolicyRunner
    path = cls(cfg, DistContext(), tmp_path).save()
    ck = load_checkpoint(path)
    state = ck["learner"][0]
    g = torch.Generator().manual_seed(1)
    tensors = {**state["normalizers"]} if algo == "fastsac" else {}
    for key in ("actor", "student"):
        tensors.update({f"{key}.{k}": v for k, v in state.get(key, {}).items()})
    for name, v in tensors.items():
        if v.is_floating_point() and v.dim() > 0 and "action_" not in name:
            noise = torch.randn(v.shape, generator=g)
            v.copy_(noise.abs() + 0.5 if name.endswith(("var", "std")) else v + 0.3 * noise)
    return save_checkpoint(Path(path).parent, int(ck["iteration"]), ck)


def _feeds(meta, batch, g):
    obs = torch.randn(batch, meta["obs_dim"], generator=g) * 3
    state = []
    if meta["recurrent"] is not None:
        r = meta["recurrent"]
        state = [
            torch.randn(r["num_layers"], batch, r["hidden_size"], generator=g)
            for _ in meta["inputs"][1:]
        ]
    return obs, state


def _check_parity(onnx_file, ckpt, bound):
    """onnxruntime equals the torch policy (clamped like `play`) at batch sizes 1 and 7, and a
    recurrent state fed back through the graph for 4 steps equals `PolicyStepper`'s (float32
    round-off apart: both sum in their own order)."""
    policy, _, _ = policy_from_checkpoint(ckpt)
    meta = read_onnx_metadata(onnx_file)
    session = ort.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == meta["inputs"]
    assert [o.name for o in session.get_outputs()] == meta["outputs"]
    g = torch.Generator().manual_seed(0)

    def clamp(a):
        return a if bound is None else a.clamp(-bound, bound)

    clamped = 0
    for batch in (1, 7):
        obs, state = _feeds(meta, batch, g)
        with torch.no_grad():
            out = policy(obs, *state)
        expected = [clamp(out)] if not state else [clamp(out[0]), *out[1:]]
        feeds = dict(zip(meta["inputs"], [x.numpy() for x in (obs, *state)], strict=True))
        got = session.run(None, feeds)
        assert len(got) == len(expected)
        raw = out if not state else out[0]
        for x, y in zip(got, expected, strict=True):
            _assert_close(x, y.numpy(), scale=float(raw.abs().max()))
        clamped += int((raw.abs() > 1.0).sum())
    if bound is not None and meta["algorithm"] != "fastsac":  # tanh: never beyond 1
        assert clamped > 0  # the clamp was exercised, not only the identity
    if meta["recurrent"] is None:
        return
    stepper = PolicyStepper(policy, num_envs=3, device="cpu")
    zeros = [np.zeros_like(h.numpy()) for h in stepper.state]
    state = dict(zip(meta["inputs"][1:], zeros, strict=True))
    for _ in range(4):
        obs = torch.randn(3, meta["obs_dim"], generator=g) * 3
        with torch.no_grad():
            want = clamp(stepper(obs))
        actions, *new = session.run(None, {"obs": obs.numpy(), **state})
        _assert_close(actions, want.numpy())
        state = dict(zip(meta["inputs"][1:], new, strict=True))
        for x, h in zip(new, stepper.state, strict=True):
            _assert_close(x, h.numpy())


def _assert_close(got, want, scale=0.0):
    """onnxruntime and torch sum in other orders: float32 round-off grows with the outputs'
    magnitude (an unclamped random policy's actions reach hundreds), so the absolute tolerance
    follows the largest output, before the clamp where there is one (`scale`: a clamped action
    near the bound carries the round-off of the sum it was cut from)."""
    atol = max(1e-5, 1e-6 * max(float(np.abs(want).max(initial=0.0)), scale))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=atol)


@pytest.mark.parametrize("case", sorted(CASES))
def test_onnxruntime_matches_the_torch_policy(case, tmp_path):
    algo, more = CASES[case]
    ckpt = _checkpoint(tmp_path / "run", algo, more)
    out = export_onnx(ckpt, tmp_path / "policy.onnx")
    _check_parity(out, ckpt, bound=1.0)
    meta = read_onnx_metadata(out)
    kind = case.split("-")[1] if case.startswith("ppo-") else "mlp"
    assert (meta["recurrent"] or {"type": "mlp"})["type"] == kind
    assert meta["inputs"] == {"gru": ["obs", "h"], "lstm": ["obs", "h", "c"]}.get(kind, ["obs"])


def test_distillation_student_exports_like_ppo(tmp_path):
    teacher = _checkpoint(tmp_path / "teacher", "ppo", [])
    student = _checkpoint(
        tmp_path / "student", "distill", [f"runner.teacher={json.dumps(str(teacher))}"]
    )
    out = export_onnx(student, tmp_path / "student.onnx")
    _check_parity(out, student, bound=1.0)
    assert read_onnx_metadata(out)["algorithm"] == "distill"


def _raw_metadata(path):
    """`metadata_props` read with `onnx` alone: every value a JSON document."""
    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    return {p.key: json.loads(p.value) for p in model.metadata_props}


EXPORT_KEYS = {
    "metadata_version",
    "algorithm",
    "iteration",
    "observation_groups",
    "obs_dim",
    "inputs",
    "outputs",
    "recurrent",
    "action_clipped",
}


def _check_metadata(meta, ckpt, *, algorithm, groups, recurrent=None):
    config = load_checkpoint(ckpt)["config"]["env"]
    task = make_task(config["task"], **config["kwargs"])
    info = task.deployment_info()
    terms = [{"group": g, **t} for g in groups for t in info["observations"][g]]
    expected = {k: v for k, v in info.items() if k != "observations"}
    expected.update(
        metadata_version=1,
        algorithm=algorithm,
        iteration=0,
        observation_groups=list(groups),
        obs_dim=sum(task.spec.observation_dims[g] for g in groups),
        inputs=["obs"],
        outputs=["actions"],
        recurrent=recurrent,
        action_clipped=task.spec.action_bound is not None,
        observation_terms=terms,
    )
    assert meta == expected  # every field, and no other
    assert set(meta) == EXPORT_KEYS | (set(info) - {"observations"}) | {"observation_terms"}
    assert sum(t["size"] * t["history"] for t in meta["observation_terms"]) == meta["obs_dim"]
    return task


def test_metadata_of_cartpole_reads_back_with_onnx(tmp_path, capsys):
    ckpt = _checkpoint(tmp_path / "run", "ppo", [])
    out = tmp_path / "policy.onnx"
    assert main(["export", str(ckpt), str(out)]) == 0
    assert capsys.readouterr().out.strip() == (
        f"wrote {out}: input obs [B, 5], output actions [B, 1] clamped to [-1, 1]"
    )
    meta = _raw_metadata(out)
    _check_metadata(meta, ckpt, algorithm="ppo", groups=("policy",))
    assert meta["joint_names"] == ["slider"] and meta["action_scale"] == [20.0]
    assert meta["control_dt"] == pytest.approx(0.02) and meta["action_bound"] == 1.0
    assert "joint_stiffness" not in meta and "command_ranges" not in meta  # cart-pole has none


def test_metadata_of_a_velocity_task_reads_back_with_onnx(tmp_path):
    ckpt = _checkpoint(tmp_path / "run", "ppo", [], task="quadruped-velocity", num_envs=2)
    out = export_onnx(ckpt, tmp_path / "policy.onnx")
    meta = _raw_metadata(out)
    task = _check_metadata(meta, ckpt, algorithm="ppo", groups=("policy",))
    assert meta["obs_dim"] == 45 and meta["action_dim"] == 12
    assert meta["joint_names"] == list(task.robot.joint_names)
    assert meta["default_joint_pos"] == meta["action_offset"] == list(task.robot.default_pose)
    assert meta["joint_stiffness"] == [40.0, 40.0, 80.0] * 4
    assert [t["name"] for t in meta["observation_terms"]] == [
        "base_ang_vel", "projected_gravity", "command", "joint_pos", "joint_vel", "actions"
    ]  # fmt: skip
    assert meta["command_ranges"]["lin_vel_x"] == [-2.0, 2.0]
    _check_parity(out, ckpt, bound=1.0)


@pytest.mark.slow  # MJLab's kernels compile on a fresh machine
def test_an_mjlab_task_exports_unclamped_and_says_so(tmp_path):
    from unilab_envs.testing import mjlab_robot

    mjlab_robot("go1")  # skip (or fail) with the reason when no go1.xml is found
    ckpt = _checkpoint(tmp_path / "run", "ppo", [], task="go1-velocity-flat", num_envs=2)
    out = export_onnx(ckpt, tmp_path / "go1.onnx")
    meta = _raw_metadata(out)
    _check_metadata(meta, ckpt, algorithm="ppo", groups=("policy",))
    assert meta["action_bound"] is None and meta["action_clipped"] is False
    assert meta["heading_range"] == pytest.approx([-np.pi, np.pi])
    assert [t["name"] for t in meta["observation_terms"]][::6] == ["base_lin_vel", "command"]
    _check_parity(out, ckpt, bound=None)  # actions beyond [-1, 1] come out as they are
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    obs = np.random.default_rng(0).normal(size=(64, 48)).astype(np.float32) * 3
    assert np.abs(session.run(["actions"], {"obs": obs})[0]).max() > 1.0
