"""Where a robot's MJCF comes from, and how to get MJLab's robot files without installing MJLab.

`find_mjcf(robot, mjcf)` tries, in this order:

1. `mjcf`, a path the caller gives (it must exist);
2. the robot cache (`robot_cache_dir()`: `$UNILAB_ROBOTS_DIR`, else the platform's user cache,
   e.g. `~/.cache/unilab/robots`), which `fetch_robot_files` fills (the command
   `unilab robots get go1 g1` calls it);
3. the file inside an installed `mjlab` package (`mjlab/asset_zoo/robots/<dir>/xmls/<file>`),
   found with `importlib.util.find_spec("mjlab")` without importing mjlab (which needs its own
   mujoco version); mjlab is never a dependency;
4. MuJoCo Menagerie through the `mujoco-menagerie` package (the `unilab-envs[menagerie]`
   extra), which downloads the model into its cache on first use (`MENAGERIE_CACHE_DIR`,
   default `~/.cache/mujoco_menagerie`; `MENAGERIE_ROOT` = a checkout).

None found raises `RobotFileNotFoundError` naming the ways to provide the file.

`fetch_robot_files(robots)` downloads MJLab's wheel with `pip download --no-deps` (it installs
nothing, so torch, mujoco and mujoco-warp stay as they are), or reads a wheel given as a file
or a folder holding it, and keeps only the robots' folders (`xmls/`: the MJCF and its meshes)
in the robot cache. This module imports only the standard library and attrs, so a launcher can
check the files in well under a second.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable

import attrs

__all__ = [
    "MENAGERIE_ENTRIES",
    "MJLAB_FILES",
    "MJLAB_VERSION",
    "MjcfSource",
    "RobotFileNotFoundError",
    "fetch_robot_files",
    "find_mjcf",
    "robot_cache_dir",
]

# Robot -> its file inside the mjlab 1.6.0 package, and Menagerie's model name and entry point.
MJLAB_FILES = {
    "go1": "asset_zoo/robots/unitree_go1/xmls/go1.xml",
    "g1": "asset_zoo/robots/unitree_g1/xmls/g1.xml",
}
MENAGERIE_ENTRIES = {"go1": ("unitree_go1", "go1"), "g1": ("unitree_g1", "g1_mjlab")}
MJLAB_VERSION = "1.6.0"
CACHE_ENV = "UNILAB_ROBOTS_DIR"


class RobotFileNotFoundError(FileNotFoundError):
    """No MJCF for a robot: neither given, nor cached, nor in an installed mjlab, nor from
    Menagerie."""


@attrs.frozen
class MjcfSource:
    """A found MJCF: its path and where it came from ("path", "cache", "mjlab" or
    "menagerie")."""

    path: str
    origin: str


def robot_cache_dir() -> str:
    """The folder robot files are kept in: `$UNILAB_ROBOTS_DIR` if set, else `unilab/robots`
    in the platform's user cache (`$XDG_CACHE_HOME` or `~/.cache` on Linux, `~/Library/Caches`
    on macOS, `%LOCALAPPDATA%` on Windows)."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~\\AppData\\Local")
    elif sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "unilab", "robots")


def _check_robot(robot: str) -> None:
    if robot not in MJLAB_FILES:
        raise ValueError(f"unknown robot {robot!r}; known: {', '.join(sorted(MJLAB_FILES))}")


def _from_cache(robot: str) -> str | None:
    path = os.path.join(robot_cache_dir(), "mjlab", MJLAB_FILES[robot])
    return path if os.path.isfile(path) else None


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
    """The MJCF of `robot` ("go1", "g1"): `mjcf` if given, else the robot cache's, else an
    installed mjlab's, else Menagerie's."""
    _check_robot(robot)
    if mjcf is not None:
        path = os.fspath(mjcf)
        if not os.path.isfile(path):
            raise RobotFileNotFoundError(f"{robot}: MJCF file {path!r} does not exist")
        return MjcfSource(path, "path")
    for origin, find in (("cache", _from_cache), ("mjlab", _from_mjlab)):
        path = find(robot)
        if path is not None:
            return MjcfSource(path, origin)
    path = _from_menagerie(robot)
    if path is not None:
        return MjcfSource(path, "menagerie")
    # Only ways that change no installed package (torch, mujoco, mujoco-warp stay as they are).
    name, entry = MENAGERIE_ENTRIES[robot]
    file = os.path.basename(MJLAB_FILES[robot])
    raise RobotFileNotFoundError(
        f"no MJCF for the robot {robot!r} (MJLab {MJLAB_VERSION}'s {file}). Get it with "
        f"`unilab robots get {robot}` (in Python: unilab_envs.robot_files.fetch_robot_files"
        f"(['{robot}'])), which downloads MJLab's wheel without its dependencies, installs "
        f"nothing and keeps the robot files in {robot_cache_dir()}; or pass mjcf=PATH (e.g. "
        f"{robot}(mjcf='/path/to/{file}')); or use MuJoCo Menagerie's {name} '{entry}' through "
        "the unilab-envs[menagerie] extra"
    )


def fetch_robot_files(
    robots: Iterable[str], source: str | os.PathLike | None = None, cache_dir: str | None = None
) -> dict[str, str]:
    """Keep `robots`' files from MJLab's wheel in the robot cache; return {robot: MJCF path}.

    `source`: a wheel file, or a folder holding `mjlab-<MJLAB_VERSION>-*.whl`; None downloads
    the wheel with `pip download --no-deps` (no package is installed or changed). Only each
    robot's `xmls/` folder (its MJCF and meshes) is kept, under `cache_dir` (default
    `robot_cache_dir()`), replacing an earlier copy."""
    robots = list(dict.fromkeys(robots))
    for robot in robots:
        _check_robot(robot)
    cache = os.path.abspath(cache_dir or robot_cache_dir())
    with tempfile.TemporaryDirectory(prefix="unilab-robots-") as tmp:
        wheel = _wheel(source, tmp)
        with zipfile.ZipFile(wheel) as zf:
            names = zf.namelist()
            out = {}
            for robot in robots:
                folder = "mjlab/" + os.path.dirname(MJLAB_FILES[robot]) + "/"
                members = [n for n in names if n.startswith(folder) and not n.endswith("/")]
                if "mjlab/" + MJLAB_FILES[robot] not in members:
                    raise ValueError(
                        f"{wheel}: no mjlab/{MJLAB_FILES[robot]} in it; give MJLab "
                        f"{MJLAB_VERSION}'s wheel (mjlab-{MJLAB_VERSION}-py3-none-any.whl)"
                    )
                staged = os.path.join(tmp, "staged", robot)
                zf.extractall(staged, members)
                dest = os.path.join(cache, "mjlab", os.path.dirname(MJLAB_FILES[robot]))
                shutil.rmtree(dest, ignore_errors=True)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                shutil.move(os.path.join(staged, folder.rstrip("/")), dest)
                out[robot] = os.path.join(cache, "mjlab", MJLAB_FILES[robot])
    return out


def _wheel(source: str | os.PathLike | None, tmp: str) -> str:
    """The path of MJLab's wheel: `source` itself, the one in the folder `source`, or one
    `pip download --no-deps` puts in `tmp`."""
    pattern = f"mjlab-{MJLAB_VERSION}-*.whl"
    if source is not None:
        path = os.fspath(source)
        if os.path.isfile(path):
            return path
        if not os.path.isdir(path):
            raise FileNotFoundError(f"{path!r}: no such wheel file or folder")
        found = sorted(glob.glob(os.path.join(path, pattern)))
        if not found:
            raise FileNotFoundError(f"{path!r}: no {pattern} in this folder")
        return found[-1]
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--disable-pip-version-check", "--dest", tmp, f"mjlab=={MJLAB_VERSION}",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    found = sorted(glob.glob(os.path.join(tmp, pattern)))
    if proc.returncode != 0 or not found:
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise OSError(
            f"`pip download --no-deps mjlab=={MJLAB_VERSION}` failed ({last[0]}); download the "
            f"wheel where the network is reachable and give it: --from PATH"
        )
    return found[-1]
