"""The algorithms the CLI knows: their configs per preset, their learners and runner kind.

unilab_algos is imported lazily (inside the functions) so that `import unilab_integration`
stays cheap and side-effect free.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from unilab_algos import Learner

__all__ = [
    "ALGORITHMS",
    "AlgorithmSpec",
    "algorithm_spec",
    "algos_class",
    "mirror_from_env",
    "register_algorithm",
]


@attrs.frozen(kw_only=True)
class AlgorithmSpec:
    """One algorithm, everything integration needs to know of it.

    `kind` "on-policy" or "off-policy" picks the runner; `presets` are those it supports;
    `config_factory(preset)` makes its config; `learner_factory(obs_shapes, action_dim,
    algo_config, *, device, num_envs, world_size, grad_sync, reduce_sum, env)` builds its
    learner (each factory takes what its learner needs from those keywords; `env` is the
    rank's env when the learner will train, None when it is restored to act). `teacher`: it learns
    from a PPO checkpoint (`runner.teacher`; the teacher's actor network and observation
    groups go into its config as `teacher` / `teacher_obs`). `replay`: it keeps a replay
    buffer (`runner.checkpoints.replay` applies, its shard rides in the learner's state as
    "replay").
    """

    name: str
    kind: str
    description: str
    presets: tuple[str, ...]
    _config_factory: Callable[[str], Any] = attrs.field(alias="config_factory")
    _learner_factory: Callable[..., Any] = attrs.field(alias="learner_factory")
    teacher: bool = False
    replay: bool = False

    def build_learner(
        self,
        obs_shapes: dict[str, tuple[int, ...]],
        action_dim: int,
        algo: Any,
        *,
        device: Any,
        num_envs: int = 1,
        world_size: int = 1,
        grad_sync: Any = None,
        reduce_sum: Any = None,
        env: Any = None,
    ) -> Learner:
        """The learner of this algorithm (one rank's; no sync when the two are None). `env`:
        the env it trains on (None: it only acts, e.g. restored from a checkpoint).

        TypeError, naming what is missing, when it is not the learner its `kind` runs
        (`unilab_algos.OnPolicyLearner` / `OffPolicyLearner`)."""
        from unilab_algos.common import missing_members

        learner = self._learner_factory(
            obs_shapes,
            action_dim,
            algo,
            device=device,
            num_envs=num_envs,
            world_size=world_size,
            grad_sync=grad_sync,
            reduce_sum=reduce_sum,
            env=env,
        )
        missing = missing_members(learner, self.kind)
        if missing:
            protocol = "OnPolicyLearner" if self.kind == "on-policy" else "OffPolicyLearner"
            raise TypeError(
                f"algorithm '{self.name}' built a {type(learner).__name__} that an {self.kind} "
                f"runner cannot drive: it lacks {', '.join(missing)} (the contract: "
                f"unilab_algos.{protocol})"
            )
        return learner

    def make_config(self, preset: str) -> Any:
        if preset not in self.presets:
            raise ValueError(
                f"preset '{preset}' is not available for --algo {self.name}; "
                f"its presets: {', '.join(self.presets)}"
            )
        return self._config_factory(preset)

    def config_class(self, preset: str = "default") -> type:
        """The attrs class of this algorithm's config (what a saved `algo` is built as)."""
        return type(self.make_config(preset))


def algos_class(name: str) -> Any:
    """`unilab_algos.<name>`, imported on first use."""
    import unilab_algos

    return getattr(unilab_algos, name)


def _ppo_config(preset: str) -> Any:
    from unilab_algos import PPOConfig, SymmetryConfig

    if preset == "fast":  # RSL-RL's PPO with its symmetry extension: mirrored mini-batches
        return attrs.evolve(PPOConfig.rsl_rl(), symmetry=SymmetryConfig(data_augmentation=True))
    return PPOConfig.rsl_rl() if preset == "rsl_rl" else PPOConfig()


def _distill_config(preset: str) -> Any:
    DistillationConfig = algos_class("DistillationConfig")

    if preset == "rsl_rl":
        return DistillationConfig.rsl_rl()
    return DistillationConfig()


def _fastsac_config(preset: str) -> Any:
    return algos_class("FastSACConfig")()


def _on_policy_learner(class_name: str) -> Callable[..., Any]:
    """Distillation's constructor: no env count or world size."""

    def build(obs_shapes, action_dim, algo, *, device, grad_sync, reduce_sum, **_) -> Any:
        return algos_class(class_name)(
            obs_shapes, action_dim, algo, device=device, grad_sync=grad_sync, reduce_sum=reduce_sum
        )

    return build


def _ppo_learner(
    obs_shapes, action_dim, algo, *, device, num_envs, world_size, grad_sync, reduce_sum, env, **_
) -> Any:
    """PPO: with `algo.symmetry`, the mirror maps of the env's task; with `algo.large_batch`,
    scaled for this rank's env count. Restored to act (`env` None), neither applies (both
    are settings of the update), so a checkpoint plays and exports without the env."""
    kw: dict[str, Any] = {"device": device, "grad_sync": grad_sync, "reduce_sum": reduce_sum}
    if env is None:
        algo = attrs.evolve(algo, symmetry=None, large_batch=None)
    else:
        kw.update(num_envs=num_envs, world_size=world_size)
        if algo.symmetry is not None:
            kw["mirror"] = mirror_from_env(env)
    return algos_class("PPO")(obs_shapes, action_dim, algo, **kw)


def mirror_from_env(env: Any) -> Any:
    """The `unilab_algos.Mirror` of `env`'s task (`task.mirror_maps()`: per observation group
    and for the actions), what `PPOConfig.symmetry` needs. ValueError naming the task when it
    has none (or a term without a mirror rule)."""
    from unilab_algos import Mirror, SignedPermutation

    task = getattr(env, "task", None)
    maps = getattr(task, "mirror_maps", None)
    if maps is None:
        raise ValueError(
            f"algo.symmetry needs the task's mirror maps, and env {type(env).__name__} has no "
            "task with mirror_maps(); train without algo.symmetry"
        )
    try:
        got = maps()
    except ValueError as e:
        raise ValueError(f"algo.symmetry: {e}") from None
    obs = {g: SignedPermutation(index=i, sign=s) for g, (i, s) in got.obs.items()}
    return Mirror(obs=obs, action=SignedPermutation(index=got.action[0], sign=got.action[1]))


def _fastsac_learner(obs_shapes, action_dim, algo, *, env, **kwargs) -> Any:
    return algos_class("FastSAC")(obs_shapes, action_dim, algo, **kwargs)


ALGORITHMS: dict[str, AlgorithmSpec] = {
    "ppo": AlgorithmSpec(
        name="ppo",
        kind="on-policy",
        description="Proximal Policy Optimization (on-policy, RSL-RL compatible preset)",
        presets=("default", "rsl_rl", "fast"),
        config_factory=_ppo_config,
        learner_factory=_ppo_learner,
    ),
    "distill": AlgorithmSpec(
        name="distill",
        kind="on-policy",
        description="Student-teacher distillation from a PPO checkpoint (runner.teacher=PATH)",
        presets=("default", "rsl_rl"),
        config_factory=_distill_config,
        learner_factory=_on_policy_learner("Distillation"),
        teacher=True,
    ),
    "fastsac": AlgorithmSpec(
        name="fastsac",
        kind="off-policy",
        description="FastSAC (off-policy, replay shard per rank, Holosoma defaults)",
        presets=("default",),
        config_factory=_fastsac_config,
        learner_factory=_fastsac_learner,
        replay=True,
    ),
}


def register_algorithm(spec: AlgorithmSpec) -> None:
    """Make an algorithm known to `make_config`, `unilab train --algo` and checkpoint loading.

    Everything of the algorithm lives in its own module: its config (an attrs class), its
    learner (the runner of `spec.kind` drives it through the contract of
    `unilab_algos.OnPolicyLearner` or `unilab_algos.OffPolicyLearner`; a learner that lacks a
    member is refused when it is built) and this call. Name
    that module in `runner.imports` so that every worker, and every later `unilab play` /
    `eval` / `--resume` of the run, imports it before reading the run's config."""
    if not isinstance(spec, AlgorithmSpec):
        raise TypeError(f"register_algorithm takes an AlgorithmSpec, not {type(spec).__name__}")
    if spec.kind not in ("on-policy", "off-policy"):
        raise ValueError(f"algorithm kind must be 'on-policy' or 'off-policy', not {spec.kind!r}")
    known = ALGORITHMS.get(spec.name)
    if known is not None and known != spec:
        raise ValueError(f"algorithm '{spec.name}' is already registered ({known.description})")
    ALGORITHMS[spec.name] = spec


def algorithm_spec(name: str) -> AlgorithmSpec:
    """The spec of algorithm `name` (ValueError listing the known ones otherwise)."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ValueError(
            f"unknown algorithm '{name}'; algorithms: {', '.join(ALGORITHMS)}"
        ) from None
