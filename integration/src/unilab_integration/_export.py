"""A checkpoint's deterministic policy as ONNX, with the task's deployment metadata."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import warnings
from pathlib import Path
from typing import Any

import attrs
import torch

from ._config import TrainConfig
from ._restore import checkpoint_shapes, policy_from_checkpoint
from ._rollout import actor_groups

__all__ = ["METADATA_VERSION", "export_onnx", "onnx_metadata", "read_onnx_metadata"]

METADATA_VERSION = 1


def export_onnx(
    checkpoint: str | os.PathLike | dict[str, Any],
    out: str | os.PathLike,
    *,
    opset: int | None = None,
) -> Path:
    """Write the checkpoint's deterministic policy (normalizer included) as ONNX, with the
    task's deployment metadata.

    torch's current exporter (`torch.onnx.export(..., dynamo=True)`). Input `obs` [B, D]
    float32 (the actor's groups concatenated), output `actions` [B, A]; a recurrent policy
    also takes `h` (and `c` for an LSTM) [L, B, H] and returns `h_out` (`c_out`). The batch
    axis B is dynamic. The graph clamps `actions` to the task's `TaskSpec.action_bound` as
    `play` does (not at all when that is None). `metadata_props` hold JSON-encoded values:
    `onnx_metadata` and docs/integration.md list the keys.
    """
    policy, _learner, ckpt = policy_from_checkpoint(checkpoint)
    config = TrainConfig.from_dict(ckpt["config"])
    task = _task(config)
    obs_shapes, _ = checkpoint_shapes(ckpt)
    groups = actor_groups(config.algo)
    dim = sum(int(torch.Size(obs_shapes[g]).numel()) for g in groups)
    bound = task.spec.action_bound
    module = _BoundedPolicy(policy, bound).eval()
    args, inputs, outputs, dynamic = _signature(policy, dim)
    kwargs: dict[str, Any] = {} if opset is None else {"opset_version": opset}
    with _quiet_exporter():
        program = torch.onnx.export(
            module,
            args,
            input_names=inputs,
            output_names=outputs,
            dynamic_shapes=dynamic,
            dynamo=True,
            verbose=False,
            **kwargs,
        )
    meta = onnx_metadata(
        task.deployment_info(),
        algorithm=config.algo_name,
        iteration=int(ckpt["iteration"]),
        groups=groups,
        obs_dim=dim,
        inputs=inputs,
        outputs=outputs,
        recurrent=_recurrent(policy),
        clipped=bound is not None,
    )
    program.model.metadata_props.update({k: json.dumps(v) for k, v in meta.items()})
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    program.save(str(out))
    return out


# What torch 2.13's exporter says about its own internals on every export (deprecations inside
# torch.export, the GRU/LSTM flat-weight cache, a repeated axis name): nothing a user can act on.
_EXPORTER_NOISE = (
    r".*_check_is_size will be removed",
    r".*isinstance\(treespec, LeafSpec\)",
    r"The tensor attributes self\.policy\.rnn\._flat_weights",
    r".*The axis name: batch will not be used",
)


@contextlib.contextmanager
def _quiet_exporter():
    registration = logging.getLogger("torch.onnx._internal.exporter._registration")
    level = registration.level
    registration.setLevel(logging.ERROR)  # "torchvision is not installed. Skipping ..."
    try:
        with warnings.catch_warnings():
            for pattern in _EXPORTER_NOISE:
                warnings.filterwarnings("ignore", message=pattern)
            yield
    finally:
        registration.setLevel(level)


def read_onnx_metadata(path: str | os.PathLike) -> dict[str, Any]:
    """The JSON-decoded `metadata_props` of an ONNX file `export_onnx` wrote."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    return {p.key: json.loads(p.value) for p in model.metadata_props}


def onnx_metadata(
    info: dict[str, Any],
    *,
    algorithm: str,
    iteration: int,
    groups: tuple[str, ...],
    obs_dim: int,
    inputs: list[str],
    outputs: list[str],
    recurrent: dict[str, Any] | None,
    clipped: bool,
) -> dict[str, Any]:
    """The exported file's metadata: the task's `deployment_info()` (its `observations` per
    group become `observation_terms`, the terms of the input `obs` in order, each with its
    group), plus what the export knows: `metadata_version`, `algorithm`, `iteration`,
    `observation_groups`, `obs_dim`, `inputs`, `outputs`, `recurrent` (None, or
    {"type", "num_layers", "hidden_size"}) and `action_clipped` (the graph clamps to
    [-action_bound, action_bound])."""
    meta = {k: v for k, v in info.items() if k != "observations"}
    by_group = info.get("observations", {})
    if all(g in by_group for g in groups):
        terms = [{"group": g, **term} for g in groups for term in by_group[g]]
        size = sum(t["size"] * t["history"] for t in terms)
        if size == obs_dim:
            meta["observation_terms"] = terms
        else:
            warnings.warn(
                f"the task's observation terms of {list(groups)} add up to {size} values, the "
                f"policy reads {obs_dim}: observation_terms left out of the ONNX metadata",
                stacklevel=3,
            )
    meta.update(
        metadata_version=METADATA_VERSION,
        algorithm=algorithm,
        iteration=iteration,
        observation_groups=list(groups),
        obs_dim=obs_dim,
        inputs=inputs,
        outputs=outputs,
        recurrent=recurrent,
        action_clipped=clipped,
    )
    return meta


def _task(config: TrainConfig) -> Any:
    """The checkpoint's task alone (no env): its spec and deployment info."""
    import unilab_envs

    env_options = {f.name for f in attrs.fields(unilab_envs.EnvConfig)}
    kwargs = {k: v for k, v in dict(config.env.kwargs).items() if k not in env_options}
    return unilab_envs.make_task(config.task, **kwargs)


def _recurrent(policy: torch.nn.Module) -> dict[str, Any] | None:
    rnn = getattr(policy, "rnn", None)
    if rnn is None:
        return None
    kind = "lstm" if isinstance(rnn, torch.nn.LSTM) else "gru"
    return {"type": kind, "num_layers": rnn.num_layers, "hidden_size": rnn.hidden_size}


def _signature(policy: torch.nn.Module, dim: int) -> tuple[tuple, list[str], list[str], dict]:
    """Example inputs, input and output names and dynamic shapes of the exported graph."""
    batch = torch.export.Dim("batch")
    args: tuple = (torch.zeros(2, dim),)
    inputs, outputs, dynamic = ["obs"], ["actions"], {"obs": {0: batch}}
    rec = _recurrent(policy)
    if rec is not None:
        for name in ("h", "c") if rec["type"] == "lstm" else ("h",):
            args += (torch.zeros(rec["num_layers"], 2, rec["hidden_size"]),)
            inputs.append(name)
            outputs.append(f"{name}_out")
            dynamic[name] = {1: batch}
    return args, inputs, outputs, dynamic


class _BoundedPolicy(torch.nn.Module):
    """A `policy_module()` whose actions are clamped to [-bound, bound] (None: not at all),
    as `bound_actions` clamps them in `play`; a recurrent state passes through."""

    def __init__(self, policy: torch.nn.Module, bound: float | None) -> None:
        super().__init__()
        self.policy, self.bound = policy, bound

    def forward(
        self, obs: torch.Tensor, h: torch.Tensor | None = None, c: torch.Tensor | None = None
    ):
        state = [x for x in (h, c) if x is not None]
        out = self.policy(obs, *state)
        actions = out[0] if isinstance(out, tuple) else out
        if self.bound is not None:
            actions = actions.clamp(-self.bound, self.bound)
        return (actions, *out[1:]) if isinstance(out, tuple) else actions
