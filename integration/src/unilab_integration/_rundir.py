"""Run folders: which folder a run writes and what it may write there (the lock that keeps two
trainers out of one folder: `_runlock`).

Rules (checked before anything is created; a refusal is a `RunFolderError`, exit 2):

- A new run writes into a folder that does not exist or is empty. A named folder
  (`--run-name`) that holds anything is refused, naming `--resume` and a fresh name; an
  unnamed one (TASK_ALGO_STAMP) gets a suffix (`-2`, `-3`, ...) instead. `--log-dir` that is
  itself a run folder is refused.
- A resume into its own run folder continues it: `metrics.jsonl` and `resume.log` are appended
  to, TensorBoard gets new event files, and the session's config and worker logs go to
  `config.resume-<K>.json` and `logs/resume-<K>/` (K: the iteration resumed from; `.2`,
  `.3`, ... when K was resumed before), so `config.json` and earlier logs stay as written. A
  checkpoint older than the folder's newest is not resumed into the folder (its successors
  would be overwritten): resume it into a fresh `--run-name`.
- A folder that a live trainer holds (`_runlock`: `RUN/.lock`) is refused.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import attrs

from ._checkpoint import checkpoint_iterations, resolve_checkpoint
from ._runlock import (
    LOCK,
    WORKERS,
    RunFolderError,
    RunLock,
    check_lock,
    holder_alive,
    process_start_ticks,
    register_worker,
)

__all__ = [
    "LOCK",
    "WORKERS",
    "RunFolderError",
    "RunLock",
    "RunPlan",
    "holder_alive",
    "plan_run_folder",
    "process_start_ticks",
    "register_worker",
]

RUN_MARKERS = ("config.json", "metrics.jsonl", "checkpoints")


@attrs.frozen(kw_only=True)
class RunPlan:
    """Where a run writes: `path`; `config_name` and `log_dir` of this session; `resumed_from`:
    the iteration when this session continues the folder's own run (else None)."""

    path: Path
    config_name: str = "config.json"
    log_dir: Path
    resumed_from: int | None = None


def _contents(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir() if p.name != LOCK) if path.is_dir() else []


def _refuse_used_folder(path: Path, resume: str | None) -> None:
    held = _contents(path)
    if not held:
        return
    ckpts = checkpoint_iterations(path / "checkpoints")
    what = (
        f"holds a run (checkpoints up to iteration {ckpts[-1]})"
        if ckpts
        else f"is not empty ({', '.join(held[:4])}{', ...' if len(held) > 4 else ''})"
    )
    hint = f"continue it with --resume {path}, or " if ckpts and resume is None else ""
    raise RunFolderError(
        f"run folder {path} {what}; a run never writes into another run's folder: "
        f"{hint}train into a fresh --run-name"
    )


def _session_suffix(path: Path, iteration: int) -> str:
    base = f"resume-{iteration}"
    for n in range(1, 1000):
        suffix = base if n == 1 else f"{base}.{n}"
        if not (path / f"config.{suffix}.json").exists() and not (path / "logs" / suffix).exists():
            return suffix
    raise RunFolderError(f"{path}: iteration {iteration} was resumed 999 times")


def plan_run_folder(config: Any, resume: str | None) -> RunPlan:
    """The folder `config` (and a resume checkpoint) would write, checked against the rules of
    the module docstring without creating anything."""
    run = config.runner.logging
    log_dir = Path(run.log_dir)
    ckpt_file = resolve_checkpoint(resume).resolve() if resume is not None else None
    own = None  # the run folder the resume checkpoint lives in
    if ckpt_file is not None and ckpt_file.parent.name == "checkpoints":
        own = ckpt_file.parent.parent
    if run.run_name is not None:
        path = log_dir / run.run_name
    elif own is not None:
        path = own
    else:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        base = f"{config.task}_{config.algo_name}_{stamp}"
        path = log_dir / base
        for n in range(2, 1000):
            if not path.exists():
                break
            path = log_dir / f"{base}-{n}"
    if path.parent == log_dir and log_dir.is_dir():
        markers = [m for m in RUN_MARKERS if (log_dir / m).exists()]
        if markers:
            raise RunFolderError(
                f"--log-dir {log_dir} is a run folder (it holds {', '.join(markers)}); "
                f"--log-dir is the folder run folders are made in: continue that run with "
                f"--resume {log_dir}, or give another --log-dir"
            )
    check_lock(path)
    if own is None or path.resolve() != own:
        _refuse_used_folder(path, resume)
        return RunPlan(path=path, log_dir=path / "logs")
    assert ckpt_file is not None
    resumed = _resumed_iteration(ckpt_file)
    newer = [i for i in checkpoint_iterations(ckpt_file.parent) if i > resumed]
    if newer:
        raise RunFolderError(
            f"{ckpt_file.name} is not the newest checkpoint of {path} (it has iteration "
            f"{newer[-1]}): resuming it there would overwrite the checkpoints after it; resume "
            f"it into a fresh --run-name, or resume {path} itself"
        )
    suffix = _session_suffix(path, resumed)
    return RunPlan(
        path=path,
        config_name=f"config.{suffix}.json",
        log_dir=path / "logs" / suffix,
        resumed_from=resumed,
    )


def _resumed_iteration(ckpt_file: Path) -> int:
    digits = ckpt_file.stem.removeprefix("ckpt_")
    if digits.isdigit():
        return int(digits)
    from ._checkpoint import load_checkpoint

    return int(load_checkpoint(ckpt_file)["iteration"])
