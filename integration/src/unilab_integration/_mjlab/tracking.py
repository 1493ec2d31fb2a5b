"""The velocity-tracking evaluator: how well a policy follows the command over its full range.

`evaluate_tracking(checkpoint)` plays the checkpoint's deterministic policy (what `unilab play`
runs, through its episode loop `play_episodes`) in `num_envs` fresh worlds, one episode each
(the first episode every world ends), of the checkpoint's task, with the command at the
curriculum's final stage from the first step (`task.full_range_overrides()`), not at the stage
the checkpoint was trained at. Everything else is the task as trained (observation noise,
pushes, startup randomization), unless `env_kwargs` changes it.

Metrics, over the N counted episodes; for episode e of length L_e (control steps) and its
steps t = 0..L_e-1, read from the observation o_t the policy acted on (the task's
`velocity_tracking(obs)`: the noise-free critic group):

    lin_vel_error  = mean_e [ (1/L_e) sum_t || c_xy(t) - v_xy(t) ||_2 ]     m/s
    yaw_rate_error = mean_e [ (1/L_e) sum_t |  c_wz(t) - w_z(t)  |   ]     rad/s

c: the command (vx, vy, yaw rate; heading-controlled worlds' yaw rate as the task sets it each
step); v, w: the base's linear and angular velocity in its own frame (IMU velocimeter and
gyro). `time_limit_fraction`: the fraction of the N episodes that reached the time limit
(truncated, not terminated); `mean_return`: their mean undiscounted return.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import attrs
import torch

from .._config import TrainConfig
from .._episodes import EpisodeStats
from .._play import play_episodes
from .checkpoint import load_policy_checkpoint

__all__ = ["TrackingResult", "evaluate_tracking"]


@attrs.frozen(kw_only=True)
class TrackingResult:
    """What `evaluate_tracking` measured (definitions: the module docstring)."""

    task: str
    episodes: int
    lin_vel_error: float
    yaw_rate_error: float
    time_limit_fraction: float
    mean_return: float
    mean_length: float
    command_stage: tuple
    checkpoint: str = ""

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


class _Tracker:
    """`play_episodes` observer: per-world sums over each world's first episode."""

    def __init__(self) -> None:
        self.sums: torch.Tensor | None = None  # [N, 3]: lin error, yaw error, steps
        self.episodes: EpisodeStats | None = None
        self.truncated: torch.Tensor | None = None
        self.per_episode: torch.Tensor | None = None  # [N, 2] each episode's step means

    def __call__(self, env: Any, obs: Any, step: Any) -> None:
        track = env.task.velocity_tracking(obs)
        c, v, w = track["command"], track["lin_vel"], track["ang_vel"]
        n = c.shape[0]
        if self.episodes is None:
            self.sums = torch.zeros(n, 3, dtype=torch.float64, device=c.device)
            self.episodes = EpisodeStats(c.device, num_envs=n, first_only=True)
            self.truncated = torch.zeros(n, dtype=torch.bool, device=c.device)
            self.per_episode = torch.zeros(n, 2, dtype=torch.float64, device=c.device)
        live = (~self.episodes.counted).double()  # this step belongs to the first episode
        lin = torch.linalg.vector_norm(c[:, :2] - v[:, :2], dim=-1).double()
        yaw = (c[:, 2] - w[:, 2]).abs().double()
        self.sums += live[:, None] * torch.stack([lin, yaw, torch.ones_like(lin)], dim=-1)
        first = self.episodes.ended(step)
        self.truncated |= first & step["truncated"]
        means = self.sums[:, :2] / self.sums[:, 2:].clamp(min=1.0)
        self.per_episode = torch.where(first[:, None], means, self.per_episode)


def _require_tracking(task: Any, name: str) -> None:
    for attr in ("velocity_tracking", "full_range_overrides"):
        if not callable(getattr(task, attr, None)):
            raise ValueError(
                f"task '{name}' is not a velocity-tracking task (its task has no `{attr}`); "
                "the tracking evaluator runs the {go1,g1}-velocity-{flat,rough} tasks"
            )


def evaluate_tracking(
    checkpoint: str | os.PathLike | dict[str, Any],
    *,
    num_envs: int = 4096,
    seed: int = 0,
    device: str = "cpu",
    env_kwargs: Mapping[str, Any] | None = None,
) -> TrackingResult:
    """Play the deterministic policy of `checkpoint` (a UniLab checkpoint path or run folder,
    or a loaded checkpoint dict such as `load_policy_checkpoint`'s for an MJLab one) on
    `num_envs` fresh episodes, one per world, with the command over its full range; see the
    module docstring for the metrics. `env_kwargs` (`unilab_envs.make` overrides, e.g.
    `episode_length_s`) apply on top of the checkpoint's env options and the full range."""
    import unilab_envs

    ckpt = checkpoint if isinstance(checkpoint, dict) else load_policy_checkpoint(checkpoint)
    config = TrainConfig.from_dict(ckpt["config"])
    env_options = {f.name for f in attrs.fields(unilab_envs.EnvConfig)}
    base = {**dict(config.env.kwargs), **dict(env_kwargs or {})}
    task = unilab_envs.make_task(
        config.task, **{k: v for k, v in base.items() if k not in env_options}
    )
    _require_tracking(task, config.task)
    full = task.full_range_overrides()
    kwargs = {**full, **dict(env_kwargs or {}), "copy_outputs": True}
    tracker = _Tracker()
    result = play_episodes(
        ckpt,
        episodes=num_envs,
        num_envs=num_envs,
        seed=seed,
        device=device,
        env_kwargs=kwargs,
        one_per_world=True,
        observer=tracker,
    )
    if tracker.episodes is None or not bool(tracker.episodes.counted.all()):
        raise RuntimeError("not every world finished an episode")  # play's step limit
    errors = tracker.per_episode.mean(dim=0)
    returns = result.returns
    stage = kwargs.get("command_stages", full["command_stages"])[-1]
    return TrackingResult(
        task=config.task,
        episodes=len(returns),
        lin_vel_error=float(errors[0]),
        yaw_rate_error=float(errors[1]),
        time_limit_fraction=float(tracker.truncated.double().mean()),
        mean_return=sum(returns) / len(returns),
        mean_length=float(tracker.sums[:, 2].mean()),
        command_stage=tuple(stage),
        checkpoint=str(ckpt.get("path", "")),
    )
