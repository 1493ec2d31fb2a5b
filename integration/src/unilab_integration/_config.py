"""Training configuration: one frozen attrs config per component, composed per task and algorithm.

    cfg = make_config("cartpole-balance", "ppo", preset="default")   # _task_defaults
    cfg = apply_overrides(cfg, ["algo.learning_rate=3e-4", "env.num_envs=128"])
    save_config(cfg, run_dir / "config.json")

`TrainConfig` holds `env` (EnvConfig), `algo` (the algorithm's own config from unilab_algos:
PPOConfig, DistillationConfig or FastSACConfig), `runner` (RunnerConfig) and `launch`
(LaunchSettings). Presets: `default` (UniLab's global sync settings), `rsl_rl` (RSL-RL 5.4.2
semantics: local advantages, normalizers and curriculum) and `fast` (PPO only: `rsl_rl` with
symmetry augmentation and TF32 matmuls, UniLab's recipe for the tasks with mirror maps). Every
run writes its config as JSON.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import attrs

from ._algorithms import ALGORITHMS, algorithm_spec
from ._overrides import config_from_data, config_to_dict
from ._validators import (
    distinct_texts,
    integer,
    non_negative_int,
    one_of,
    optional,
    positive_int,
    positive_number,
    text,
)

__all__ = [
    "PRESETS",
    "EnvConfig",
    "LaunchSettings",
    "CheckpointSettings",
    "EvalSettings",
    "LogSettings",
    "RunnerConfig",
    "TrainConfig",
    "WandbSettings",
    "load_config",
    "save_config",
]

PRESETS = ("default", "rsl_rl", "fast")
ENV_SCOPES = ("per-rank", "global")
CURRICULUM_SYNC = ("local", "rank0", "global")
MATMUL_PRECISIONS = ("highest", "high", "medium")
DEFAULT_LOGGERS = ("console", "jsonl", "tensorboard")
WANDB_MODES = ("online", "offline", "disabled")


TERM_KINDS = ("observations", "rewards", "terminations", "commands", "events", "curricula")


def _plain_terms(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    """The term overrides in `env.kwargs` are plain data (JSON), so that the saved config
    rebuilds the env: a term's function by name ("module:attr"), never a function object."""
    for kind in TERM_KINDS:
        if kind in value:
            _check_plain(value[kind], f"env.{kind}")


def _check_plain(value: Any, path: str) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            _check_plain(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for item in value:
            _check_plain(item, path)
    elif not (value is None or isinstance(value, str | int | float | bool)):
        raise ValueError(
            f"{path}: a TrainConfig holds term overrides as plain data (saved with the run): "
            f"give fields such as {{'func': 'module:attr', 'weight': -2.0}}, not {value!r}"
        )


@attrs.frozen(kw_only=True)
class EnvConfig:
    """The environment: task name, env count and its scope, and task keyword overrides.

    `num_envs` is per rank when `scope == "per-rank"` (RSL-RL/MJLab: W*N in total) and the
    total when `scope == "global"` (split evenly; a count not divisible by the world size is
    refused). None (the default, and a task without defaults): not given, which training
    refuses, asking for `--num-envs` and `--env-scope`. `kwargs` go to
    `unilab_envs.make(task, **kwargs)`; among them a task composed of terms takes
    `observations`, `rewards`, `terminations` (and, MJLab's tasks, `commands`, `events` and
    `curricula`) overrides as plain data (`unilab_envs.terms.overrides`: {"upright": {"weight": 2.0},
    "foot_slip": None, ...}), which the keys `env.rewards.<term>.<field>`,
    `env.observations.<group>.<term>.<field>`, `env.terminations.<term>.<field>`,
    `env.commands.<term>.<field>`, `env.events.<term>.<field>` and
    `env.curricula.<term>.<field>` set (`OVERRIDE_ROUTES`).
    """

    OVERRIDE_ROUTES: ClassVar[dict[str, str]] = dict.fromkeys(TERM_KINDS, "kwargs")

    task: str = attrs.field(validator=text)
    num_envs: int | None = attrs.field(default=None, validator=optional(positive_int))
    scope: str = attrs.field(default="per-rank", validator=one_of(*ENV_SCOPES))
    kwargs: dict[str, Any] = attrs.field(factory=dict, validator=_plain_terms)

    def per_rank(self, world_size: int) -> int:
        """Envs on each rank for `world_size` ranks (ValueError if a global count won't split,
        or if there is no count: a task without defaults)."""
        if self.num_envs is None:
            raise ValueError(
                f"task '{self.task}' has no default env count: give --num-envs N with "
                "--env-scope per-rank|global (env.num_envs, env.scope), or register the "
                "task's defaults (unilab_integration.register_task_defaults)"
            )
        if self.scope == "per-rank":
            return self.num_envs
        if self.num_envs % world_size:
            raise ValueError(
                f"env.num_envs={self.num_envs} with env.scope=global does not divide by the "
                f"world size {world_size}; choose a multiple of {world_size}"
            )
        return self.num_envs // world_size

    def total(self, world_size: int) -> int:
        """Envs over all ranks."""
        return self.per_rank(world_size) * world_size


@attrs.frozen(kw_only=True)
class WandbSettings:
    """The `wandb` logger's run (`runner.logging.loggers` with "wandb"): W&B `project` (None: the
    WANDB_PROJECT variable, else "unilab"; a resume keeps the run folder's), `entity` (None:
    WANDB_ENTITY or the account's default) and `mode` ("online", "offline" or "disabled"; None:
    the WANDB_MODE variable, else "online")."""

    project: str | None = None
    entity: str | None = None
    mode: str | None = attrs.field(default=None, validator=optional(one_of(*WANDB_MODES)))


@attrs.frozen(kw_only=True)
class CheckpointSettings:
    """Checkpoints (`runner.checkpoints`): `interval` iterations between them (one is always
    written at the end); of the run's checkpoints (of every session) the newest `keep` stay (0:
    all), and also those at multiples of `keep_every` x `interval` iterations (every N-th save;
    0: none); `latest`'s is never deleted. `replay` (FastSAC only): checkpoints also hold every
    rank's replay shard, so that a resume at the same world size continues bit for bit on CPU;
    large (the replay capacity times one transition, per rank, gathered to rank 0), hence off by
    default."""

    interval: int = attrs.field(default=50, validator=positive_int)
    keep: int = attrs.field(default=5, validator=non_negative_int)
    keep_every: int = attrs.field(default=10, validator=non_negative_int)
    replay: bool = False


@attrs.frozen(kw_only=True)
class EvalSettings:
    """Periodic evaluation (`runner.eval`): every `interval` iterations (0: never) each rank
    plays the deterministic policy (what `unilab play` runs) for one episode length in an env of
    its own with `envs` worlds (default min(envs per rank, 1024)) and logs `eval/return`,
    `eval/length`, `eval_term/<term>`; with `runner.until_solved` the evaluations, not the
    training episodes, decide (over `solved_patience` consecutive evaluations). Training is
    unaffected by it."""

    interval: int = attrs.field(default=0, validator=non_negative_int)
    envs: int | None = attrs.field(default=None, validator=optional(positive_int))


@attrs.frozen(kw_only=True)
class LogSettings:
    """Where a run writes and what it reports (`runner.logging`): the run folder is
    `log_dir`/`run_name` (None: a time stamp). `loggers`: where rank 0 sends each iteration's
    global metrics (`unilab_integration.register_sink` adds names): "console" (the table and, on
    a terminal, the progress bar, `progress`), "jsonl" (RUN/metrics.jsonl), "tensorboard"
    (RUN/tensorboard/) and "wandb" (Weights & Biases, `wandb`: `WandbSettings`; needs
    `pip install "unilab-integration[wandb]"`)."""

    log_dir: str = "runs"
    run_name: str | None = None
    progress: bool = True
    loggers: tuple[str, ...] = attrs.field(default=DEFAULT_LOGGERS, validator=distinct_texts)
    wandb: WandbSettings = attrs.field(factory=WandbSettings)


@attrs.frozen(kw_only=True)
class RunnerConfig:
    """The training loop; its checkpoints, evaluation and logging are sections of their own
    (`checkpoints`: `CheckpointSettings`, `eval`: `EvalSettings`, `logging`: `LogSettings`).

    Budget: `iterations` and/or `env_steps` (global env steps over all ranks), both totals of
    the run, counted from its start on resume too; the run stops at the first one reached, or
    earlier with `until_solved` when the global mean episode return of `solved_patience`
    consecutive iterations reaches the task's success threshold.
    `num_steps_per_env`: steps per env per iteration (the on-policy rollout length T; the
    number of env steps between update phases off-policy). `curriculum_sync`: `local` (each
    rank its own), `rank0` (rank 0's state broadcast) or `global` (metrics reduced, same
    decision).
    `check_finite`: stop on NaN/inf in observations, losses, gradients or parameters.
    `deterministic`: torch deterministic algorithms (bit-for-bit resume on CPU).
    `matmul_precision`: `torch.set_float32_matmul_precision` in every worker: "highest"
    (default: float32 matmuls, as RSL-RL), "high" (TF32 tensor cores on NVIDIA GPUs, what
    MJLab's train script sets; its effect on PPO's update: docs/benchmarks/ppo-update.md) or
    "medium" (bfloat16 internally).
    `imports`: modules imported in every worker before the env is made (custom tasks).
    `check_replicas_interval`: every N iterations (0: never) every rank checks that its
    replicated modules and optimizer state equal rank 0's (`unilab_dist.check_replicas`;
    rank-local normalizer statistics excluded) and the run stops naming the rank and tensor
    that differ; each check's seconds are logged as `perf/check_replicas_s`.
    `random_episode_start`: at the start of a run (not on a resume that restores the env),
    every world moves to a random step of its first episode (`VecEnv.
    randomize_episode_lengths`; RSL-RL's `init_at_random_ep_len`, which MJLab's train script
    sets), so that the worlds' time limits do not all fall on one step; the MJLab tasks'
    defaults turn it on.
    `profile`: every iteration synchronizes the device between its phases and logs rank 0's
    seconds per phase, `profile/<phase>_s` (`_runners/_profile.py`, docs/integration.md);
    this serializes the GPU, so `perf/steps_per_s` is below an unprofiled run's.
    """

    seed: int = attrs.field(default=0, validator=integer)
    iterations: int | None = attrs.field(default=None, validator=optional(positive_int))
    env_steps: int | None = attrs.field(default=None, validator=optional(positive_int))
    until_solved: bool = False
    solved_patience: int = attrs.field(default=2, validator=positive_int)
    num_steps_per_env: int = attrs.field(default=24, validator=positive_int)
    curriculum_sync: str = attrs.field(default="global", validator=one_of(*CURRICULUM_SYNC))
    check_finite: bool = True
    deterministic: bool = False
    matmul_precision: str = attrs.field(default="highest", validator=one_of(*MATMUL_PRECISIONS))
    teacher: str | None = None
    imports: tuple[str, ...] = ()
    check_replicas_interval: int = attrs.field(default=0, validator=non_negative_int)
    random_episode_start: bool = False
    profile: bool = False
    checkpoints: CheckpointSettings = attrs.field(factory=CheckpointSettings)
    eval: EvalSettings = attrs.field(factory=EvalSettings)
    logging: LogSettings = attrs.field(factory=LogSettings)

    # keys of configs written before the runner had sections: where each lives now (a saved
    # config is read with them moved; a command line that names one is told the new key)
    MOVED_KEYS: ClassVar[dict[str, str]] = {
        "save_interval": "checkpoints.interval",
        "keep_checkpoints": "checkpoints.keep",
        "keep_every": "checkpoints.keep_every",
        "save_replay": "checkpoints.replay",
        "eval_interval": "eval.interval",
        "eval_envs": "eval.envs",
        "log_dir": "logging.log_dir",
        "run_name": "logging.run_name",
        "progress": "logging.progress",
        "loggers": "logging.loggers",
        "wandb": "logging.wandb",
    }


def sectioned_runner(runner: Mapping[str, Any]) -> dict[str, Any]:
    """A saved `runner` mapping with the flat keys of configs written before the runner had
    sections (`RunnerConfig.MOVED_KEYS`) moved into their sections (a key present in both forms
    keeps the section's value)."""
    moved = RunnerConfig.MOVED_KEYS
    out = {k: v for k, v in runner.items() if k not in moved}
    for old, new in moved.items():
        if old in runner:
            section, field = new.split(".")
            part = dict(out.get(section) or {})
            part.setdefault(field, runner[old])
            out[section] = part
    return out


@attrs.frozen(kw_only=True)
class LaunchSettings:
    """Where the workers run: `gpus` ("all", "0,1") or `cpu_workers` N, optional `hosts`.

    Neither gpus nor cpu_workers: every visible GPU if there is one, else 1 CPU worker per host.
    `timeout` is the collective timeout in seconds (a dead rank ends the run within it).
    """

    gpus: str | None = attrs.field(default=None, converter=attrs.converters.optional(str))
    cpu_workers: int | None = attrs.field(default=None, validator=optional(positive_int))
    hosts: str | None = None
    timeout: float = attrs.field(default=120.0, validator=positive_number)

    def __attrs_post_init__(self) -> None:
        if self.gpus is not None and self.cpu_workers is not None:
            raise ValueError("give either launch.gpus or launch.cpu_workers, not both")


def _registered_algorithm(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    """`algo_name` is a registered algorithm (the built-in ones or `register_algorithm`'s)."""
    one_of(*ALGORITHMS)(instance, attribute, value)


@attrs.frozen(kw_only=True)
class TrainConfig:
    """Everything one training run needs; saved as config.json in the run directory."""

    algo_name: str = attrs.field(validator=_registered_algorithm)
    preset: str = attrs.field(default="default", validator=one_of(*PRESETS))
    env: EnvConfig
    algo: Any
    runner: RunnerConfig = attrs.field(factory=RunnerConfig)
    launch: LaunchSettings = attrs.field(factory=LaunchSettings)

    def __attrs_post_init__(self) -> None:
        if self.runner.checkpoints.replay and not algorithm_spec(self.algo_name).replay:
            with_replay = ", ".join(n for n, a in ALGORITHMS.items() if a.replay)
            raise ValueError(
                f"runner.checkpoints.replay applies to algorithms with a replay buffer ({with_replay}); "
                f"algorithm '{self.algo_name}' has none"
            )

    @property
    def task(self) -> str:
        return self.env.task

    def to_dict(self) -> dict[str, Any]:
        return config_to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainConfig:
        """Rebuild a config saved by `to_dict` from the data and the declared types alone: no
        preset or task defaults are consulted, so a saved run keeps its values when a default
        changes (a field the data lacks takes its class default); runner keys of the flat form
        written before the runner's sections (`RunnerConfig.MOVED_KEYS`) are read in their sections.
        `algo` is built as the
        config class of its algorithm (`AlgorithmSpec.config_class`), which must be registered:
        nothing is imported here. Unknown keys raise ValueError, wrong types TypeError."""
        data = dict(data)
        for key in ("algo_name", "env", "algo"):
            if key not in data:
                raise ValueError(f"config lacks '{key}'")
        spec = algorithm_spec(data["algo_name"])
        algo_class = spec.config_class(data.get("preset", "default"))
        if not isinstance(data["algo"], Mapping):
            raise TypeError(f"'algo' takes {algo_class.__name__} fields, not {data['algo']!r}")
        algo = config_from_data(algo_class, data["algo"], "algo")
        if isinstance(data.get("runner"), Mapping):
            data["runner"] = sectioned_runner(data["runner"])
        return config_from_data(cls, {**data, "algo": algo})


def save_config(config: TrainConfig, path: str | os.PathLike) -> None:
    """Write `config` as indented JSON, atomically."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(config.to_dict(), indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def load_config(path: str | os.PathLike) -> TrainConfig:
    """Read a config written by `save_config`."""
    return TrainConfig.from_dict(json.loads(Path(path).read_text()))
