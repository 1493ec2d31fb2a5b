"""The "tensorboard" sink: RUN/tensorboard/ event files (a resume adds a new file)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import RunInfo

__all__ = ["TensorBoardSink"]


class TensorBoardSink:
    """Every numeric metric as a scalar; x axis: the global env steps (`env_steps/global`)."""

    def __init__(self, run: RunInfo) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self._writer = SummaryWriter(log_dir=str(run.run_dir / "tensorboard"))

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
