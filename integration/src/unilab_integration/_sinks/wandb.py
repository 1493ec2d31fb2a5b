"""The "wandb" sink: one Weights & Biases run per run folder, continued by `--resume`.

- The run's config is the session's config.json (`TrainConfig.to_dict()`).
- Every numeric metric of every iteration, charted against `env_steps/global` (W&B's
  `define_metric(step_metric=...)`: a resume that repeats iterations after a crash overlaps on
  the x axis, as TensorBoard's does, instead of being dropped as a non-increasing `step`).
- Each checkpoint written: its path and iteration in the run summary (`checkpoint/path`,
  `checkpoint/iteration`). A resumed session notes where it resumed (`resume/iteration`,
  `resume/env_steps` in the summary): the points past it on the x axis from an earlier
  session are superseded.
- RUN/wandb.json holds the W&B run id, project and entity; a session in a run folder that has
  one continues that W&B run (`resume="allow"`; the project and entity stay unless given).
- W&B's own files go to $WANDB_DIR, else into the run folder (RUN/wandb/).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import Any

from . import RunInfo

__all__ = ["RUN_FILE", "WandbSink"]

RUN_FILE = "wandb.json"
STEP = "env_steps/global"


class WandbSink:
    """The W&B run of `run.run_dir` (settings: `run.config.runner.logging.wandb`, `WandbSettings`)."""

    def __init__(self, run: RunInfo) -> None:
        import wandb  # present: `make_sink` checked it, naming the extra

        asyncio_log = logging.getLogger("asyncio")
        if asyncio_log.level == logging.NOTSET:  # W&B's client loop: no selector notice in the log
            asyncio_log.setLevel(logging.WARNING)
        settings = run.config.runner.logging.wandb if run.config is not None else None
        record_file = run.run_dir / RUN_FILE
        saved = json.loads(record_file.read_text()) if record_file.is_file() else {}
        project = _first(getattr(settings, "project", None), saved.get("project"))
        entity = _first(getattr(settings, "entity", None), saved.get("entity"))
        config = run.config.to_dict() if run.config is not None else {}
        kwargs: dict[str, Any] = {
            "project": _first(project, os.environ.get("WANDB_PROJECT"), "unilab"),
            "entity": entity,
            "name": run.run_dir.name,
            "id": saved.get("id"),  # None: W&B makes one (recorded below)
            "resume": "allow",
            "mode": _first(getattr(settings, "mode", None), os.environ.get("WANDB_MODE"), "online"),
        }
        if not saved:
            kwargs["config"] = config
        if not os.environ.get("WANDB_DIR"):
            kwargs["dir"] = str(run.run_dir)
        self._run = wandb.init(**kwargs)
        if saved:  # this session's config (its budget may differ): config.resume-<K>.json
            self._run.config.update(config, allow_val_change=True)
        self._run.define_metric(STEP)
        self._run.define_metric("*", step_metric=STEP)
        if run.initial > 0:
            self._run.summary["resume/iteration"] = run.initial
            self._run.summary["resume/env_steps"] = run.initial_env_steps
        record = {"id": self._run.id, "project": kwargs["project"], "entity": entity}
        tmp = record_file.with_name(record_file.name + ".tmp")
        tmp.write_text(json.dumps(record, indent=2) + "\n")
        os.replace(tmp, record_file)

    @property
    def run_id(self) -> str:
        return self._run.id

    def log(self, iteration: int, metrics: Mapping[str, Any]) -> None:
        self._run.log({k: v for k, v in metrics.items() if isinstance(v, int | float)})

    def checkpoint(self, iteration: int, path: str) -> None:
        self._run.summary["checkpoint/path"] = path
        self._run.summary["checkpoint/iteration"] = iteration

    def close(self, failed: bool) -> None:
        self._run.finish(exit_code=1 if failed else 0)


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None and v != ""), None)
