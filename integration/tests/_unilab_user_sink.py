"""Imported through `runner.imports` in the W&B end-to-end test: docs/integration.md's example
of a user's sink, registered as "returns"."""

from unilab_integration import RunInfo, register_sink


class Returns:
    def __init__(self, run: RunInfo):  # once per session, on rank 0
        self.file = open(run.run_dir / "returns.txt", "a")  # noqa: SIM115 (closed in close)

    def log(self, iteration, metrics):  # global metrics, floats (NaN: none yet)
        self.file.write(f"{metrics['env_steps/global']:.0f} {metrics['episode/return']}\n")

    def checkpoint(self, iteration, path):  # after each checkpoint is written
        self.file.write(f"checkpoint {iteration} {path}\n")

    def close(self, failed):  # failed: the session raised
        self.file.close()


register_sink("returns", Returns)
