"""Capture and restore an env's state in checkpoints, for bit-for-bit resume.

When the env offers `state_dict()` / `load_state_dict()` (unilab_envs' `VecEnv` does) those are
used. Otherwise, for an env built like a `VecEnv` (warp arrays on the env, its task, its
`ctx` and the MJWarp model and data), every warp array reachable from those owners is copied
to host numpy arrays (at checkpoints only).
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["capture_env_state", "restore_env_state"]


def _owners(env: Any) -> dict[str, Any]:
    ctx = getattr(env, "ctx", None)
    owners = {"env": env, "task": getattr(env, "task", None)}
    if ctx is not None:
        owners.update(ctx=ctx, data=getattr(ctx, "data", None), model=getattr(ctx, "model", None))
    return {k: v for k, v in owners.items() if v is not None}


def _arrays(env: Any) -> dict[str, Any]:
    import warp as wp

    out: dict[str, Any] = {}
    for prefix, owner in _owners(env).items():
        if attrs.has(type(owner)):
            items = [(f.name, getattr(owner, f.name, None)) for f in attrs.fields(type(owner))]
        elif hasattr(owner, "__dict__"):
            items = list(vars(owner).items())
        else:
            continue
        for name, value in items:
            if isinstance(value, wp.array) and value.size > 0:
                out[f"{prefix}.{name}"] = value
    return out


def capture_env_state(env: Any) -> dict[str, Any]:
    """The env's state: `env.state_dict()` if it has one, else a copy of its warp arrays."""
    if hasattr(env, "state_dict"):
        return {"kind": "state_dict", "state": env.state_dict()}
    return {"kind": "warp", "arrays": {k: a.numpy().copy() for k, a in _arrays(env).items()}}


def restore_env_state(env: Any, state: dict[str, Any]) -> None:
    """Put back a state from `capture_env_state` (ValueError if it does not fit this env)."""
    if state["kind"] == "state_dict":
        env.load_state_dict(state["state"])
        return
    arrays = _arrays(env)
    saved = state["arrays"]
    if set(saved) != set(arrays):
        missing = sorted(set(saved) ^ set(arrays))[:5]
        raise ValueError(f"saved env state does not match this env (differs in {missing})")
    for key, array in arrays.items():
        if tuple(saved[key].shape) != tuple(array.numpy().shape):
            raise ValueError(f"saved env state {key} has shape {saved[key].shape}")
        array.assign(saved[key])
