"""Package metadata: what each package imports is what it declares (standard library only)."""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = [*sorted((ROOT / "packages").glob("unilab-*")), ROOT / "integration"]
DIST_OF_IMPORT = {"warp": "warp-lang", "mujoco_warp": "mujoco-warp"}


def project(path: Path) -> dict:
    with open(path / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def requirement_name(req: str) -> str:
    name = req.split(";")[0].split("[")[0]
    for sep in "<>=!~ ":
        name = name.split(sep)[0]
    return name.strip().lower().replace("_", "-")


def module_level_imports(src: Path) -> dict[str, str]:
    """{distribution name: first file} of the third-party modules imported at module level.

    Imports inside functions or `try` blocks are lazy (optional features behind extras) and
    not counted."""
    found: dict[str, str] = {}
    for path in sorted(src.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top in sys.stdlib_module_names or top == "__future__":
                    continue
                if top.startswith("unilab_"):
                    top = top.replace("_", "-")
                dist = DIST_OF_IMPORT.get(top, top).replace("_", "-")
                found.setdefault(dist, str(path.relative_to(ROOT)))
    return found


@pytest.mark.parametrize("package", PACKAGES, ids=[p.name for p in PACKAGES])
def test_every_module_level_import_is_a_declared_dependency(package: Path) -> None:
    declared = {requirement_name(req) for req in project(package)["dependencies"]}
    imported = module_level_imports(package / "src")
    own = project(package)["name"]
    missing = {dist: where for dist, where in imported.items() if dist not in declared | {own}}
    assert not missing, f"{package.name} imports undeclared distributions: {missing}"


def test_unilab_dist_declares_numpy() -> None:
    # torch prints "Failed to initialize NumPy" at import when numpy is missing
    names = {
        requirement_name(r) for r in project(ROOT / "packages" / "unilab-dist")["dependencies"]
    }
    assert "numpy" in names
