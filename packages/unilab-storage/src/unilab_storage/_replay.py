"""`ReplayShard`: a rank-local device ring buffer of transitions with n-step sampling."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.utils import NestedKey

from ._checks import check_leaves, gather, leaf_specs, positive_int, resolve_device

__all__ = ["ReplayShard"]


class ReplayShard:
    """Ring buffer of `capacity` transitions, written `N` environments at a time.

    `template` is one `add()`'s TensorDict [N]; typical keys: ``("obs", g)``, ``"actions"``,
    ``"reward"`` [N], ``("next_obs", g)`` (the observation reached, i.e. the final observation
    where an episode ended), ``"terminated"`` [N] bool, ``"truncated"`` [N] bool. Storage is
    `[R, N]` with ``R = capacity // N`` rows (the effective capacity `R * N` is
    `self.capacity`); row ``R`` wraps to 0, overwriting the oldest row.

    `sample(B)` draws B stored transitions uniformly (with replacement) and returns a
    TensorDict [B] with every template key of the sampled transition, except that with
    n-step returns (`n_step` = n):

    - ``"reward"`` is ``sum_{k<K} gamma^k r_{t+k}`` over the same env, where K <= n stops
      after the first step that is terminated or truncated, and at the write head (a chain
      never runs into rows older than its start or not yet written: near the head K < n);
    - ``("next_obs", g)``, ``"terminated"``, ``"truncated"`` are those of step t+K-1;
    - ``"discount"`` = ``gamma^K * (1 - terminated_{t+K-1})``: the bootstrap factor of the
      target ``reward + discount * V(next_obs)``. Truncation stops the sum but keeps the
      bootstrap; termination stops it and zeroes the bootstrap;
    - ``"n_steps"`` int64 = K.

    With n = 1 this is the plain transition plus ``discount = gamma * (1 - terminated)``.
    """

    def __init__(
        self,
        capacity: int,
        template: TensorDictBase,
        device: torch.device | str | None = None,
        n_step: int = 1,
        gamma: float = 0.99,
        *,
        reward_key: NestedKey = "reward",
        terminated_key: NestedKey = "terminated",
        truncated_key: NestedKey = "truncated",
        next_obs_key: NestedKey = "next_obs",
    ) -> None:
        positive_int(capacity, "capacity")
        self.n_step = positive_int(n_step, "n_step")
        if not 0.0 <= float(gamma) <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        self.gamma = float(gamma)
        if len(template.batch_size) != 1:
            raise ValueError(
                f"ReplayShard template must have batch size [N], got {tuple(template.batch_size)}"
            )
        self.num_envs = template.batch_size[0]
        self._specs = leaf_specs(template, self.num_envs, "ReplayShard")
        self.rows = capacity // self.num_envs
        if self.rows < self.n_step:
            raise ValueError(
                f"capacity={capacity} gives {self.rows} rows of {self.num_envs} envs; "
                f"need at least n_step={self.n_step} rows"
            )
        self.capacity = self.rows * self.num_envs
        self._keys = {
            "reward": reward_key,
            "terminated": terminated_key,
            "truncated": truncated_key,
            "next_obs": next_obs_key,
        }
        present = set(template.keys(include_nested=True))
        for role, key in self._keys.items():
            if key not in present:
                raise ValueError(f"ReplayShard template lacks the {role} key {key!r}")
        reward_shape, reward_dtype = self._specs[reward_key]
        if reward_shape != ():
            raise ValueError(
                f"ReplayShard: {reward_key!r} must be [N], got per-env shape {reward_shape}"
            )
        if not reward_dtype.is_floating_point:
            raise TypeError(
                f"ReplayShard: {reward_key!r} must be floating point, got {reward_dtype}"
            )
        for flag in (terminated_key, truncated_key):
            if self._specs[flag][0] != reward_shape:
                raise ValueError(
                    f"ReplayShard: {flag!r} has per-env shape {self._specs[flag][0]}, "
                    f"expected the reward's {reward_shape}"
                )
        self.device = resolve_device(device, template)
        data = TensorDict({}, batch_size=[self.rows, self.num_envs], device=self.device)
        for key, (shape, dtype) in self._specs.items():
            data.set(
                key,
                torch.zeros((self.rows, self.num_envs, *shape), dtype=dtype, device=self.device),
            )
        self.data: TensorDict = data
        """Raw storage [R, N]; only the first `len(self) // N` rows are valid until full."""
        self._leaves = [(key, data.get(key)) for key in self._specs]
        self._flat_data = data.view(-1)  # [R*N] views of the same memory, flat = row*N + env
        self.head = 0
        """Next row to write."""
        self.filled_rows = 0
        self.num_added = 0
        """Transitions added since construction (not reset by wrap-around)."""

    def __len__(self) -> int:
        """Number of stored transitions (<= capacity)."""
        return self.filled_rows * self.num_envs

    def add(self, transitions: TensorDictBase) -> None:
        """Write one row: a TensorDict with leaves [N, ...] matching the template."""
        check_leaves(transitions, self._specs, self.num_envs, self.device, "ReplayShard.add")
        for key, buf in self._leaves:
            buf[self.head].copy_(transitions.get(key))
        self.head = (self.head + 1) % self.rows
        self.filled_rows = min(self.filled_rows + 1, self.rows)
        self.num_added += self.num_envs

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> TensorDict:
        """B transitions drawn uniformly with replacement, with n-step fields (class doc)."""
        positive_int(batch_size, "batch_size")
        if self.filled_rows == 0:
            raise ValueError("ReplayShard.sample: the buffer is empty; add() transitions first")
        flat = torch.randint(len(self), (batch_size,), generator=generator, device=self.device)
        rows, envs = flat // self.num_envs, flat % self.num_envs
        flat_data = self._flat_data
        out = gather(flat_data, flat)
        gamma = self.gamma
        k_reward, k_term, k_trunc = (self._keys[k] for k in ("reward", "terminated", "truncated"))
        reward = out.get(k_reward)
        if self.n_step == 1:
            n_steps = torch.ones(batch_size, dtype=torch.long, device=self.device)
            terminated = out.get(k_term)
        else:
            # Steps available from `rows` up to the newest row (head - 1), inclusive.
            avail = (self.head - 1 - rows) % self.rows + 1
            rew_buf, term_buf = flat_data.get(k_reward), flat_data.get(k_term)
            trunc_buf = flat_data.get(k_trunc)
            alive = ~(out.get(k_term).bool() | out.get(k_trunc).bool())
            last_flat = flat
            n_steps = torch.ones(batch_size, dtype=torch.long, device=self.device)
            for k in range(1, self.n_step):
                alive = alive & (avail > k)
                f_k = (rows + k) % self.rows * self.num_envs + envs
                # where(), not a 0/1 product: a stale row's inf/NaN must not leak in.
                reward = torch.where(
                    alive, reward + (gamma**k) * rew_buf.index_select(0, f_k), reward
                )
                last_flat = torch.where(alive, f_k, last_flat)
                n_steps = n_steps + alive.long()
                done_k = (
                    term_buf.index_select(0, f_k).bool() | trunc_buf.index_select(0, f_k).bool()
                )
                alive = alive & ~done_k
            last = gather(flat_data.select(self._keys["next_obs"], k_term, k_trunc), last_flat)
            out.set(self._keys["next_obs"], last.get(self._keys["next_obs"]))
            out.set(k_term, last.get(k_term))
            out.set(k_trunc, last.get(k_trunc))
            terminated = last.get(k_term)
        out.set(k_reward, reward)
        # gamma^K in float64, then the reward's dtype.
        discount = torch.pow(gamma, n_steps.double()) * (1.0 - terminated.double())
        out.set("discount", discount.to(reward.dtype))
        out.set("n_steps", n_steps)
        return out

    def state_dict(self, include_data: bool = True) -> dict[str, Any]:
        """Counters, configuration and (optionally) the valid rows as plain tensors."""
        state: dict[str, Any] = {
            "capacity": self.capacity,
            "num_envs": self.num_envs,
            "n_step": self.n_step,
            "gamma": self.gamma,
            "head": self.head,
            "filled_rows": self.filled_rows,
            "num_added": self.num_added,
        }
        if include_data:
            state["data"] = self.data[: self.filled_rows].clone().to_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a `state_dict()`; without "data" the buffer is emptied but counters kept.

        Raises ValueError when the capacity, env count or n-step setting differ, or the stored
        data does not match this shard's keys and shapes.
        """
        for name in ("capacity", "num_envs", "n_step"):
            if state.get(name) != getattr(self, name):
                raise ValueError(
                    f"ReplayShard.load_state_dict: {name}={state.get(name)} in the state, "
                    f"{getattr(self, name)} here"
                )
        self.num_added = int(state["num_added"])
        if "data" not in state:
            self.head = 0
            self.filled_rows = 0
            return
        filled = int(state["filled_rows"])
        rows = TensorDict.from_dict(state["data"], batch_dims=2, device=self.device)
        if tuple(rows.batch_size) != (filled, self.num_envs):
            raise ValueError(
                f"ReplayShard.load_state_dict: data has batch size {tuple(rows.batch_size)}, "
                f"expected {(filled, self.num_envs)}"
            )
        keys = set(rows.keys(include_nested=True, leaves_only=True))
        if keys != set(self._specs):
            raise ValueError(
                f"ReplayShard.load_state_dict: data keys {sorted(map(str, keys))} differ from "
                f"{sorted(map(str, self._specs))}"
            )
        for key, buf in self._leaves:
            src = rows.get(key)
            if src.shape[2:] != buf.shape[2:] or src.dtype != buf.dtype:
                raise ValueError(
                    f"ReplayShard.load_state_dict: {key!r} is {tuple(src.shape)} {src.dtype}, "
                    f"expected {(filled, *buf.shape[1:])} {buf.dtype}"
                )
            buf[:filled].copy_(src)
        self.filled_rows = filled
        self.head = int(state["head"])
