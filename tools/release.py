#!/usr/bin/env python3
"""Release one UniLab package on its own cadence.

    python3 tools/release.py PACKAGE VERSION [--date YYYY-MM-DD]

PACKAGE is a short name (`dist`, `storage`, `algos`, `envs`, `launch`, `integration`) or a
distribution name (`unilab-dist`). The helper sets the version in the package's pyproject.toml
and `__version__`, and moves the changelog's "Unreleased" notes under a new heading
`## VERSION (DATE)`, leaving an empty "Unreleased" section. It refuses a version that is not
greater than the current one and an empty "Unreleased" section. It edits files only; tagging
and publishing stay with the person releasing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSION_RE = re.compile(r"^\d+\.\d+\.\d+$")


class ReleaseError(RuntimeError):
    """A release that cannot be made as asked; the message says why."""


def package_dir(root: Path, name: str) -> Path:
    short = name.removeprefix("unilab-").removeprefix("unilab_")
    path = root / "integration" if short == "integration" else root / "packages" / f"unilab-{short}"
    if not (path / "pyproject.toml").is_file():
        known = sorted(p.name.removeprefix("unilab-") for p in (root / "packages").glob("unilab-*"))
        raise ReleaseError(f"unknown package {name!r}; known: {', '.join([*known, 'integration'])}")
    return path


def parse_version(text: str) -> tuple[int, ...]:
    if not VERSION_RE.match(text):
        raise ReleaseError(f"version {text!r} is not of the form MAJOR.MINOR.PATCH")
    return tuple(int(x) for x in text.split("."))


def current_version(pyproject: str) -> str:
    match = re.search(r'(?m)^version = "([^"]+)"', pyproject)
    if match is None:
        raise ReleaseError('pyproject.toml has no static `version = "..."` line')
    return match.group(1)


def move_unreleased(changelog: str, version: str, date: str) -> str:
    """Return the changelog with the "Unreleased" notes moved under `## version (date)`."""
    match = re.search(r"(?m)^## Unreleased[ \t]*\n", changelog)
    if match is None:
        raise ReleaseError('CHANGELOG.md has no "## Unreleased" section')
    rest = changelog[match.end() :]
    nxt = re.search(r"(?m)^## ", rest)
    notes = (rest[: nxt.start()] if nxt else rest).strip("\n")
    after = rest[nxt.start() :] if nxt else ""
    if not notes.strip():
        raise ReleaseError('the "Unreleased" section is empty: nothing to release')
    head = changelog[: match.start()]
    released = f"## Unreleased\n\n## {version} ({date})\n\n{notes}\n"
    return head + released + ("\n" + after if after else "")


def release(root: Path, name: str, version: str, date: str) -> Path:
    path = package_dir(root, name)
    pyproject_path = path / "pyproject.toml"
    pyproject = pyproject_path.read_text()
    old = current_version(pyproject)
    if parse_version(version) <= parse_version(old):
        raise ReleaseError(f"{path.name}: new version {version} is not greater than {old}")
    changelog_path = path / "CHANGELOG.md"
    changelog = move_unreleased(changelog_path.read_text(), version, date)
    inits = list((path / "src").glob("unilab_*/__init__.py"))
    if len(inits) != 1:
        raise ReleaseError(
            f"{path.name}: expected one src/unilab_*/__init__.py, found {len(inits)}"
        )
    init = inits[0].read_text()
    if f'__version__ = "{old}"' not in init:
        raise ReleaseError(f"{inits[0]}: __version__ does not match pyproject version {old}")
    # Write only after every check passed, so a refused release changes nothing.
    pyproject_path.write_text(pyproject.replace(f'version = "{old}"', f'version = "{version}"', 1))
    changelog_path.write_text(changelog)
    inits[0].write_text(init.replace(f'__version__ = "{old}"', f'__version__ = "{version}"', 1))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("package")
    parser.add_argument("version")
    parser.add_argument("--date", default=dt.date.today().isoformat())
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        path = release(args.root, args.package, args.version, args.date)
    except ReleaseError as err:
        print(f"release: {err}", file=sys.stderr)
        return 2
    print(f"{path.relative_to(args.root)}: version {args.version}; changelog updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
