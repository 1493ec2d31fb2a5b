"""The learner contract: what a runner drives, written once as typing protocols.

`Learner` is what every learner offers; `OnPolicyLearner` (PPO, Distillation) adds the rollout
(`init_storage`, `process_env_step`, `compute_returns`) and `OffPolicyLearner` (FastSAC) adds
`observe`. A runner (`unilab_integration`'s, or your own loop) needs nothing else, so a new
algorithm is a learner with these members plus its config.

One iteration of an on-policy runner, on each rank:

    learner.train_mode()
    for _ in range(steps):                       # under torch.no_grad()
        step = env.step(learner.act(obs))
        learner.process_env_step(step)
        obs = step.select("obs")
    learner.compute_returns(obs)
    metrics = learner.update()                   # {"name": float}, synced inside

and of an off-policy runner, per env step: `act`, `env.step`, `observe(obs, actions, step)`,
`update()`. Both protocols are runtime-checkable: `isinstance(x, OnPolicyLearner)` checks that
the members exist (`missing_members` names those that do not); signatures are the type
checker's to verify.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import torch
from tensordict import TensorDictBase
from torch import nn

from .cuda_graphs import CaptureStatus


@runtime_checkable
class Learner(Protocol):
    """What every learner offers a runner.

    - `config`: the config the learner was built with (checkpoints record it, so a run resumes,
      plays and exports with the same networks).
    - `capture_status`: part ("update", "rollout", ...) -> how it runs (`CaptureStatus`:
      captured in a CUDA graph, or eager and why); empty for a learner that captures nothing.
    - `act(obs)`: actions `[N, A]` for the TensorDict of observation groups `("obs", g)`.
    - `update()`: one learning step over what was collected; returns metric name -> float
      (what the logs show; "collectives" is the count of collectives it issued, if any).
    - `train_mode()` / `eval_mode()`: before collecting / before playing.
    - `replicated_modules()`: the modules that must be identical on every rank (broadcast at
      start, checked by the replica check, fingerprinted on resume).
    - `optimizers()`: the optimizers whose state must be identical on every rank (the replica
      check compares it), in a fixed order.
    - `policy_module()`: the deterministic policy `obs [B, D] -> action [B, A]` (normalizer
      included) that play, evaluation and ONNX export run; it shares the learner's parameters.
    - `state_dict()` / `load_state_dict(state)`: everything needed to resume this rank.
    """

    config: Any

    @property
    def capture_status(self) -> Mapping[str, CaptureStatus]: ...

    def act(self, obs: TensorDictBase) -> torch.Tensor: ...

    def update(self) -> Mapping[str, float]: ...

    def train_mode(self) -> None: ...

    def eval_mode(self) -> None: ...

    def replicated_modules(self) -> list[nn.Module]: ...

    def optimizers(self) -> list[torch.optim.Optimizer]: ...

    def policy_module(self) -> nn.Module: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: Mapping[str, Any]) -> None: ...


@runtime_checkable
class OnPolicyLearner(Learner, Protocol):
    """A `Learner` that collects a rollout of `num_steps` per env, then updates on it.

    - `init_storage(num_envs, num_steps)`: allocate the rollout storage (once, before the
      first step).
    - `process_env_step(step)`: record the env step's outputs (rewards, dones, time-outs) for
      the transition `act` started.
    - `compute_returns(last_obs)`: returns and advantages after the rollout's last step.
    """

    def init_storage(self, num_envs: int, num_steps: int) -> Any: ...

    def process_env_step(self, step: TensorDictBase) -> None: ...

    def compute_returns(self, last_obs: TensorDictBase) -> None: ...


@runtime_checkable
class OffPolicyLearner(Learner, Protocol):
    """A `Learner` that stores every transition and updates after each env step.

    - `observe(obs, actions, step)`: add the transition to this rank's replay shard.
    """

    def observe(self, obs: TensorDictBase, actions: torch.Tensor, step: TensorDictBase) -> None: ...


_PROTOCOLS = {"on-policy": OnPolicyLearner, "off-policy": OffPolicyLearner}


def missing_members(learner: object, kind: str) -> list[str]:
    """The members of the protocol of `kind` ("on-policy" or "off-policy") that `learner`
    lacks, in the protocol's order (empty: it is one)."""
    try:
        protocol = _PROTOCOLS[kind]
    except KeyError:
        raise ValueError(f"learner kind must be one of {tuple(_PROTOCOLS)}, not {kind!r}") from None
    names: list[str] = []
    for cls in reversed(protocol.__mro__):
        if cls in (object, Protocol) or not getattr(cls, "_is_protocol", False):
            continue
        names += [n for n in _members(cls) if n not in names]
    return [n for n in names if not hasattr(learner, n)]


def _members(cls: type) -> list[str]:
    own = [*inspect.get_annotations(cls), *vars(cls)]
    return [n for n in dict.fromkeys(own) if not n.startswith("_")]
