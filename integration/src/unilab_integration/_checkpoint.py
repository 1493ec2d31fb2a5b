"""Checkpoints: the whole training state in one file, written atomically, with a `latest` pointer.

Layout of a run directory:

    RUN/config.json
    RUN/checkpoints/ckpt_000050.pt    one per save (iteration number in the name)
    RUN/checkpoints/latest            text: the file name of the newest complete checkpoint

`runner.checkpoints.keep` / `runner.checkpoints.keep_every` prune the run's older checkpoints, of every
session (`prune_checkpoints`); a session removes the temporaries of interrupted writes when it
starts (`remove_temporaries`).

A checkpoint is a dict (torch.save) with keys: `format` ("unilab-checkpoint"), `version`,
`task`, `algo_name`, `config` (TrainConfig.to_dict()), `world_size`, `iteration`, `counters`
(env steps per rank and global, episodes, wall time), `learner` (per rank: its learner's state_dict()),
`shapes` (observation shapes, action dim, and every tensor shape of the learner's state: the
network shape fingerprint), `curriculum` (per rank), `rng` (per rank: python, numpy, torch,
cuda), `env_state` (per rank, when the env supports it) and `obs` (per rank: the last
observation TensorDict as `plain_tensordict` writes it, so the next iteration continues from it).

A checkpoint holds plain data only: tensors, numbers, strings, None and lists, tuples and dicts
of them. It is read with `torch.load(..., weights_only=True)`, which builds nothing else, so
opening a file never runs code it names; a file that needs more is refused
(`UnsafeCheckpointError`). Version 1 held the NumPy RNG state and the observations as objects;
`upgrade_checkpoint` (`unilab upgrade-checkpoint FILE --trust`) rewrites such a file.
"""

from __future__ import annotations

import os
import pickle
import random
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

__all__ = [
    "CheckpointError",
    "UnsafeCheckpointError",
    "capture_rng",
    "check_compatible",
    "checkpoint_iterations",
    "load_checkpoint",
    "plain_tensordict",
    "prune_checkpoints",
    "read_plain",
    "remove_temporaries",
    "resolve_checkpoint",
    "restore_rng",
    "save_checkpoint",
    "tensor_shapes",
    "tensordict_from_plain",
]

FORMAT = "unilab-checkpoint"
VERSION = 2
LATEST = "latest"
UPGRADE = "unilab upgrade-checkpoint {file} --trust"


class CheckpointError(ValueError):
    """A checkpoint is missing, unreadable, or from another task, algorithm or network shape."""


class UnsafeCheckpointError(CheckpointError):
    """A file that only unpickling arbitrary objects would open (a version-1 checkpoint, or a
    crafted file): it is not opened."""


def checkpoint_name(iteration: int) -> str:
    return f"ckpt_{iteration:06d}.pt"


def atomic_write_bytes(path: Path, write: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def save_checkpoint(
    directory: str | os.PathLike, iteration: int, payload: Mapping[str, Any]
) -> Path:
    """Write `payload` to DIRECTORY/ckpt_<iteration>.pt atomically, then point `latest` at it.

    A crash at any moment leaves either the previous checkpoint and pointer, or the new
    ones; never a partial file under a checkpoint's name.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    data = {"format": FORMAT, "version": VERSION, **payload, "iteration": iteration}
    path = directory / checkpoint_name(iteration)
    atomic_write_bytes(path, lambda f: torch.save(data, f))
    atomic_write_bytes(directory / LATEST, lambda f: f.write(path.name.encode() + b"\n"))
    return path


def checkpoint_iterations(directory: str | os.PathLike) -> list[int]:
    """The iterations of the `ckpt_<iteration>.pt` files in DIRECTORY, ascending."""
    out = []
    for path in Path(directory).glob("ckpt_*.pt"):
        digits = path.stem.removeprefix("ckpt_")
        if digits.isdigit():
            out.append(int(digits))
    return sorted(out)


def prune_checkpoints(directory: str | os.PathLike, *, keep: int, every: int) -> list[Path]:
    """Delete the checkpoints of DIRECTORY beyond the newest `keep` (0: keep all), except those
    at multiples of `every` iterations (0: none) and the one `latest` names. Every checkpoint
    of the folder is a candidate, whichever session wrote it: a run owns its folder while it
    holds the lock. Returns the deleted files."""
    iterations = checkpoint_iterations(directory)
    if keep <= 0 or len(iterations) <= keep:
        return []
    directory = Path(directory)
    pointed = (directory / LATEST).read_text().strip() if (directory / LATEST).is_file() else None
    removed = []
    for iteration in iterations[:-keep]:
        path = directory / checkpoint_name(iteration)
        if (every and iteration % every == 0) or path.name == pointed:
            continue
        path.unlink(missing_ok=True)
        removed.append(path)
    return removed


def remove_temporaries(directory: str | os.PathLike) -> list[Path]:
    """Delete the temporary files of interrupted checkpoint writes in DIRECTORY (`.ckpt_*.tmp*`,
    `.latest.tmp*`). Only under the run's lock: then no other writer can be using them."""
    directory = Path(directory)
    stale = [*directory.glob(".ckpt_*.tmp*"), *directory.glob(f".{LATEST}.tmp*")]
    for path in stale:
        path.unlink(missing_ok=True)
    return sorted(stale)


def resolve_checkpoint(path: str | os.PathLike) -> Path:
    """The checkpoint file meant by `path`: a file, a checkpoints folder or a run folder.

    A folder without a `latest` pointer that holds checkpoints is refused naming them (the
    newest first), so that the user picks one."""
    path = Path(path)
    if path.is_file():
        return path
    for folder in (path, path / "checkpoints"):
        pointer = folder / LATEST
        if pointer.is_file():
            target = folder / pointer.read_text().strip()
            if not target.is_file():
                raise CheckpointError(
                    f"{pointer} points to {target.name}, which does not exist{_others(folder)}"
                )
            return target
    for folder in (path, path / "checkpoints"):
        if checkpoint_iterations(folder):
            raise CheckpointError(f"no '{LATEST}' pointer in {folder}{_others(folder)}")
    raise CheckpointError(f"no checkpoint at {path} (no file, and no '{LATEST}' pointer)")


def complete_checkpoints(folder: str | os.PathLike, below: int | None = None) -> list[Path]:
    """The checkpoints of `folder` whose file is whole (a complete zip archive, as torch.save
    writes), newest first; only those before iteration `below` when given."""
    folder = Path(folder)
    out = []
    for iteration in reversed(checkpoint_iterations(folder)):
        file = folder / checkpoint_name(iteration)
        if (below is None or iteration < below) and zipfile.is_zipfile(file):
            out.append(file)
    return out


def _others(folder: Path, below: int | None = None) -> str:
    """'; it holds ...: give one as the path' naming the complete checkpoints of `folder`."""
    files = complete_checkpoints(folder, below)
    if not files:
        return ""
    names = [f.name for f in files[:3]] + ([f"{len(files) - 3} older"] if len(files) > 3 else [])
    what = "older complete checkpoints" if below is not None else "complete checkpoints"
    return f"; its {what}: {', '.join(names)}: give one as the path, e.g. {files[0]}"


def read_plain(file: str | os.PathLike, map_location: str | torch.device = "cpu") -> Any:
    """The contents of a torch.save file made of plain data only (tensors, numbers, strings,
    None, and lists, tuples and dicts of them), read without running any code it names.

    UnsafeCheckpointError naming the object the file asks for when it holds anything else;
    CheckpointError when it cannot be read at all."""
    try:
        return torch.load(file, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as e:
        named = re.search(r"GLOBAL ([\w.]+)", str(e))
        what = named.group(1) if named else "an object that is not plain data"
        raise UnsafeCheckpointError(
            f"{file} is not opened: reading it would build {what}, which can run code; UniLab "
            "checkpoints hold plain data since version 2: if it is a version-1 checkpoint from "
            f"a source you trust, convert it first: {UPGRADE.format(file=file)}"
        ) from None
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        others = ""
        if isinstance(file, str | os.PathLike):  # a truncated file: name the older whole ones
            digits = Path(file).stem.removeprefix("ckpt_")
            others = _others(Path(file).parent, int(digits)) if digits.isdigit() else ""
        raise CheckpointError(f"cannot read checkpoint {file}: {first}{others}") from None


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict:
    """Load and validate a checkpoint (see the module docstring for its keys and what a file
    may hold)."""
    file = resolve_checkpoint(path)
    data = read_plain(file, map_location)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{file} is not a UniLab checkpoint")
    if data.get("version") != VERSION:
        upgrade = f": {UPGRADE.format(file=file)}" if data.get("version") == 1 else ""
        raise CheckpointError(
            f"{file} has checkpoint version {data.get('version')}, this UniLab reads "
            f"{VERSION}{upgrade}"
        )
    data["path"] = str(file)
    return data


def load_teacher_checkpoint(path: str | os.PathLike | None, task: str) -> dict:
    """A distillation teacher: a PPO checkpoint of `task` (CheckpointError naming the mismatch)."""
    if path is None:
        raise ValueError("--algo distill needs a teacher: --teacher PATH (a PPO checkpoint)")
    try:
        ckpt = load_checkpoint(path)
    except CheckpointError as e:
        raise type(e)(f"--teacher: {e}") from None
    if ckpt["algo_name"] != "ppo":
        raise CheckpointError(
            f"teacher {ckpt['path']} was trained with '{ckpt['algo_name']}', not 'ppo'"
        )
    if ckpt["task"] != task:
        raise CheckpointError(
            f"teacher {ckpt['path']} was trained on task '{ckpt['task']}', this run is task "
            f"'{task}'"
        )
    return ckpt


def tensor_shapes(state: Any, prefix: str = "") -> dict[str, tuple[int, ...]]:
    """Flatten a nested state dict to {dotted key: tensor shape} (the network fingerprint).

    Optimizer states are skipped: their shapes follow the parameters.
    """
    out: dict[str, tuple[int, ...]] = {}
    if isinstance(state, torch.Tensor):
        out[prefix] = tuple(state.shape)
    elif isinstance(state, Mapping):
        for key, value in state.items():
            if "optim" in str(key):
                continue
            out.update(tensor_shapes(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def check_compatible(
    ckpt: Mapping[str, Any],
    *,
    task: str,
    algo_name: str,
    shapes: Mapping[str, tuple[int, ...]],
) -> None:
    """Refuse a checkpoint from another task, algorithm or network shape, saying which."""
    where = ckpt.get("path", "the checkpoint")
    if ckpt["task"] != task:
        raise CheckpointError(
            f"{where} was trained on task '{ckpt['task']}', this run is task '{task}'"
        )
    if ckpt["algo_name"] != algo_name:
        raise CheckpointError(
            f"{where} was trained with algorithm '{ckpt['algo_name']}', this run uses '{algo_name}'"
        )
    saved = ckpt["shapes"]
    diffs = []
    for key in sorted(set(saved) | set(shapes)):
        a, b = saved.get(key), shapes.get(key)
        if a != b:
            show_a = "absent" if a is None else list(a)
            show_b = "absent" if b is None else list(b)
            diffs.append(f"{key}: {show_a} in the checkpoint, {show_b} here")
    if diffs:
        shown = "; ".join(diffs[:5]) + (f"; and {len(diffs) - 5} more" if len(diffs) > 5 else "")
        raise CheckpointError(f"{where} has another network shape: {shown}")


def capture_rng(device: torch.device | None = None) -> dict[str, Any]:
    """This process's RNG states: python, numpy (if installed), torch CPU and the CUDA device."""
    state: dict[str, Any] = {"python": random.getstate(), "torch": torch.get_rng_state()}
    try:
        import numpy as np

        state["numpy"] = numpy_rng_state(np.random.get_state(legacy=False))
    except ImportError:
        pass
    if device is not None and device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def restore_rng(state: Mapping[str, Any], device: torch.device | None = None) -> None:
    """Restore states captured by `capture_rng`."""
    random.setstate(state["python"])
    torch.set_rng_state(state["torch"])
    if "numpy" in state:
        import numpy as np

        np.random.set_state(numpy_rng_state(state["numpy"]))
    if device is not None and device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def numpy_rng_state(state: Any) -> dict[str, Any]:
    """NumPy's global RNG state as plain data: `np.random.get_state(legacy=False)`'s dict with
    its key array as a list of ints, from that dict or from the legacy tuple ("MT19937", key,
    pos, has_gauss, gauss) of version-1 checkpoints."""
    if isinstance(state, Mapping):
        name, inner = state["bit_generator"], state["state"]
        key, pos, has_gauss, gauss = inner["key"], inner["pos"], state["has_gauss"], state["gauss"]
    else:
        name, key, pos, has_gauss, gauss = state
    return {
        "bit_generator": str(name),
        "state": {"key": [int(k) for k in key], "pos": int(pos)},
        "has_gauss": int(has_gauss),
        "gauss": float(gauss),
    }


def plain_tensordict(td: Any) -> dict[str, Any]:
    """A TensorDict as plain data: its batch size and its (nested) tensors, on the CPU."""
    return {"batch_size": list(td.batch_size), "data": td.to("cpu").clone().to_dict()}


def tensordict_from_plain(plain: Mapping[str, Any], device: torch.device | str = "cpu") -> Any:
    """The TensorDict that `plain_tensordict` wrote, on `device`."""
    from tensordict import TensorDict

    return TensorDict(plain["data"], batch_size=plain["batch_size"], device=device)
