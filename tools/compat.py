#!/usr/bin/env python3
"""The oldest sibling versions each UniLab package allows, as wheels to test it against.

    python3 tools/compat.py PACKAGE [--outdir DIR] [--dry-run]

For every UniLab package that PACKAGE declares (dependencies and its `test` extra, not
transitively), the oldest version its range allows is the smallest released version (a git tag
`unilab-<sibling>-v<version>`, tools/release.py makes them) inside the range, or the work tree's
version when no tag is inside it. The wheel of that version is built from the tag's files (or
from the tree) into OUTDIR; the command prints one line per sibling and the wheel paths last.
`nox -s compat` installs those wheels under PACKAGE's tests. Standard library only.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from install import package_dirs, project_table, requirement_name
from release import ReleaseError, allows, current_version, parse_version

ROOT = Path(__file__).resolve().parent.parent


def sibling_ranges(root: Path, short: str, extras: tuple[str, ...] = ("test",)) -> dict[str, str]:
    """{sibling short name: specifier} that package `short` declares (dependencies + extras)."""
    meta = project_table(package_dirs(root)[short])
    reqs = list(meta.get("dependencies", []))
    for extra in extras:
        reqs += meta.get("optional-dependencies", {}).get(extra, [])
    found: dict[str, str] = {}
    for req in reqs:
        name = requirement_name(req)
        if name.startswith("unilab-"):
            found[name.removeprefix("unilab-")] = req[len(name) :].split(";")[0].strip()
    return found


def released_versions(root: Path, short: str) -> list[str]:
    """Versions of unilab-`short` that have a release tag, oldest first."""
    out = subprocess.run(
        ["git", "-C", str(root), "tag", "--list", f"unilab-{short}-v*"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    prefix = f"unilab-{short}-v"
    versions = [
        t.removeprefix(prefix) for t in out if re.fullmatch(r"\d+\.\d+\.\d+", t[len(prefix) :])
    ]
    return sorted(versions, key=parse_version)


def oldest_allowed(root: Path, short: str, spec: str) -> tuple[str, str | None]:
    """(version, tag or None for the work tree) of the oldest unilab-`short` inside `spec`."""
    for version in released_versions(root, short):
        if allows(spec, version):
            return version, f"unilab-{short}-v{version}"
    tree = current_version(package_dirs(root)[short])
    if not allows(spec, tree):
        raise ReleaseError(
            f"no release of unilab-{short} is inside {spec!r} and the tree's {tree} is not either: "
            "fix the range"
        )
    return tree, None


def source_dir(root: Path, short: str, tag: str | None, scratch: Path) -> Path:
    """The package folder of unilab-`short` at `tag` (extracted under `scratch`), or the tree's."""
    folder = package_dirs(root)[short]
    if tag is None:
        return folder
    relative = folder.relative_to(root).as_posix()
    archive = scratch / f"{tag}.tar"
    with open(archive, "wb") as f:
        subprocess.run(["git", "-C", str(root), "archive", tag, relative], stdout=f, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(scratch / tag, filter="data")
    return scratch / tag / relative


def oldest_wheels(root: Path, short: str, outdir: Path, dry_run: bool = False) -> list[Path]:
    """Build the wheel of each sibling of `short` at its oldest allowed version into `outdir`."""
    wheels: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp:
        for sibling, spec in sorted(sibling_ranges(root, short).items()):
            version, tag = oldest_allowed(root, sibling, spec)
            print(f"unilab-{short}: unilab-{sibling}{spec} -> {version} ({tag or 'work tree'})")
            wheel = outdir / f"unilab_{sibling}-{version}-py3-none-any.whl"
            wheels.append(wheel)
            if dry_run:
                continue
            folder = source_dir(root, sibling, tag, Path(tmp))
            subprocess.run(
                [sys.executable, "-m", "build", "--wheel", "--outdir", str(outdir), str(folder)],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
    return wheels


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package")
    parser.add_argument("--outdir", type=Path, default=ROOT / "dist" / "oldest")
    parser.add_argument("--dry-run", action="store_true", help="print the versions only")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        short = args.package.removeprefix("unilab-")
        wheels = oldest_wheels(args.root, short, args.outdir.absolute(), args.dry_run)
    except (ReleaseError, KeyError) as err:
        print(f"compat: {err}", file=sys.stderr)
        return 2
    print(" ".join(str(w) for w in wheels))
    return 0


if __name__ == "__main__":
    sys.exit(main())
