"""Per-task defaults: one typed function per task, layered by `make_config` over the preset.

    cfg = make_config("cartpole-balance", "ppo", preset="default")

    def my_task(cfg: TrainConfig) -> TrainConfig:
        return attrs.evolve(cfg, env=attrs.evolve(cfg.env, num_envs=1024))

    register_task_defaults("my-task", my_task)

A defaults function gets the composed config of the task x algorithm x preset (the preset's
algorithm config, `RunnerConfig()`, `EnvConfig(task=...)` with no env count) and returns it
changed with `attrs.evolve`, so a misspelled field is a TypeError from attrs, not a silent
string. A task with no defaults has no env count: training it needs `--num-envs` and
`--env-scope` (`EnvConfig.per_rank` says so).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from ._algorithms import algorithm_spec
from ._config import PRESETS, EnvConfig, RunnerConfig, TrainConfig

__all__ = ["TaskDefaults", "make_config", "register_task_defaults", "task_defaults"]

TaskDefaults = Callable[[TrainConfig], TrainConfig]


def _small_ppo(algo: Any) -> Any:
    return attrs.evolve(
        algo,
        actor=attrs.evolve(algo.actor, hidden=(64, 64)),
        critic=attrs.evolve(algo.critic, hidden=(64, 64)),
        num_mini_batches=4,
        num_epochs=5,
        learning_rate=1e-3,
    )


def _small_student(algo: Any) -> Any:
    return attrs.evolve(algo, student=attrs.evolve(algo.student, hidden=(64, 64)))


def _small_sac(algo: Any) -> Any:
    return attrs.evolve(
        algo,
        actor_hidden=(128, 128),
        critic_hidden=(128, 128),
        batch_size=512,
        num_updates=2,
        transitions_per_env=512,
        v_min=-10.0,
        v_max=600.0,
    )


def _mjlab_ppo(algo: Any) -> Any:
    """MJLab 1.6.0's RSL-RL PPO settings of its velocity tasks (rl_cfg.py of go1 and g1)."""
    net = {"hidden": (512, 256, 128), "activation": "elu", "normalize_obs": True}
    return attrs.evolve(
        algo,
        actor=attrs.evolve(algo.actor, **net),
        critic=attrs.evolve(algo.critic, **net),
        policy=attrs.evolve(algo.policy, init_std=1.0, std_param="std"),
        value_loss_coef=1.0,
        use_clipped_value_loss=True,
        clip_param=0.2,
        entropy_coef=0.01,
        num_epochs=5,
        num_mini_batches=4,
        learning_rate=1e-3,
        schedule="adaptive",
        gamma=0.99,
        lam=0.95,
        desired_kl=0.01,
        max_grad_norm=1.0,
    )


def _with(
    cfg: TrainConfig,
    *,
    num_envs: int,
    algos: dict[str, Any],
    checkpoint_interval: int | None = None,
    **runner: Any,
) -> TrainConfig:
    """`cfg` with `num_envs` (per rank), `runner` fields, the checkpoint interval (if given)
    and, for its algorithm, `algos`'s."""
    algo = algos.get(cfg.algo_name, lambda a: a)(cfg.algo)
    run = attrs.evolve(cfg.runner, **runner)
    if checkpoint_interval is not None:
        saving = attrs.evolve(run.checkpoints, interval=checkpoint_interval)
        run = attrs.evolve(run, checkpoints=saving)
    return attrs.evolve(cfg, env=attrs.evolve(cfg.env, num_envs=num_envs), runner=run, algo=algo)


def _cartpole(cfg: TrainConfig) -> TrainConfig:
    """Small networks, 64 envs per rank: cart-pole solves on a CPU in minutes."""
    small = {"ppo": _small_ppo, "distill": _small_student, "fastsac": _small_sac}
    return _with(cfg, num_envs=64, algos=small, num_steps_per_env=32, checkpoint_interval=20)


def _velocity(cfg: TrainConfig) -> TrainConfig:
    """UniLab's own legged velocity tasks: 4096 envs per rank."""
    return _with(cfg, num_envs=4096, algos={}, num_steps_per_env=24)


def _go1_velocity_flat(cfg: TrainConfig) -> TrainConfig:
    """MJLab 1.6.0 tasks/velocity/config/go1/rl_cfg.py (unitree_go1_ppo_runner_cfg), and
    scripts/train.py's `runner.learn(..., init_at_random_ep_len=True)`."""
    return _with(
        cfg,
        num_envs=4096,
        algos={"ppo": _mjlab_ppo},
        num_steps_per_env=24,
        iterations=10_000,
        checkpoint_interval=50,
        random_episode_start=True,
    )


def _g1_velocity_flat(cfg: TrainConfig) -> TrainConfig:
    """MJLab 1.6.0 tasks/velocity/config/g1/rl_cfg.py (unitree_g1_ppo_runner_cfg): Go1's
    except 30k iterations."""
    go1 = _go1_velocity_flat(cfg)
    return attrs.evolve(go1, runner=attrs.evolve(go1.runner, iterations=30_000))


_REGISTRY: dict[str, TaskDefaults] = {
    "cartpole-balance": _cartpole,
    "cartpole-swingup": _cartpole,
    "quadruped-velocity": _velocity,
    "humanoid-velocity": _velocity,
    "go1-velocity-flat": _go1_velocity_flat,
    "g1-velocity-flat": _g1_velocity_flat,
    # MJLab's rough tasks share their robot's runner config (rl_cfg.py) with the flat ones
    "go1-velocity-rough": _go1_velocity_flat,
    "g1-velocity-rough": _g1_velocity_flat,
}


def register_task_defaults(
    task: str, defaults: TaskDefaults, *, overwrite: bool = False
) -> TaskDefaults:
    """Make `defaults(cfg) -> cfg` the defaults of `task` (a task registered with
    `unilab_envs.register_task`, e.g. by a module named in `runner.imports`); returns
    `defaults`. ValueError if `task` already has other defaults and not `overwrite`."""
    if not isinstance(task, str) or not callable(defaults):
        raise TypeError(
            f"register_task_defaults takes a task name and a function, not {task!r}, {defaults!r}"
        )
    if not overwrite and _REGISTRY.get(task, defaults) is not defaults:
        raise ValueError(
            f"task '{task}' already has defaults ({_REGISTRY[task].__qualname__}); "
            "pass overwrite=True to replace them"
        )
    _REGISTRY[task] = defaults
    return defaults


def task_defaults(task: str) -> TaskDefaults | None:
    """The defaults function of `task`, or None when it has none."""
    return _REGISTRY.get(task)


def make_config(task: str, algo_name: str, *, preset: str = "default") -> TrainConfig:
    """The composed config of `task` x `algo_name` x `preset`: the algorithm's preset config,
    then the task's defaults (`register_task_defaults`; none: no env count). No task lookup
    happens here. A new run starts from it; a saved run's config is rebuilt from its data alone
    (`TrainConfig.from_dict`), never through this."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset '{preset}'; presets: {', '.join(PRESETS)}")
    spec = algorithm_spec(algo_name)
    algo = spec.make_config(preset)
    runner = RunnerConfig()
    if preset in ("rsl_rl", "fast"):
        runner = attrs.evolve(runner, curriculum_sync="local")
    if preset == "fast":
        runner = attrs.evolve(runner, matmul_precision="high")
    cfg = TrainConfig(
        algo_name=algo_name, preset=preset, env=EnvConfig(task=task), algo=algo, runner=runner
    )
    defaults = task_defaults(task)
    if defaults is None:
        return cfg  # no env count: EnvConfig.per_rank asks for --num-envs and --env-scope
    out = defaults(cfg)
    if not isinstance(out, TrainConfig) or (out.task, out.algo_name, out.preset) != (
        task,
        algo_name,
        preset,
    ):
        raise TypeError(
            f"the defaults of task '{task}' ({defaults.__qualname__}) must return its "
            f"TrainConfig changed (same task, algorithm and preset), not {type(out).__name__}"
        )
    return out
