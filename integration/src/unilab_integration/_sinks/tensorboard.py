"""The "tensorboard" sink: RUN/tensorboard/ event files (a resume adds a new file, and purges the
events an earlier session wrote after the resumed checkpoint: `purge_step`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import RunInfo

__all__ = ["TensorBoardSink"]


class TensorBoardSink:
    """Every numeric metric as a scalar; x axis: the global env steps (`env_steps/global`)."""

    def __init__(self, run: RunInfo) -> None:
        from torch.utils.tensorboard import SummaryWriter

        # x axis: global env steps; a resumed session's first event is past the checkpoint's
        purge = run.initial_env_steps + 1 if run.initial > 0 else None
        self._writer = SummaryWriter(log_dir=str(run.run_dir / "tensorboard"), purge_step=purge)

    def log(self, iteration: int, metrics: Mapping[str, Any]) -> None:
        step = int(metrics.get("env_steps/global", iteration))
        for key, value in metrics.items():
            if key != "iteration" and isinstance(value, int | float):
                self._writer.add_scalar(key, float(value), global_step=step)
        self._writer.flush()

    def checkpoint(self, iteration: int, path: str) -> None:
        """Nothing: TensorBoard shows scalars."""

    def close(self, failed: bool) -> None:
        self._writer.close()
