"""Policies from checkpoints: rebuild the learner without an env, export to ONNX, play episodes."""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import logging
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import attrs
import torch

from ._algorithms import algorithm_spec
from ._checkpoint import load_checkpoint
from ._config import TrainConfig

if TYPE_CHECKING:
    from unilab_algos import Learner

__all__ = [
    "EpisodeCounter",
    "actor_groups",
    "export_onnx",
    "learner_from_checkpoint",
    "onnx_metadata",
    "PlayResult",
    "PolicyStepper",
    "play",
    "play_episodes",
    "policy_from_checkpoint",
    "read_onnx_metadata",
    "rollout",
]


def _shapes(ckpt: dict[str, Any]) -> tuple[dict[str, tuple[int, ...]], int]:
    shapes = ckpt["shapes"]
    obs = {k[len("env.obs.") :]: tuple(v) for k, v in shapes.items() if k.startswith("env.obs.")}
    return obs, int(shapes["env.action_dim"][0])


def learner_from_checkpoint(
    ckpt: dict[str, Any] | str | os.PathLike, device: str = "cpu"
) -> Learner:
    """A one-process learner (no gradient sync) holding rank 0's state of the checkpoint."""
    if not isinstance(ckpt, dict):
        ckpt = load_checkpoint(ckpt, map_location=device)
    config = TrainConfig.from_dict(ckpt["config"])
    obs_shapes, action_dim = _shapes(ckpt)
    spec = algorithm_spec(config.algo_name)
    algo = config.algo
    state = ckpt["learner"][0]
    if spec.teacher:
        algo = _teacher_config(algo, state["teacher"])
    learner = spec.build_learner(obs_shapes, action_dim, algo, device=device)
    if spec.replay:  # a saved replay shard (runner.save_replay) is not needed to act
        state = {k: v for k, v in state.items() if k != "replay"}
    learner.load_state_dict(state)
    learner.eval_mode()
    return learner


def _teacher_config(algo: Any, teacher_state: dict[str, Any]) -> Any:
    """The distillation config a checkpoint's learner was built with.

    Its saved config holds the teacher's network (the runner records it). Checkpoints written
    before it did hold the default teacher config: for those alone the hidden sizes are read
    from the saved teacher's weights, and the activation and the rest stay the config's."""
    import attrs

    weights = [v for k, v in teacher_state.items() if k.endswith("weight") and v.dim() == 2]
    hidden = tuple(int(w.shape[0]) for w in weights[:-1])
    if tuple(algo.teacher.hidden) == hidden:
        return algo
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
    groups = getattr(algo_config, "actor_obs", None)  # Distillation's actor is its student
    return tuple(algo_config.student_obs if groups is None else groups)


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


def rollout(
    env: Any, stepper: PolicyStepper, groups: tuple[str, ...], obs: Any, steps: int | None = None
) -> Iterator[tuple[Any, Any]]:
    """The deterministic policy's control loop, the one `play_episodes` (and so `unilab play`,
    `unilab eval`, the viewer) and the runner's evaluator run: per control step the actions of
    `stepper` on the actor groups of `obs`, bounded as the task wants (`bound_actions`), one
    env step, and the recurrent state zeroed where an episode ended. Yields (the observation
    the policy acted on, the step's output); `steps` None runs until the caller stops."""
    for _ in itertools.count() if steps is None else range(steps):
        actions = bound_actions(env, stepper(policy_input(groups, obs)))
        step = env.step(actions)
        stepper.reset(step["done"])
        yield obs, step
        obs = step


class EpisodeCounter:
    """Which ended episodes a measurement counts: every one, or with `first_only` each world's
    first (fresh episodes from the reset: no bias toward short, failed ones). `counted` [N]
    marks the worlds that have finished an episode."""

    def __init__(self, num_envs: int, device: Any, first_only: bool) -> None:
        self.counted = torch.zeros(num_envs, dtype=torch.bool, device=device)
        self.first_only = first_only

    def ended(self, step: Any) -> torch.Tensor:
        """[N] bool: the worlds whose episode ended in `step` and counts."""
        done = step["done"]
        ended = done & ~self.counted if self.first_only else done
        self.counted |= done
        return ended


def learner_config(ckpt: dict[str, Any]) -> Any:
    """The algorithm config stored in a checkpoint."""
    return TrainConfig.from_dict(ckpt["config"]).algo


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
    obs_shapes, _ = _shapes(ckpt)
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
        steps: control steps played.
        interrupted: whether Ctrl-C ended the loop (`stop_on_interrupt`).
    """

    returns: list[float]
    terms: dict[str, list[float]] = attrs.field(factory=dict)
    curriculum_level: float | None = None
    video: Path | None = None
    frames: int = 0
    fps: float | None = None
    video_lengths: tuple[int, ...] = ()
    video_returns: tuple[float, ...] = ()
    steps: int = 0
    interrupted: bool = False


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
    episodes: int | None = 10,
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
    progress: bool | TextIO = False,
    stop_on_interrupt: bool = False,
) -> PlayResult:
    """Run the deterministic policy until `episodes` episodes end (across all worlds), or
    for `max_steps` control steps (default 10 x the episode length x `episodes`; with
    `episodes=None` the step limit alone ends the loop, and without one it runs until
    interrupted).

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
    metrics there). With `progress` (True: on stderr, or a stream) one updating tqdm line
    counts the episodes done of `episodes`. With `stop_on_interrupt` a KeyboardInterrupt
    (Ctrl-C) in the loop ends it as the step limit would: the result holds the episodes
    finished until then and `interrupted=True`.
    """
    import unilab_envs

    if episodes is not None and episodes < 1:
        raise ValueError(f"episodes must be >= 1 or None, got {episodes}")
    if video is not None:
        _check_video_args(video_episodes, width, height, fps)
        _imageio()  # fail before loading anything when the extra is missing
    policy, _learner, ckpt = policy_from_checkpoint(checkpoint, device)
    config = TrainConfig.from_dict(ckpt["config"])
    groups = actor_groups(config.algo)
    kwargs = {**dict(config.env.kwargs), **dict(env_kwargs or {})}
    env = unilab_envs.make(config.task, num_envs=num_envs, device=device, seed=seed, **kwargs)
    level = restore_curriculum(env, ckpt)
    limit = max_steps
    if limit is None and episodes is not None:
        wanted = max(episodes, video_episodes if video is not None else 0)
        limit = 10 * int(env.max_episode_steps) * wanted
    rate = float(fps) if fps is not None else 1.0 / float(env.step_dt)
    returns: list[float] = []
    terms: dict[str, list[float]] = {}
    lengths: list[int] = []
    vreturns: list[float] = []
    obs = env.reset()
    episodes_counted = EpisodeCounter(num_envs, obs.device, first_only=one_per_world)
    stepper = PolicyStepper(policy, num_envs, device)
    writer = None
    if video is not None:
        writer = _VideoWriter(env, Path(video), width, height, rate, camera)
    bar = _episode_bar(episodes, progress)
    ok = interrupted = False
    steps = 0
    try:
        if writer is not None:
            writer.add()
        recording = writer is not None
        with torch.no_grad():
            for acted_on, step in rollout(env, stepper, groups, obs, limit):
                steps += 1
                if observer is not None:
                    observer(env, acted_on, step)
                done = step["done"]
                ended = episodes_counted.ended(step)
                if bool(ended.any()):
                    returns += step["episode", "return"][ended].tolist()
                    if bar is not None:
                        bar.update(min(len(returns), episodes or len(returns)) - bar.n)
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
                if episodes is not None and len(returns) >= episodes and not recording:
                    break
    except KeyboardInterrupt:
        if not stop_on_interrupt:
            raise
        interrupted = True
    finally:
        ok = writer is not None and len(lengths) >= video_episodes
        if bar is not None:
            bar.close()
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
        steps=steps,
        interrupted=interrupted,
        curriculum_level=level,
        video=Path(video) if writer is not None else None,
        frames=writer.frames if writer is not None else 0,
        fps=rate if writer is not None else None,
        video_lengths=tuple(lengths),
        video_returns=tuple(vreturns),
    )


def _episode_bar(episodes: int | None, progress: bool | TextIO) -> Any:
    """A tqdm line "episodes: done/total" (done alone without a total) on stderr
    (progress=True) or a given stream."""
    if progress is False:
        return None
    from tqdm import tqdm

    stream = sys.stderr if progress is True else progress
    return tqdm(total=episodes, desc="episodes", unit="ep", file=stream, dynamic_ncols=True)


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
