"""`unilab upgrade-checkpoint FILE --trust`: rewrite a version-1 checkpoint as plain data.

Version 1 held the NumPy RNG state (a tuple with an ndarray) and each rank's last observations
(a TensorDict) as pickled objects, which `torch.load(..., weights_only=True)` refuses, and so
`load_checkpoint` refuses the file. Reading it means unpickling it, which runs any code the
file names: only for files whose source the user trusts, said with `--trust`.
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path
from typing import Any

import torch

from ._checkpoint import (
    FORMAT,
    VERSION,
    CheckpointError,
    atomic_write_bytes,
    numpy_rng_state,
    plain_tensordict,
    read_plain,
)

__all__ = ["upgrade_checkpoint", "upgrade_targets"]


def upgrade_targets(path: str | os.PathLike) -> list[Path]:
    """The files `path` names: a checkpoint file, or every `ckpt_*.pt` of a checkpoints or run
    folder."""
    path = Path(path)
    if path.is_file():
        return [path]
    for folder in (path / "checkpoints", path):
        files = sorted(folder.glob("ckpt_*.pt"))
        if files:
            return files
    raise CheckpointError(f"no checkpoint at {path} (no file, and no ckpt_*.pt in it)")


def upgrade_checkpoint(file: str | os.PathLike) -> bool:
    """Write the version-1 checkpoint `file` as version 2 under its name (atomically), the
    original bytes kept as `<file>.v1` beside it; False, with the file untouched, when it is
    already version 2. Unpickles the file: trusted files only."""
    file = Path(file)
    try:
        data = torch.load(file, map_location="cpu", weights_only=False)  # trusted by the caller
    except Exception as e:
        raise CheckpointError(f"cannot read checkpoint {file}: {e}") from e
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{file} is not a UniLab checkpoint")
    if data.get("version") == VERSION:
        return False
    if data.get("version") != 1:
        raise CheckpointError(f"{file} has checkpoint version {data.get('version')}, not 1")
    data["version"] = VERSION
    data["rng"] = [_plain_rng(r) for r in data.get("rng") or []]
    data["obs"] = [o if o is None else plain_tensordict(o) for o in data.get("obs") or []]
    buffer = io.BytesIO()
    torch.save(data, buffer)
    buffer.seek(0)
    try:
        read_plain(buffer)  # what is written must open without running code
    except CheckpointError as e:
        raise CheckpointError(f"{file} holds more than version 1 did, not upgraded: {e}") from None
    kept = file.with_name(file.name + ".v1")
    if kept.exists():
        raise CheckpointError(f"{kept} exists: move it away, then upgrade {file} again")
    try:
        os.link(file, kept)  # the original's bytes stay, under the new name
    except OSError:
        shutil.copy2(file, kept)
    atomic_write_bytes(file, lambda f: f.write(buffer.getvalue()))
    return True


def _plain_rng(state: dict[str, Any]) -> dict[str, Any]:
    out = dict(state)
    if "numpy" in out:
        out["numpy"] = numpy_rng_state(out["numpy"])
    return out
