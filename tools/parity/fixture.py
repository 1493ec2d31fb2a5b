"""Read an MJLab parity fixture (written by record_mjlab.py) into numpy arrays.

    from fixture import load            # with tools/parity on sys.path
    fx = load("packages/unilab-envs/tests/data/mjlab/go1_flat")
    fx.meta["step_dt"]                  # 0.02
    fx["mid/data/qpos"]                 # (K, N, nq) float32: state the step's rewards saw
    fx.obs_terms("actor")               # ["base_lin_vel", ...] in concatenation order
    fx.reward_terms()                   # [{"name", "weight", "func", "source", "params"}, ...]

Needs numpy only (not mjlab). Array names, shapes and the moment in the step each is taken:
tools/parity/README.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Fixture:
    """One recording: `arrays` by name (README's table), `meta` the JSON metadata."""

    arrays: dict[str, np.ndarray]
    meta: dict

    def __getitem__(self, key: str) -> np.ndarray:
        return self.arrays[key]

    def __contains__(self, key: str) -> bool:
        return key in self.arrays

    @property
    def num_steps(self) -> int:
        """K, the recorded env steps (obs arrays hold K + 1 entries)."""
        return self.arrays["action"].shape[0]

    @property
    def num_envs(self) -> int:
        return self.arrays["action"].shape[1]

    def obs_groups(self) -> list[str]:
        return list(self.meta["observations"])

    def obs_terms(self, group: str) -> list[str]:
        """Term names of `group` in MJLab's concatenation order."""
        return [t["name"] for t in self.meta["observations"][group]["terms"]]

    def reward_terms(self) -> list[dict]:
        return self.meta["rewards"]

    def termination_terms(self) -> list[dict]:
        return self.meta["terminations"]

    def group(self, prefix: str) -> dict[str, np.ndarray]:
        """Arrays under `prefix/` with the prefix removed, e.g. group("mid/data")."""
        head = prefix.rstrip("/") + "/"
        return {k[len(head) :]: v for k, v in self.arrays.items() if k.startswith(head)}


def load(path: str | Path) -> Fixture:
    """Load `<path>.npz` and `<path>.json` (a suffix on `path` is ignored)."""
    path = Path(path)
    base = path.with_suffix("") if path.suffix in (".npz", ".json") else path
    with np.load(base.with_suffix(".npz")) as npz:
        arrays = {k: npz[k] for k in npz.files}
    meta = json.loads(base.with_suffix(".json").read_text())
    return Fixture(arrays=arrays, meta=meta)
