"""Policies from checkpoints: rebuild the learner without an env, export to ONNX, play episodes."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import torch

from ._algorithms import algos_class
from ._checkpoint import load_checkpoint
from ._config import TrainConfig
from ._envs import import_modules

__all__ = [
    "actor_groups",
    "export_onnx",
    "learner_from_checkpoint",
    "PlayResult",
    "PolicyStepper",
    "play",
    "play_episodes",
    "policy_from_checkpoint",
]


def _shapes(ckpt: dict[str, Any]) -> tuple[dict[str, tuple[int, ...]], int]:
    shapes = ckpt["shapes"]
    obs = {k[len("env.obs.") :]: tuple(v) for k, v in shapes.items() if k.startswith("env.obs.")}
    return obs, int(shapes["env.action_dim"][0])


def learner_from_checkpoint(ckpt: dict[str, Any] | str | os.PathLike, device: str = "cpu") -> Any:
    """A one-process learner (no gradient sync) holding rank 0's state of the checkpoint."""
    if not isinstance(ckpt, dict):
        ckpt = load_checkpoint(ckpt, map_location=device)
    config = TrainConfig.from_dict(ckpt["config"])
    obs_shapes, action_dim = _shapes(ckpt)
    if config.algo_name == "fastsac":
        learner = algos_class("FastSAC")(
            obs_shapes, action_dim, config.algo, num_envs=1, world_size=1, device=device
        )
    else:
        algo = config.algo
        if config.algo_name == "distill":  # the teacher's shape is in the saved state
            algo = _teacher_config(algo, ckpt["learner"][0]["teacher"])
        cls = algos_class("PPO") if config.algo_name == "ppo" else algos_class("Distillation")
        learner = cls(obs_shapes, action_dim, algo, device=device)
    state = ckpt["learner"][0]
    if config.algo_name == "fastsac":  # a saved replay shard (runner.save_replay) is not needed
        state = {k: v for k, v in state.items() if k != "replay"}
    learner.load_state_dict(state)
    if hasattr(learner, "eval_mode"):  # PPO, Distillation; FastSAC's policy has no mode
        learner.eval_mode()
    return learner


def _teacher_config(algo: Any, teacher_state: dict[str, Any]) -> Any:
    """The distillation config whose teacher network matches the saved teacher weights."""
    import attrs

    weights = [v for k, v in teacher_state.items() if k.endswith("weight") and v.dim() == 2]
    hidden = tuple(int(w.shape[0]) for w in weights[:-1])
    return attrs.evolve(algo, teacher=attrs.evolve(algo.teacher, hidden=hidden))


def policy_from_checkpoint(
    path: str | os.PathLike | dict[str, Any], device: str = "cpu"
) -> tuple[Any, Any, dict]:
    """(policy module, learner, checkpoint): the policy maps actor observations to actions.

    `path` may also be a loaded checkpoint dict (e.g. a converted MJLab checkpoint)."""
    ckpt = path if isinstance(path, dict) else load_checkpoint(path, map_location=device)
    learner = learner_from_checkpoint(ckpt, device)
    policy = copy.deepcopy(learner.policy_module()).eval()
    return policy, learner, ckpt


def actor_groups(algo_config: Any) -> tuple[str, ...]:
    """The observation groups the policy reads, in the order `policy_module()` concatenates."""
    for name in ("actor_obs", "student_obs"):
        groups = getattr(algo_config, name, None)
        if groups is not None:
            return tuple(groups)
    return (algo_config.actor_obs_group,)


def policy_input(groups: tuple[str, ...], obs: Any) -> torch.Tensor:
    """The tensor `policy_module()` takes: `("obs", g)` of the actor's groups, concatenated."""
    return torch.cat([obs["obs", g] for g in groups], dim=-1)


def bound_actions(env: Any, actions: torch.Tensor) -> torch.Tensor:
    """`actions` clamped as the env's task wants: to [-b, b] with b = its
    `TaskSpec.action_bound`, unchanged when that is None (MJLab's tasks act unbounded). An env
    without a task spec gets UniLab's default contract, [-1, 1]."""
    spec = getattr(getattr(env, "task", None), "spec", None)
    bound = getattr(spec, "action_bound", 1.0) if spec is not None else 1.0
    return actions if bound is None else actions.clamp(-bound, bound)


class PolicyStepper:
    """Deterministic actions from a `policy_module()`, one env step at a time.

    A feed-forward module maps the actor observation to the action. A recurrent one
    (`(obs, h[, c]) -> (mean, h[, c])`, PPO's and Distillation's recurrent export) carries a
    hidden state per world: zero at the start and zeroed by `reset(done)` where an episode
    ended, as the actor's memory is during training.
    """

    def __init__(self, policy: torch.nn.Module, num_envs: int, device: str | torch.device) -> None:
        self.policy = policy
        self.state: tuple[torch.Tensor, ...] | None = None
        rnn = getattr(policy, "rnn", None)
        if rnn is not None:
            shape = (rnn.num_layers, num_envs, rnn.hidden_size)
            count = 2 if isinstance(rnn, torch.nn.LSTM) else 1
            self.state = tuple(torch.zeros(shape, device=device) for _ in range(count))

    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        if self.state is None:
            return self.policy(obs)
        out = self.policy(obs, *self.state)
        self.state = tuple(out[1:])
        return out[0]

    def reset(self, done: torch.Tensor) -> None:
        """Zero the hidden state of the worlds whose episode ended (`done` [N] bool)."""
        if self.state is not None:
            for h in self.state:
                h[:, done] = 0.0


def learner_config(ckpt: dict[str, Any]) -> Any:
    """The algorithm config stored in a checkpoint."""
    return TrainConfig.from_dict(ckpt["config"]).algo


def export_onnx(
    checkpoint: str | os.PathLike, out: str | os.PathLike, *, opset: int | None = None
) -> Path:
    """Write the checkpoint's policy (normalizer included) as ONNX: input `obs` [B, D] float32,
    output `actions` [B, A]; the batch axis is dynamic."""
    policy, _learner, ckpt = policy_from_checkpoint(checkpoint)
    obs_shapes, _ = _shapes(ckpt)
    groups = actor_groups(learner_config(ckpt))
    dim = sum(int(torch.Size(obs_shapes[g]).numel()) for g in groups)
    example = torch.zeros(2, dim)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    kwargs: dict[str, Any] = {} if opset is None else {"opset_version": opset}
    torch.onnx.export(
        policy,
        (example,),
        str(out),
        input_names=["obs"],
        output_names=["actions"],
        dynamic_axes={"obs": {0: "batch"}, "actions": {0: "batch"}},
        dynamo=False,
        **kwargs,
    )
    return out


@attrs.frozen(kw_only=True)
class PlayResult:
    """What `play_episodes` measured.

    Attributes:
        returns: undiscounted returns of the first `episodes` finished episodes (all worlds).
        video: the mp4 written, or None.
        frames: frames in the video (= the sum of `video_lengths`).
        fps: the video's frame rate (frames per s).
        video_lengths: lengths in control steps of world 0's recorded episodes.
        video_returns: returns of world 0's recorded episodes.
        terms: the task's reward terms: for each, its sum over each of the episodes in
            `returns` (same order); empty for an env without per-term episode sums.
        curriculum_level: the curriculum level the episodes ran at (restored from the
            checkpoint, rank 0's), or None for a task without a curriculum.
    """

    returns: list[float]
    terms: dict[str, list[float]] = attrs.field(factory=dict)
    curriculum_level: float | None = None
    video: Path | None = None
    frames: int = 0
    fps: float | None = None
    video_lengths: tuple[int, ...] = ()
    video_returns: tuple[float, ...] = ()


_VIDEO_HINT = 'pip install "unilab-integration[video]"'


def _imageio() -> Any:
    """`imageio.v2` with its ffmpeg plugin, or an ImportError naming the extra to install."""
    try:
        import imageio.v2 as iio
        import imageio_ffmpeg  # noqa: F401 (the mp4 writer's ffmpeg binary)
    except ImportError as e:
        raise ImportError(
            f"--video needs the imageio and imageio-ffmpeg packages ({e}): {_VIDEO_HINT}"
        ) from e
    return iio


def _check_video_args(video_episodes: int, width: int, height: int, fps: float | None) -> None:
    if video_episodes < 1:
        raise ValueError(f"video_episodes must be >= 1, got {video_episodes}")
    for name, value in (("width", width), ("height", height)):
        if value < 2 or value % 2:
            raise ValueError(
                f"video {name} must be an even number of pixels >= 2 (H.264 4:2:0), got {value}"
            )
    if fps is not None and not fps > 0:
        raise ValueError(f"video fps must be > 0, got {fps}")


class _VideoWriter:
    """Frames of world 0 to an mp4, written to a temporary name and renamed when complete."""

    def __init__(self, env: Any, out: Path, width: int, height: int, fps: float, camera) -> None:
        from unilab_envs.render import Renderer

        iio = _imageio()
        self.renderer = Renderer(env, width=width, height=height, camera=camera)
        self.out, self.frames = out, 0
        out.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = out.with_name(f".{out.stem}.partial{os.getpid()}{out.suffix or '.mp4'}")
        try:
            self.writer = iio.get_writer(
                str(self.tmp),
                format="FFMPEG",
                mode="I",
                fps=fps,
                codec="libx264",
                macro_block_size=1,
                ffmpeg_log_level="error",
            )
        except BaseException:
            self.renderer.close()
            raise

    def add(self) -> None:
        self.writer.append_data(self.renderer.frame(0))
        self.frames += 1

    def finish(self, ok: bool) -> None:
        self.renderer.close()
        try:
            self.writer.close()
        finally:
            if ok:
                os.replace(self.tmp, self.out)
            elif self.tmp.exists():
                self.tmp.unlink()


def play_episodes(
    checkpoint: str | os.PathLike,
    *,
    episodes: int = 10,
    num_envs: int = 8,
    seed: int = 0,
    device: str = "cpu",
    max_steps: int | None = None,
    video: str | os.PathLike | None = None,
    video_episodes: int = 1,
    width: int = 640,
    height: int = 480,
    fps: float | None = None,
    camera: int | str | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    one_per_world: bool = False,
    observer: Callable[[Any, Any, Any], None] | None = None,
) -> PlayResult:
    """Run the deterministic policy until `episodes` episodes end (across all worlds).

    With `video`, world 0 is rendered offscreen (`unilab_envs.render.Renderer`; MuJoCo's
    backend comes from `MUJOCO_GL`, e.g. egl or osmesa) from the reset until it has finished
    `video_episodes` episodes, and written as an H.264 mp4 at `fps` (default 1 / env.step_dt,
    real time) with imageio + imageio-ffmpeg (`pip install "unilab-integration[video]"`).
    The video holds one frame per control step: the state at the start of each step of each
    recorded episode, so `frames == sum(video_lengths)`. The file appears only when complete.

    `checkpoint` may be a loaded checkpoint dict. `env_kwargs` are merged over the
    checkpoint's env options (`unilab_envs.make` overrides). With `one_per_world` only the
    first episode each world ends is counted (fresh episodes: no bias toward short ones).
    `observer(env, obs, step)`, if given, is called after every env step with the env, the
    observation the policy acted on and the step's output (the tracking evaluator reads its
    metrics there).
    """
    import unilab_envs

    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    if video is not None:
        _check_video_args(video_episodes, width, height, fps)
        _imageio()  # fail before loading anything when the extra is missing
    policy, _learner, ckpt = policy_from_checkpoint(checkpoint, device)
    config = TrainConfig.from_dict(ckpt["config"])
    groups = actor_groups(config.algo)
    import_modules(config.runner.imports)
    kwargs = {**dict(config.env.kwargs), **dict(env_kwargs or {})}
    env = unilab_envs.make(config.task, num_envs=num_envs, device=device, seed=seed, **kwargs)
    level = restore_curriculum(env, ckpt)
    wanted = max(episodes, video_episodes if video is not None else 0)
    limit = max_steps if max_steps is not None else 10 * int(env.max_episode_steps) * wanted
    rate = float(fps) if fps is not None else 1.0 / float(env.step_dt)
    returns: list[float] = []
    terms: dict[str, list[float]] = {}
    lengths: list[int] = []
    vreturns: list[float] = []
    obs = env.reset()
    counted = torch.zeros(num_envs, dtype=torch.bool, device=obs.device)
    stepper = PolicyStepper(policy, num_envs, device)
    writer = None
    if video is not None:
        writer = _VideoWriter(env, Path(video), width, height, rate, camera)
    ok = False
    try:
        if writer is not None:
            writer.add()
        recording = writer is not None
        with torch.no_grad():
            for _ in range(limit):
                actions = bound_actions(env, stepper(policy_input(groups, obs)))
                step = env.step(actions)
                if observer is not None:
                    observer(env, obs, step)
                done = step["done"]
                stepper.reset(done)
                ended = done & ~counted if one_per_world else done
                counted |= done
                if bool(ended.any()):
                    returns += step["episode", "return"][ended].tolist()
                    for name in episode_term_names(step):
                        terms.setdefault(name, []).extend(step["episode", name][ended].tolist())
                if recording:
                    if bool(done[0]):
                        lengths.append(int(step["episode", "length"][0]))
                        vreturns.append(float(step["episode", "return"][0]))
                    if len(lengths) >= video_episodes:
                        recording = False
                    else:
                        writer.add()  # after an auto-reset: the next episode's first state
                obs = step
                if len(returns) >= episodes and not recording:
                    break
        ok = writer is not None and len(lengths) >= video_episodes
    finally:
        if writer is not None:
            writer.finish(ok)
    if writer is not None and not ok:
        raise RuntimeError(
            f"world 0 finished {len(lengths)} of {video_episodes} video episodes within "
            f"{limit} steps; no video written"
        )
    return PlayResult(
        returns=returns[:episodes],
        terms={name: values[:episodes] for name, values in terms.items()},
        curriculum_level=level,
        video=Path(video) if writer is not None else None,
        frames=writer.frames if writer is not None else 0,
        fps=rate if writer is not None else None,
        video_lengths=tuple(lengths),
        video_returns=tuple(vreturns),
    )


def episode_term_names(step: Any) -> list[str]:
    """The per-term episode sums an env step carries: ("episode", name) beside return/length."""
    if "episode" not in step.keys():  # noqa: SIM118 (TensorDict has no `in`)
        return []
    return [k for k in step["episode"].keys() if k not in ("return", "length")]  # noqa: SIM118


def restore_curriculum(env: Any, ckpt: dict[str, Any]) -> float | None:
    """Put rank 0's curriculum state from `ckpt` into `env` (before its reset); return the level.

    A policy is evaluated under the commands it was trained at: without this, a fresh env
    starts at the curriculum's first level. Returns None when the env has no curriculum; a
    checkpoint without curriculum state (an env that had none) leaves the env as it is.
    """
    curriculum = getattr(env, "curriculum", None)
    if curriculum is None:
        return None
    states = ckpt.get("curriculum") or [None]
    if states[0] is not None:
        curriculum.load_state_dict(states[0])
    return float(curriculum.level)


def play(
    checkpoint: str | os.PathLike,
    *,
    episodes: int = 10,
    num_envs: int = 8,
    seed: int = 0,
    device: str = "cpu",
    max_steps: int | None = None,
    **video: Any,
) -> list[float]:
    """Run the deterministic policy until `episodes` episodes end; return their returns.

    `video=out.mp4` and the other keywords of `play_episodes` also write a video of world 0.
    """
    return play_episodes(
        checkpoint,
        episodes=episodes,
        num_envs=num_envs,
        seed=seed,
        device=device,
        max_steps=max_steps,
        **video,
    ).returns
