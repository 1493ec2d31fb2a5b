"""`unilab train`'s arguments as a `TrainConfig`: a new run's, or a resumed run's.

A new run composes the task x algorithm x preset config (`make_config`) and applies what the
command sets. A resume (`--resume`) continues its run: the checkpoint's embedded config is the
run's config (rebuilt from its data alone, `TrainConfig.from_dict`), and only what the command
sets on purpose applies on top: the flags it typed (never an argparse default) and `--set`. A
budget it gives (`--iterations`, `--env-steps`, `--until-solved`) replaces the run's whole
budget. Where it writes is the command's: the resumed run's folder unless `--log-dir` or
`--run-name` says otherwise. A resume that names another task, algorithm or preset is refused.

The modules the command names (`--import`, `--set runner.imports=[...]`) are imported first;
a resumed run's saved `runner.imports` must be among them (a file never chooses code to run).
"""

from __future__ import annotations

import argparse
import json

from ._config import LogSettings, RunnerConfig, TrainConfig, sectioned_runner
from ._envs import check_named_imports, import_modules
from ._overrides import apply_overrides
from ._task_defaults import make_config

__all__ = ["BUDGET_KEYS", "build_config", "named_imports", "typed_settings"]

BUDGET_KEYS = ("runner.iterations", "runner.env_steps", "runner.until_solved")


def build_config(args: argparse.Namespace) -> TrainConfig:
    """The TrainConfig of parsed `unilab train` arguments: the new run's (flags first, then
    --set overrides) or, with --resume, the run's own with them on top."""
    items = typed_settings(args)
    named = named_imports(args)
    items.append(f"runner.imports={json.dumps(list(named))}")
    if args.resume is not None:
        return _resumed(args, items, named)
    import_modules(named)  # they may register the algorithm, or the task with its defaults
    base = make_config(args.task, args.algo or "ppo", preset=args.preset or "default")
    return apply_overrides(base, items)


def typed_settings(args: argparse.Namespace) -> list[str]:
    """`key=value` overrides of every flag the command line typed, then its --set items."""
    if args.num_envs is not None and args.env_scope is None:
        # The environment budget's scope is never implied (docs/semantics.md).
        raise ValueError(
            "--num-envs needs --env-scope: per-rank (every rank runs N environments, W*N in "
            "total, as MJLab/RSL-RL) or global (N in total, split across ranks)"
        )
    flags = {
        "launch.gpus": args.gpus,
        "launch.cpu_workers": args.cpu_workers,
        "launch.hosts": args.hosts,
        "launch.timeout": args.timeout,
        "env.num_envs": args.num_envs,
        "env.scope": args.env_scope,
        "runner.seed": args.seed,
        "runner.iterations": args.iterations,
        "runner.env_steps": args.env_steps,
        "runner.teacher": args.teacher,
        "runner.logging.log_dir": args.log_dir,
        "runner.logging.run_name": args.run_name,
        "runner.checkpoints.interval": args.save_interval,
        "runner.eval.interval": args.eval_interval,
    }
    items = [f"{k}={json.dumps(v)}" for k, v in flags.items() if v is not None]
    if args.until_solved:
        items.append("runner.until_solved=true")
    if args.no_progress:
        items.append("runner.logging.progress=false")
    if args.loggers is not None:
        names = [name.strip() for name in args.loggers.split(",") if name.strip()]
        items.append(f"runner.logging.loggers={json.dumps(names)}")
    return [*items, *args.set]


def named_imports(args: argparse.Namespace) -> tuple[str, ...]:
    """The modules this command line names: `--import` and `--set runner.imports=[...]`."""
    named = list(args.imports)
    for item in args.set:
        key, _, text = item.partition("=")
        if key.strip() == "runner.imports":
            named += apply_overrides(RunnerConfig(), [f"imports={text}"]).imports
    return tuple(dict.fromkeys(named))


def _resumed(args: argparse.Namespace, items: list[str], named: tuple[str, ...]) -> TrainConfig:
    """The checkpoint's config with `items` on top (task, algorithm and preset its own)."""
    from ._checkpoint import CheckpointError, load_checkpoint

    ckpt = load_checkpoint(args.resume)
    saved = dict(ckpt["config"])
    runner = dict(saved.get("runner") or {})
    check_named_imports(runner.get("imports") or (), named, ckpt["path"])
    import_modules(named)
    theirs = {"task": ckpt["task"], "algorithm": ckpt["algo_name"], "preset": saved.get("preset")}
    for what, mine in (("task", args.task), ("algorithm", args.algo), ("preset", args.preset)):
        if mine is not None and mine != theirs[what]:
            raise CheckpointError(
                f"{ckpt['path']} was trained with {what} '{theirs[what]}', this run uses "
                f"'{mine}'; a resume continues its run's {what}: train a new run for another"
            )
    runner["imports"] = list(named)
    # where to write is this command's (the resumed folder, or --log-dir / --run-name), never
    # the folder the run was first written to (it may have moved since)
    runner = sectioned_runner(runner)
    runner["logging"] = {**(runner.get("logging") or {}), "log_dir": LogSettings().log_dir}
    runner["logging"]["run_name"] = None
    if any(item.partition("=")[0].strip() in BUDGET_KEYS for item in items):
        # a budget given here is the run's budget, whole: the saved one's other parts go
        runner.update(iterations=None, env_steps=None, until_solved=False)
    return apply_overrides(TrainConfig.from_dict({**saved, "runner": runner}), items)
