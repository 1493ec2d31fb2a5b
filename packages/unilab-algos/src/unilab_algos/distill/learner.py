"""`Distillation`: a student policy cloned from a frozen teacher on the student's own rollouts.

Collectives per `update()`: `floor(E*T / L)` `grad_sync` calls ("drop") or `ceil(E*T / L)`
("flush"), student parameters only (its std is excluded: the deterministic forward gives it no
gradient); plus, outside `update()`, one `reduce_sum` per env step for a global student
normalizer. The teacher is never trained, never synced, and its normalizer never updates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from unilab_storage import RolloutStorage

from ..common.cuda_graphs import CaptureStatus
from ..common.models import GaussianActor, convert_rsl_rl_state_dict
from ..common.ranges import profiled
from ..common.sync import GradSync, ReduceSum
from ..ppo.networks import ExportPolicy, ExportRecurrentPolicy, build_actor, obs_dim
from .config import DistillationConfig
from .loss import behavior_loss

__all__ = ["Distillation"]


class Distillation:
    """Student-teacher distillation learner (same runner API as `PPO`).

    Storage keys ([T, N]): `("obs", g)`, `actions` [A] (student samples, unused by the
    update), `privileged_actions` [A] (teacher means), `rewards`, `dones`, and
    `("hidden", "student", "h"|"c")` [L, H] for a recurrent student.
    """

    def __init__(
        self,
        obs_shapes: Mapping[str, tuple[int, ...]],
        action_dim: int,
        config: DistillationConfig,
        *,
        device: torch.device | str = "cpu",
        grad_sync: GradSync | None = None,
        reduce_sum: ReduceSum | None = None,
    ) -> None:
        if not isinstance(config, DistillationConfig):
            raise TypeError(f"config must be a DistillationConfig, got {type(config).__name__}")
        self.config = cfg = config
        self.device = torch.device(device)
        self.action_dim = action_dim
        self.grad_sync = grad_sync
        self.obs_shapes = {k: tuple(v) for k, v in obs_shapes.items()}
        obs_reduce = reduce_sum if cfg.obs_norm_scope == "global" else None
        self.student: GaussianActor = build_actor(
            obs_dim(obs_shapes, cfg.student_obs),
            action_dim,
            cfg.student,
            cfg.policy,
            norm_mode=cfg.obs_norm_mode,
            reduce_sum=obs_reduce,
        ).to(self.device)
        self.teacher: GaussianActor = build_actor(
            obs_dim(obs_shapes, cfg.teacher_obs),
            action_dim,
            cfg.teacher,
            cfg.policy,
            norm_mode=cfg.obs_norm_mode,
        ).to(self.device)
        self.teacher.requires_grad_(False)
        self.teacher.eval()
        self.optimizer = torch.optim.Adam(self.student.parameters(), lr=cfg.learning_rate)
        self.teacher_loaded = False
        self.num_updates = 0
        self.storage: RolloutStorage | None = None
        self._pending: TensorDict | None = None
        self._groups = tuple(dict.fromkeys(cfg.student_obs + cfg.teacher_obs))

    def _sync_params(self) -> list[nn.Parameter]:
        return [
            p
            for n, p in self.student.named_parameters()
            if p.requires_grad and not n.endswith("std_param")
        ]

    def load_teacher(self, state: Mapping[str, Any]) -> None:
        """Load the teacher from a UniLab `PPO.state_dict()` ("actor") or an RSL-RL checkpoint
        ("actor_state_dict", converted with `convert_rsl_rl_state_dict`)."""
        if "actor" in state:
            sd = dict(state["actor"])
        elif "actor_state_dict" in state:
            sd = convert_rsl_rl_state_dict(dict(state["actor_state_dict"]))
        else:
            raise ValueError(
                "load_teacher: expected a PPO state_dict ('actor') or an RSL-RL checkpoint "
                f"('actor_state_dict'); got keys {sorted(state)}"
            )
        try:
            self.teacher.load_state_dict(sd)
        except RuntimeError as err:
            raise ValueError(
                f"load_teacher: checkpoint does not match the teacher: {err}"
            ) from None
        self.teacher_loaded = True

    def init_storage(self, num_envs: int, num_steps: int) -> RolloutStorage:
        n, a, dev = num_envs, self.action_dim, self.device
        fields: dict[Any, torch.Tensor] = {
            ("obs", g): torch.zeros(n, *self.obs_shapes[g], device=dev) for g in self._groups
        }
        fields.update(
            actions=torch.zeros(n, a, device=dev),
            privileged_actions=torch.zeros(n, a, device=dev),
            rewards=torch.zeros(n, device=dev),
            dones=torch.zeros(n, dtype=torch.bool, device=dev),
        )
        if self.student.memory is not None:
            rnn = self.student.memory.rnn
            for s in ("h", "c")[: self.student.memory.num_states]:
                fields[("hidden", "student", s)] = torch.zeros(
                    n, rnn.num_layers, rnn.hidden_size, device=dev
                )
        template = TensorDict(fields, batch_size=[n], device=dev)
        self.storage = RolloutStorage(num_steps, num_envs, template, device=dev)
        return self.storage

    @staticmethod
    def _cat(obs: TensorDictBase, groups: tuple[str, ...]) -> torch.Tensor:
        return torch.cat([obs[g] for g in groups], dim=-1) if len(groups) > 1 else obs[groups[0]]

    @torch.no_grad()
    def act(self, obs: TensorDictBase) -> torch.Tensor:
        """Student samples actions [N, A]; the teacher's mean is stored as the label."""
        if self.storage is None:
            raise RuntimeError("Distillation.act: call init_storage(num_envs, num_steps) first")
        n = self.storage.num_envs
        step = TensorDict({}, batch_size=[n], device=self.device)
        if self.student.memory is not None:
            for s, h in zip(
                ("h", "c"), self.student.memory.state_tensors(n, self.device), strict=False
            ):
                step.set(("hidden", "student", s), h.transpose(0, 1))
        obs = obs["obs"]
        mean = self.student(self._cat(obs, self.config.student_obs))
        actions = self.student.distribution(mean).sample()
        step.set("actions", actions)
        step.set("privileged_actions", self.teacher(self._cat(obs, self.config.teacher_obs)))
        for g in self._groups:
            step.set(("obs", g), obs[g])
        self._pending = step
        return actions

    @torch.no_grad()
    def process_env_step(self, step: TensorDictBase) -> None:
        if self._pending is None:
            raise RuntimeError("Distillation.process_env_step: call act() before each env step")
        self.student.update_normalizer(self._cat(step["obs"], self.config.student_obs))
        dones = step["done"].bool()
        self._pending.set("rewards", step["reward"].to(torch.float32))
        self._pending.set("dones", dones)
        self.storage.add(self._pending)
        self._pending = None
        self.student.reset(dones)
        self.teacher.reset(dones)

    def compute_returns(self, last_obs: TensorDictBase) -> None:
        """No-op (kept for the runner's uniform loop)."""

    def _initial_state(self, data: TensorDictBase):
        mem = self.student.memory
        states = [
            data["hidden", "student", s][0].transpose(0, 1).contiguous()
            for s in ("h", "c")[: mem.num_states]
        ]
        return states[0] if len(states) == 1 else tuple(states)

    def _detach_memory(self) -> None:
        mem = self.student.memory
        if mem is not None and mem.hidden_state is not None:
            hs = mem.hidden_state
            mem.hidden_state = (
                tuple(h.detach() for h in hs) if isinstance(hs, tuple) else hs.detach()
            )

    def _step(self, loss: torch.Tensor, window: int) -> None:
        if self.config.reduction == "mean":
            loss = loss / window
        self.optimizer.zero_grad()
        loss.backward()
        if self.grad_sync is not None:
            self.grad_sync(self._sync_params(), None)
            self._collectives += 1
        if self.config.max_grad_norm:
            nn.utils.clip_grad_norm_(self.student.parameters(), self.config.max_grad_norm)
        self.optimizer.step()
        self._detach_memory()

    @profiled("unilab/update")
    def update(self) -> dict[str, float]:
        """Behaviour cloning over the stored rollout; returns `behavior` (mean per-step loss over
        all E*T steps, RSL-RL's definition), `optimizer_steps` and `collectives`."""
        if not self.teacher_loaded:
            raise RuntimeError(
                "Distillation.update: no teacher is loaded, so the stored labels are an "
                "untrained network's actions; call load_teacher(ppo.state_dict()) (or "
                "load_state_dict of a distillation checkpoint) before collecting the rollout"
            )
        if self.storage is None or not self.storage.is_full:
            raise RuntimeError("Distillation.update: the rollout storage is not full")
        cfg, data = self.config, self.storage.data
        mem = self.student.memory
        saved = mem.hidden_state if mem is not None else None
        self._collectives = 0
        steps = 0
        acc = torch.zeros((), dtype=torch.float64, device=self.device)
        loss: torch.Tensor | float = 0.0
        window = cnt = 0
        for _epoch in range(cfg.num_epochs):
            if mem is not None:
                mem.set_state(self._initial_state(data))
            for t in range(data.batch_size[0]):
                batch = data[t]
                actions = self.student(self._cat(batch["obs"], cfg.student_obs))
                bl = behavior_loss(actions, batch["privileged_actions"], cfg.loss)
                loss = loss + bl
                acc += bl.detach().to(torch.float64)
                cnt += 1
                window += 1
                if cnt % cfg.gradient_length == 0:
                    self._step(loss, window)
                    steps += 1
                    loss, window = 0.0, 0
                if mem is not None:
                    self.student.reset(batch["dones"])
        if window and cfg.remainder == "flush":
            self._step(loss, window)
            steps += 1
        if mem is not None:
            mem.set_state(saved)
        self.storage.clear()
        self.num_updates += 1
        return {
            "behavior": float(acc) / cnt,
            "optimizer_steps": steps,
            "collectives": self._collectives,
        }

    @property
    def capture_status(self) -> dict[str, CaptureStatus]:
        """Nothing of Distillation is captured in a CUDA graph: an empty mapping."""
        return {}

    def train_mode(self) -> None:
        self.student.train()
        self.teacher.eval()

    def eval_mode(self) -> None:
        self.student.eval()
        self.teacher.eval()

    def replicated_modules(self) -> list[nn.Module]:
        return [self.student, self.teacher]

    def optimizers(self) -> list[torch.optim.Optimizer]:
        """The student's optimizer (the teacher is frozen)."""
        return [self.optimizer]

    def policy_module(self) -> nn.Module:
        """The student as an export module (normalizer included), like `PPO.policy_module`."""
        if self.student.is_recurrent:
            return ExportRecurrentPolicy(self.student)
        return ExportPolicy(self.student)

    def state_dict(self) -> dict[str, Any]:
        return {
            "student": self.student.state_dict(),
            "teacher": self.teacher.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "num_updates": self.num_updates,
        }

    def load_state_dict(self, sd: Mapping[str, Any]) -> None:
        missing = {"student", "teacher", "optimizer", "num_updates"} - set(sd)
        if missing:
            raise ValueError(f"Distillation.load_state_dict: missing entries {sorted(missing)}")
        self.student.load_state_dict(sd["student"])
        self.teacher.load_state_dict(sd["teacher"])
        self.optimizer.load_state_dict(sd["optimizer"])
        self.num_updates = int(sd["num_updates"])
        self.teacher_loaded = True
