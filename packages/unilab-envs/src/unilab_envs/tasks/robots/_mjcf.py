"""Where a robot's MJCF comes from: an explicit path, an installed `mjlab`, or MuJoCo Menagerie.

`find_mjcf(robot, mjcf)` tries, in this order:

1. `mjcf`, a path the caller gives (it must exist);
2. the file inside an installed `mjlab` package (`mjlab/asset_zoo/robots/<dir>/xmls/<file>`),
   found with `importlib.util.find_spec("mjlab")` without importing mjlab (which needs its own
   mujoco version); mjlab is never a dependency;
3. MuJoCo Menagerie through the `mujoco-menagerie` package (`pip install
   "unilab-envs[menagerie]"`), which downloads the model into its cache on first use
   (`MENAGERIE_CACHE_DIR`, default `~/.cache/mujoco_menagerie`; `MENAGERIE_ROOT` = a checkout).

None found raises `RobotFileNotFoundError` naming the three ways to provide the file.
"""

from __future__ import annotations

import importlib.util
import os

import attrs

__all__ = ["MJLAB_FILES", "MENAGERIE_ENTRIES", "MjcfSource", "RobotFileNotFoundError", "find_mjcf"]

# Robot -> its file inside the mjlab 1.6.0 package, and Menagerie's model name and entry point.
MJLAB_FILES = {
    "go1": "asset_zoo/robots/unitree_go1/xmls/go1.xml",
    "g1": "asset_zoo/robots/unitree_g1/xmls/g1.xml",
}
MENAGERIE_ENTRIES = {"go1": ("unitree_go1", "go1"), "g1": ("unitree_g1", "g1_mjlab")}


class RobotFileNotFoundError(FileNotFoundError):
    """No MJCF for a robot: neither given, nor in an installed mjlab, nor from Menagerie."""


@attrs.frozen
class MjcfSource:
    """A found MJCF: its path and where it came from ("path", "mjlab" or "menagerie")."""

    path: str
    origin: str


def _from_mjlab(robot: str) -> str | None:
    try:
        spec = importlib.util.find_spec("mjlab")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        path = os.path.join(root, MJLAB_FILES[robot])
        if os.path.isfile(path):
            return path
    return None


def _from_menagerie(robot: str) -> str | None:
    if importlib.util.find_spec("mujoco_menagerie") is None:
        return None
    import mujoco_menagerie

    name, entry = MENAGERIE_ENTRIES[robot]
    return os.fspath(mujoco_menagerie.get(name).xml(entry))


def find_mjcf(robot: str, mjcf: str | os.PathLike | None = None) -> MjcfSource:
    """The MJCF of `robot` ("go1", "g1"): `mjcf` if given, else mjlab's, else Menagerie's."""
    if robot not in MJLAB_FILES:
        raise ValueError(f"unknown robot {robot!r}; known: {sorted(MJLAB_FILES)}")
    if mjcf is not None:
        path = os.fspath(mjcf)
        if not os.path.isfile(path):
            raise RobotFileNotFoundError(f"{robot}: MJCF file {path!r} does not exist")
        return MjcfSource(path, "path")
    path = _from_mjlab(robot)
    if path is not None:
        return MjcfSource(path, "mjlab")
    path = _from_menagerie(robot)
    if path is not None:
        return MjcfSource(path, "menagerie")
    name, entry = MENAGERIE_ENTRIES[robot]
    raise RobotFileNotFoundError(
        f"no MJCF for the robot {robot!r}. Provide it in one of three ways: pass "
        f"mjcf=PATH (e.g. {robot}(mjcf='/path/to/{os.path.basename(MJLAB_FILES[robot])}')); "
        f"`pip install mjlab` (uses mjlab/{MJLAB_FILES[robot]}); or `pip install "
        f'"unilab-envs[menagerie]"` (downloads MuJoCo Menagerie\'s {name} '
        f"'{entry}' on first use)"
    )
