#!/usr/bin/env python3
"""Release one UniLab package on its own cadence, or build wheels to install from a clone.

    python3 tools/release.py PACKAGE VERSION [--widen] [--dry-run] [--date YYYY-MM-DD] [--outdir DIR]
    python3 tools/release.py --wheels PACKAGE [--outdir DIR]

PACKAGE is a short name (`dist`, `storage`, `algos`, `envs`, `launch`, `integration`) or a
distribution name (`unilab-dist`). A release, in a clean git work tree:

1. sets `__version__` in `src/unilab_<pkg>/__init__.py` (the package's only version: its
   pyproject.toml reads it) and moves the changelog's "Unreleased" notes under
   `## VERSION (DATE)`;
2. checks every sibling that declares the package (dependencies and extras): a VERSION outside
   a sibling's range is refused, unless `--widen` raises that range's upper bound in the same
   change (the 0.x policy below) and notes it in the sibling's changelog;
3. builds the wheel and sdist into `OUTDIR/unilab-<pkg>-<version>/` and runs
   `twine check --strict` on them (files restored if either fails);
4. commits the change ("Release unilab-<pkg> VERSION") and tags it `unilab-<pkg>-v<VERSION>`;
5. prints the commands that publish it (a PyPI token is needed; nothing is uploaded here).

`--dry-run` prints every step (file diffs, commands, tag) and changes nothing.

Compatibility policy (0.x). Siblings declare `>=0.A,<0.(A+1)`: in 0.x the minor number is the
breaking one. A patch release (0.1.1) stays in every range. A minor release (0.2.0) leaves the
ranges of its dependants; `--widen` makes them `>=0.1,<0.3` (lower bound kept, so the oldest
version they claim stays tested by `nox -s compat`; raise it by hand when they need the new
API). From 1.0 the major number plays that role (`>=1.2,<2`).

`--wheels PACKAGE` builds the wheels of PACKAGE and of the UniLab packages it needs (from the
work tree, at their current versions) into OUTDIR, for `pip install OUTDIR/*.whl`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from install import install_order, package_dirs, project_table, requirement_name

ROOT = Path(__file__).resolve().parent.parent
VERSION_RE = re.compile(r"^\d+\.\d+\.\d+$")
INIT_VERSION_RE = re.compile(r'(?m)^__version__ = "([^"]+)"$')
SPEC_RE = re.compile(r"(>=|<=|==|!=|>|<)\s*([0-9][0-9.]*)")


class ReleaseError(RuntimeError):
    """A release that cannot be made as asked; the message says why."""


def short_name(root: Path, name: str) -> str:
    short = name.removeprefix("unilab-").removeprefix("unilab_")
    dirs = package_dirs(root)
    if short not in dirs:
        raise ReleaseError(f"unknown package {name!r}; known: {', '.join(dirs)}")
    return short


def parse_version(text: str) -> tuple[int, ...]:
    if not VERSION_RE.match(text):
        raise ReleaseError(f"version {text!r} is not of the form MAJOR.MINOR.PATCH")
    return tuple(int(x) for x in text.split("."))


def init_file(package: Path) -> Path:
    inits = list((package / "src").glob("unilab_*/__init__.py"))
    if len(inits) != 1:
        raise ReleaseError(
            f"{package.name}: expected one src/unilab_*/__init__.py, found {len(inits)}"
        )
    return inits[0]


def current_version(package: Path) -> str:
    """The package's version: `__version__` in its `__init__.py` (pyproject.toml reads it)."""
    init = init_file(package)
    match = INIT_VERSION_RE.search(init.read_text())
    if match is None:
        raise ReleaseError(f'{init}: no `__version__ = "..."` line')
    return match.group(1)


def allows(spec: str, version: str) -> bool:
    """Whether `version` satisfies a specifier such as `>=0.1,<0.2` (numeric versions only)."""
    v = parse_version(version)
    for op, bound in SPEC_RE.findall(spec):
        b = tuple(int(x) for x in bound.split("."))
        width = max(len(b), len(v))
        vv, bb = v + (0,) * (width - len(v)), b + (0,) * (width - len(b))
        ok = {
            ">=": vv >= bb, "<=": vv <= bb, "==": vv == bb,
            "!=": vv != bb, ">": vv > bb, "<": vv < bb,
        }[op]  # fmt: skip
        if not ok:
            return False
    return True


def widened(spec: str, version: str) -> str:
    """`spec` with its upper bound raised to the next breaking version after `version`."""
    major, minor, _ = parse_version(version)
    upper = f"0.{minor + 1}" if major == 0 else f"{major + 1}"
    lower = [f"{op}{b}" for op, b in SPEC_RE.findall(spec) if op in (">=", ">")]
    return ",".join([*lower, f"<{upper}"])


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


def add_unreleased_note(changelog: str, line: str) -> str:
    match = re.search(r"(?m)^## Unreleased[ \t]*\n\n?", changelog)
    if match is None:
        raise ReleaseError('CHANGELOG.md has no "## Unreleased" section')
    return changelog[: match.end()] + f"{line}\n" + changelog[match.end() :].lstrip("\n")


def dependant_edits(
    root: Path, short: str, version: str, widen: bool
) -> tuple[dict[Path, str], list[str]]:
    """({file: new text}, refusals) for the siblings that declare unilab-`short`."""
    dist = f"unilab-{short}"
    edits: dict[Path, str] = {}
    refusals: list[str] = []
    for other, path in package_dirs(root).items():
        if other == short:
            continue
        meta = project_table(path)
        reqs = [*meta.get("dependencies", [])]
        for extra in meta.get("optional-dependencies", {}).values():
            reqs += extra
        pyproject = (path / "pyproject.toml").read_text()
        new_reqs: list[str] = []
        for req in dict.fromkeys(r for r in reqs if requirement_name(r) == dist):
            spec = req[len(dist) :].split(";")[0]
            if allows(spec, version):
                continue
            if not widen:
                refusals.append(f"unilab-{other} requires {req}")
                continue
            new_reqs.append(f"{dist}{widened(spec, version)}")
            pyproject = pyproject.replace(f'"{req}"', f'"{new_reqs[-1]}"')
        if new_reqs:
            edits[path / "pyproject.toml"] = pyproject
            log = path / "CHANGELOG.md"
            shown = ", ".join(f"`{r}`" for r in dict.fromkeys(new_reqs))
            edits[log] = add_unreleased_note(
                log.read_text(), f"- Accepts {dist} {version}: {shown}."
            )
    return edits, refusals


def planned_edits(root: Path, short: str, version: str, date: str, widen: bool) -> dict[Path, str]:
    """{file: new text} of the release; raises ReleaseError (nothing written) if refused."""
    path = package_dirs(root)[short]
    old = current_version(path)
    if parse_version(version) <= parse_version(old):
        raise ReleaseError(f"unilab-{short}: new version {version} is not greater than {old}")
    init = init_file(path)
    edits = {
        init: INIT_VERSION_RE.sub(f'__version__ = "{version}"', init.read_text(), count=1),
        path / "CHANGELOG.md": move_unreleased((path / "CHANGELOG.md").read_text(), version, date),
    }
    sibling_edits, refusals = dependant_edits(root, short, version, widen)
    if refusals:
        raise ReleaseError(
            f"unilab-{short} {version} is outside sibling ranges ({'; '.join(refusals)}): "
            "release a version inside them, or pass --widen to raise their upper bounds in "
            "this change (0.x policy: tools/release.py --help)"
        )
    edits.update(sibling_edits)
    return edits


def tag_name(short: str, version: str) -> str:
    return f"unilab-{short}-v{version}"


def build_commands(package: Path, out: Path, wheel_only: bool = False) -> list[list[str]]:
    build = [sys.executable, "-m", "build", *(["--wheel"] if wheel_only else [])]
    return [[*build, "--outdir", str(out), str(package)]]


def twine_command(out: Path, dist: str, version: str) -> list[str]:
    stem = dist.replace("-", "_")
    files = [str(out / f"{stem}-{version}.tar.gz"), str(out / f"{stem}-{version}-py3-none-any.whl")]
    return [sys.executable, "-m", "twine", "check", "--strict", *files]


def git(root: Path, *args: str, capture: bool = False) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise ReleaseError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout if capture else ""


def run(command: list[str], dry_run: bool) -> None:
    print(("" if dry_run else "+ ") + shlex.join(command), flush=True)
    if dry_run:
        return
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-15:]
        raise ReleaseError(f"{shlex.join(command[:4])} failed:\n" + "\n".join(tail))


def release(
    root: Path, name: str, version: str, date: str, *, widen: bool, dry_run: bool, outdir: Path
) -> str:
    """Make (or with `dry_run` print) the release; returns its tag."""
    short = short_name(root, name)
    dist, path = f"unilab-{short}", package_dirs(root)[short]
    missing = [m for m in ("build", "twine") if importlib.util.find_spec(m) is None]
    if missing and not dry_run:
        raise ReleaseError(f"{' and '.join(missing)} not installed: pip install build twine")
    if git(root, "status", "--porcelain", capture=True).strip():
        raise ReleaseError("the work tree has uncommitted changes: commit or stash them first")
    tag = tag_name(short, version)
    if git(root, "tag", "--list", tag, capture=True).strip():
        raise ReleaseError(f"tag {tag} exists already: {dist} {version} was released")
    edits = planned_edits(root, short, version, date, widen)
    out = outdir / f"{dist}-{version}"
    print(f"{'dry run: ' if dry_run else ''}release {dist} {current_version(path)} -> {version}")
    for file, text in edits.items():
        diff = difflib.unified_diff(
            file.read_text().splitlines(keepends=True),
            text.splitlines(keepends=True),
            f"a/{file.relative_to(root)}",
            f"b/{file.relative_to(root)}",
        )
        sys.stdout.writelines(diff)
    originals = {file: file.read_text() for file in edits}
    if not dry_run:
        for file, text in edits.items():
            file.write_text(text)
    try:
        for command in build_commands(path, out):
            run(command, dry_run)
        run(twine_command(out, dist, version), dry_run)
    except ReleaseError:
        for file, text in originals.items():
            file.write_text(text)
        raise
    files = [str(file.relative_to(root)) for file in edits]
    message = f"Release {dist} {version}"
    for command in (
        ["add", *files],
        ["commit", "-q", "-m", message],
        ["tag", "-a", tag, "-m", message],
    ):
        print(("" if dry_run else "+ ") + shlex.join(["git", *command]), flush=True)
        if not dry_run:
            git(root, *command)
    print(
        f"{'would tag' if dry_run else 'tagged'} {tag}. To publish (a PyPI token in TWINE_PASSWORD):"
    )
    print(f"  python3 -m twine upload {out}/*")
    print(f"  git push origin HEAD {tag}")
    dirs = package_dirs(root)
    widened_names = [
        f"unilab-{n}" for n, d in dirs.items() if n != short and d / "CHANGELOG.md" in edits
    ]
    if widened_names:
        print(f"  then release {', '.join(widened_names)} so that their published ranges accept it")
    return tag


def build_wheels(root: Path, name: str, outdir: Path) -> list[str]:
    """Build the wheels of `name` and of the UniLab packages it needs into `outdir`."""
    short = short_name(root, name)
    if importlib.util.find_spec("build") is None:
        raise ReleaseError("build not installed: pip install build")
    names = install_order(root, [short])
    for each in names:  # an older build of the same package would make pip pick between two
        for old in outdir.glob(f"unilab_{each}-*.whl"):
            old.unlink()
        for command in build_commands(package_dirs(root)[each], outdir, wheel_only=True):
            run(command, dry_run=False)
    print(
        f"built {', '.join('unilab-' + n for n in names)} into {outdir}; next: pip install {outdir}/*.whl"
    )
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[4:]),
    )  # fmt: skip
    parser.add_argument("package", nargs="?")
    parser.add_argument("version", nargs="?")
    parser.add_argument("--wheels", metavar="PACKAGE", help="build installable wheels only")
    parser.add_argument("--widen", action="store_true", help="raise dependants' upper bounds")
    parser.add_argument("--dry-run", action="store_true", help="print every step, change nothing")
    parser.add_argument("--date", default=dt.date.today().isoformat())
    parser.add_argument(
        "--outdir", type=Path, default=None, help="default: dist/ (--wheels: dist/wheels/)"
    )
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    default = args.root / "dist" / ("wheels" if args.wheels else "")
    outdir = (args.outdir or default).absolute()
    try:
        if args.wheels:
            build_wheels(args.root, args.wheels, outdir)
        elif args.package and args.version:
            release(
                args.root, args.package, args.version, args.date,
                widen=args.widen, dry_run=args.dry_run, outdir=outdir,
            )  # fmt: skip
        else:
            parser.error("give PACKAGE VERSION, or --wheels PACKAGE")
    except ReleaseError as err:
        print(f"release: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
