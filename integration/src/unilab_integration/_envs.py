"""The bridge to unilab_envs: task lookup, env construction per rank, success thresholds.

unilab_envs and unilab_dist (torch, warp, mujoco) are imported inside the functions that need
them; `check_builtin_task` refuses an unknown task without them.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ._config import TERM_KINDS

if TYPE_CHECKING:
    from unilab_dist import DistContext

__all__ = [
    "BUILTIN_TASK_NAMES",
    "BUILTIN_TASK_ROBOTS",
    "check_builtin_task",
    "check_named_imports",
    "check_task",
    "check_term_imports",
    "import_modules",
    "make_env",
    "task_names",
]

BUILTIN_TASK_NAMES: tuple[str, ...] = (
    "cartpole-balance",
    "cartpole-swingup",
    "quadruped-velocity",
    "humanoid-velocity",
    "go1-velocity-flat",
    "g1-velocity-flat",
    "go1-velocity-rough",
    "g1-velocity-rough",
)
"""The names in `unilab_envs.tasks.BUILTIN_TASKS` (a test keeps them equal), known without
importing the env stack."""

BUILTIN_TASK_ROBOTS: dict[str, str] = {
    "go1-velocity-flat": "go1",
    "g1-velocity-flat": "g1",
    "go1-velocity-rough": "go1",
    "g1-velocity-rough": "g1",
}
"""The built-in tasks whose robot MJCF `unilab_envs.robot_files.find_mjcf` finds (MJLab's
files: `unilab robots get`), known without importing unilab_envs (a test checks each task)."""


def import_modules(names: Iterable[str]) -> None:
    """Import user modules (e.g. ones that register custom tasks) named in `runner.imports`."""
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as e:
            raise ValueError(f"runner.imports: cannot import module '{name}': {e}") from e


def check_named_imports(saved: Iterable[str], named: Iterable[str], where: str) -> None:
    """Refuse a saved config (`where`: the file it came from) whose `runner.imports` lists
    modules that this command did not name: a file never chooses code to run."""
    named = set(named)
    missing = [m for m in saved if m not in named]
    if missing:
        flags = " ".join(f"--import {m}" for m in missing)
        raise ValueError(
            f"{where} asks to import {', '.join(missing)} (its runner.imports), which this "
            f"command did not name; a file never chooses code to run: if you trust them, add "
            f"{flags}"
        )


def task_names() -> list[str]:
    """The registered task names."""
    import unilab_envs

    return list(unilab_envs.list_tasks())


def check_task(task: str) -> None:
    """ValueError naming the known tasks if `task` is not registered."""
    names = task_names()
    if task not in names:
        raise ValueError(f"unknown task '{task}'; tasks: {', '.join(sorted(names))}")


def check_env_options(task: str, kwargs: dict[str, Any], imports: Iterable[str] = ()) -> None:
    """`env.kwargs` checked in the launcher as the workers' `unilab_envs.make` checks them: an
    unknown option or a value the task refuses is a ValueError naming it, before any worker
    starts; so is a term function from a module outside `imports` (`check_term_imports`). A
    robot MJCF that this process cannot find is left to the workers, which report it with the
    ways to provide it (on other hosts it may be there)."""
    import unilab_envs
    from unilab_envs.tasks.robots import RobotFileNotFoundError

    check_term_imports(kwargs, imports)
    try:
        unilab_envs.check_overrides(task, **kwargs)
    except RobotFileNotFoundError:
        return
    except (TypeError, ValueError, KeyError) as e:
        # attrs' validators raise ValueError(message, attribute, ...): the message alone
        why = e.args[0] if e.args and isinstance(e.args[0], str) else str(e)
        if why.startswith(tuple(f"{kind}." for kind in TERM_KINDS)):
            raise ValueError(f"task '{task}': env.{why}") from None
        raise ValueError(f"env.kwargs of task '{task}': {why}") from None


def check_mirror_maps(task: str, kwargs: dict[str, Any], preset: str = "default") -> None:
    """A learner's symmetry option needs the task's mirror maps: a ValueError naming the task
    (or its term without a mirror rule) before any worker starts, when it has none; under the
    `fast` preset, which turns symmetry on, naming the presets that do not. A robot MJCF that
    this process cannot find is left to the workers, as in `check_env_options`."""
    import unilab_envs
    from unilab_envs.tasks.robots import RobotFileNotFoundError

    try:
        unilab_envs.task_mirror_maps(task, **kwargs)
    except RobotFileNotFoundError:
        return
    except ValueError as e:
        if preset == "fast":
            raise ValueError(
                f"the preset 'fast' trains with algo.symmetry, and {e}; use --preset rsl_rl "
                "or --preset default"
            ) from None
        raise ValueError(f"algo.symmetry: {e}; train without algo.symmetry") from None


def term_functions(kwargs: dict[str, Any]) -> dict[str, str]:
    """{"env.rewards.<term>.func": "module:attr"} of the term overrides in `env.kwargs` that
    name a function of a module."""
    found: dict[str, str] = {}

    def visit(terms: Any, path: str) -> None:
        for name, fields in (terms or {}).items() if isinstance(terms, dict) else ():
            func = fields.get("func") if isinstance(fields, dict) else None
            if isinstance(func, str) and ":" in func:
                found[f"{path}.{name}.func"] = func

    visit(kwargs.get("rewards"), "env.rewards")
    for kind in ("terminations", "commands", "events", "curricula"):
        visit(kwargs.get(kind), f"env.{kind}")
    groups = kwargs.get("observations")
    for group, terms in groups.items() if isinstance(groups, dict) else ():
        visit(terms, f"env.observations.{group}")
    return found


def check_term_imports(kwargs: dict[str, Any], imports: Iterable[str]) -> None:
    """Refuse a term function ("module:attr") whose module this command does not import
    (`runner.imports`, `--import`) and that is not one of unilab_envs': a config never chooses
    code to run."""
    imports = set(imports)
    for path, func in term_functions(kwargs).items():
        module = func.partition(":")[0]
        if module in imports or module == "unilab_envs" or module.startswith("unilab_envs."):
            continue
        raise ValueError(
            f"{path} is {func!r}, from a module this command does not import; a config never "
            f"chooses code to run: if you trust it, add --import {module}"
        )


def check_builtin_task(task: str) -> None:
    """`check_task` without importing unilab_envs, for a process in which only the built-in
    tasks can exist (no `runner.imports` module that could register more)."""
    if task not in BUILTIN_TASK_NAMES:
        raise ValueError(f"unknown task '{task}'; tasks: {', '.join(sorted(BUILTIN_TASK_NAMES))}")


def make_env(config: Any, num_envs: int, ctx: DistContext, *, seed_offset: int = 0) -> Any:
    """This rank's env: `num_envs` worlds on `ctx.device`, seeded with
    seed_for_rank(seed + seed_offset, rank) (the evaluation env uses an offset)."""
    import unilab_envs
    from unilab_dist import seed_for_rank

    seed = seed_for_rank(config.runner.seed + seed_offset, ctx.rank)
    return unilab_envs.make(
        config.env.task,
        num_envs=num_envs,
        device=str(ctx.device),
        seed=seed,
        **dict(config.env.kwargs),
    )
