"""The UniLab packages this one requires must be installed in its declared ranges.

Checked when the package is imported (its `__init__` imports this module first), from the
installed metadata alone (no sibling is imported, no torch), so that a sibling
that is too old or too new fails here, naming both versions, rather than deep inside a call.
The same file ships in every UniLab package that requires siblings (they share no package
below them that imports nothing); tools/tests/test_packaging.py keeps the copies identical.
"""

from __future__ import annotations

import re
from importlib import metadata

_REQUIREMENT = re.compile(r"(unilab-[a-z]+)\s*([^;]*)")  # core requirements only: no "; extra"
_CLAUSE = re.compile(r"(>=|<=|==|!=|<|>)\s*(\d+(?:\.\d+)*)")


def _key(version: str) -> tuple[int, ...]:
    numbers = [int(x) for x in re.findall(r"\d+", version.split("+")[0])[:3]]
    return tuple(numbers + [0] * (3 - len(numbers)))


def within(version: str, spec: str) -> bool:
    """Whether a release version satisfies a specifier such as `>=0.1,<0.2`."""
    checks = {
        ">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b, "==": lambda a, b: a == b,
        "!=": lambda a, b: a != b, "<": lambda a, b: a < b, ">": lambda a, b: a > b,
    }  # fmt: skip
    return all(checks[op](_key(version), _key(bound)) for op, bound in _CLAUSE.findall(spec))


def check_siblings(dist: str) -> None:
    """Raise ImportError if a UniLab package that `dist` requires is installed outside its
    range (or missing); nothing when `dist` itself has no installed metadata (a source tree)."""
    try:
        requires, own = metadata.requires(dist) or [], metadata.version(dist)
    except metadata.PackageNotFoundError:
        return
    for requirement in requires:
        match = _REQUIREMENT.fullmatch(requirement.strip())
        if match is None:
            continue
        name, spec = match.group(1), match.group(2).strip()
        try:
            found = metadata.version(name)
        except metadata.PackageNotFoundError:
            found = None
        if found is None or not within(found, spec):
            raise ImportError(
                f"{dist} {own} needs {name}{spec}, found {name} {found or 'not installed'}: "
                f'pip install "{name}{spec}"'
            )


check_siblings(__name__.rpartition(".")[0].replace("_", "-"))  # this package's distribution
