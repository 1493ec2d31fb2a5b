"""A graph backend for the fallback tests: captures like `RerunBackend`, except that capturing
a body whose function name contains `name` raises (as a CUDA capture of an uncapturable op)."""

from __future__ import annotations

from unilab_algos.common import RerunBackend


class RefusingBackend(RerunBackend):
    def __init__(
        self, name: str, message: str = "operation not permitted when stream is capturing"
    ):
        super().__init__()
        self.name, self.message = name, message

    def capture(self, fn, pool, device):
        if self.name in fn.__name__:
            raise RuntimeError(self.message)
        return super().capture(fn, pool, device)
