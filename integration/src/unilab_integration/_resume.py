"""What a resume says before its workers start: what it changes of its run's config, and a run
folder's `config.json` it cannot read.

A resume continues its run: the checkpoint's embedded config is the run's config, and what the
resuming command sets on purpose applies on top (`_commandline`). The launcher's first line,
also appended to `RUN/resume.log`, lists every value that differs from the checkpoint's:

    resuming RUN/checkpoints/ckpt_000002.pt at iteration 2 with its run's config; this command
    sets runner.iterations 2 -> 5, runner.logging.progress true -> false
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._checkpoint import CheckpointError, resolve_checkpoint
from ._config import TrainConfig

__all__ = ["check_run_config", "interrupted_note", "note_resume", "resume_changes"]


def _flat(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            out.update(_flat(value, name))
        else:
            out[name] = value
    return out


def resume_changes(saved: Mapping[str, Any], config: TrainConfig) -> list[str]:
    """`key old -> new` (JSON values) for every config value that `config` holds apart from
    the run's saved config `saved` (a checkpoint's `config`)."""
    old = _flat(json.loads(json.dumps(saved)))
    new = _flat(json.loads(json.dumps(config.to_dict())))
    missing = object()
    changes = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key, missing), new.get(key, missing)
        if a != b:
            show = [("absent" if v is missing else json.dumps(v)) for v in (a, b)]
            changes.append(f"{key} {show[0]} -> {show[1]}")
    return changes


def note_resume(ckpt: Mapping[str, Any], config: TrainConfig, run_dir: Path) -> str:
    """Print (and append to RUN/resume.log) the line naming the checkpoint resumed and what
    this session changes of its run's config; returns it."""
    changes = resume_changes(ckpt["config"], config)
    what = "this command sets " + ", ".join(changes) if changes else "this command changes none"
    line = (
        f"resuming {ckpt['path']} at iteration {int(ckpt['iteration'])} with its run's config; "
        f"{what}"
    )
    print(line, flush=True)
    with (run_dir / "resume.log").open("a") as f:
        f.write(line + "\n")
    return line


def check_run_config(path: Path) -> None:
    """One line on stderr when a resumed run folder's `config.json` is unreadable: the run's
    config comes from its checkpoint, and the file is left as it is (never rewritten)."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return
    except (OSError, ValueError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
    else:
        if isinstance(data, dict) and "algo_name" in data:
            return
        reason = "not a UniLab config"
    print(
        f"unilab train: {path} is unreadable ({reason}): the run's config comes from its "
        "checkpoint; the file is left as it is",
        file=sys.stderr,
        flush=True,
    )


def interrupted_note(run_dir: Path) -> str:
    """What an interrupted session leaves: the checkpoint a resume starts from, and the
    iterations past it (logged in RUN/metrics.jsonl) that are lost."""
    try:
        file = resolve_checkpoint(run_dir / "checkpoints")
    except CheckpointError:
        return f"no checkpoint in {run_dir}: nothing to resume"
    iteration = int(file.stem.removeprefix("ckpt_"))
    reached = _last_logged_iteration(run_dir / "metrics.jsonl")
    if reached is None:
        lost = f"the iterations after {iteration} are lost"
    elif reached <= iteration:
        lost = "no iteration is lost"
    elif reached == iteration + 1:
        lost = f"iteration {reached} is lost"
    else:
        lost = f"iterations {iteration + 1}-{reached} are lost"
    return f"a resume (--resume {run_dir}) starts from {file.name} (iteration {iteration}); {lost}"


def _last_logged_iteration(path: Path) -> int | None:
    """The last iteration RUN/metrics.jsonl holds (not superseded); None without the file."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a line cut by the interruption
        if isinstance(row, dict) and not row.get("superseded") and "iteration" in row:
            return int(row["iteration"])
    return None
