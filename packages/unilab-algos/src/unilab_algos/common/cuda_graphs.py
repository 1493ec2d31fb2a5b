"""What the learners' CUDA-graph paths share."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

__all__ = ["side_stream"]


@contextlib.contextmanager
def side_stream(device: torch.device) -> Iterator[torch.cuda.Stream]:
    """Run the block on a fresh CUDA stream ordered after the current stream's queued work, and
    make the current stream wait for it afterwards: the eager warm-up that CUDA-graph capture
    asks for (lazily created library state lands on a non-default stream, as during capture)."""
    cur = torch.cuda.current_stream(device)
    side = torch.cuda.Stream(device)
    side.wait_stream(cur)
    with torch.cuda.stream(side):
        yield side
    cur.wait_stream(side)
