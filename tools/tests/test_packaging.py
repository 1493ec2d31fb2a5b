"""Package metadata: what each package imports is what it declares (standard library only)."""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
import sys
import tomllib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from install import package_dirs, requirement_name
from install import project_table as project

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = list(package_dirs(ROOT).values())
DIST_OF_IMPORT = {"warp": "warp-lang", "mujoco_warp": "mujoco-warp", "rsl_rl": "rsl-rl-lib"}


def module_level_imports(src: Path, contrib: bool = False) -> dict[str, str]:
    """{distribution name: first file} of the third-party modules imported at module level.

    Imports inside functions or `try` blocks are lazy (optional features behind extras) and
    not counted. Modules under a `contrib/` folder (each one behind an extra) are counted only
    with `contrib=True`."""
    found: dict[str, str] = {}
    for path in sorted(src.rglob("*.py")):
        if ("contrib" in path.relative_to(src).parts) != contrib:
            continue
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
    declared = {requirement_name(req).lower() for req in project(package)["dependencies"]}
    imported = module_level_imports(package / "src")
    own = project(package)["name"]
    missing = {dist: where for dist, where in imported.items() if dist not in declared | {own}}
    assert not missing, f"{package.name} imports undeclared distributions: {missing}"
    extras = {
        requirement_name(r).lower()
        for e in project(package).get("optional-dependencies", {}).values()
        for r in e
    }
    imported = module_level_imports(package / "src", contrib=True)
    missing = {d: w for d, w in imported.items() if d not in declared | extras | {own}}
    assert not missing, (
        f"{package.name}'s contrib imports distributions no extra declares: {missing}"
    )


def test_unilab_dist_declares_numpy() -> None:
    # torch prints "Failed to initialize NumPy" at import when numpy is missing
    names = {
        requirement_name(r) for r in project(ROOT / "packages" / "unilab-dist")["dependencies"]
    }
    assert "numpy" in names


@pytest.mark.parametrize("package", PACKAGES, ids=[p.name for p in PACKAGES])
def test_package_ships_the_license_and_reads_right_on_an_index(package: Path) -> None:
    meta = project(package)
    # the wheel and sdist take the package folder's LICENSE: the root's text, byte for byte
    assert meta["license-files"] == ["LICENSE"]
    assert (package / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
    assert (ROOT / "LICENSE").read_text().split()[:3] == ["Apache", "License", "Version"]
    assert meta["urls"]["Homepage"] == f"https://pypi.org/project/{meta['name']}/"
    readme = (package / meta["readme"]).read_text()
    links = [link for link in re.findall(r"\]\(([^)]+)\)", readme) if "://" not in link]
    assert not links, f"{package.name}/README.md links relative paths: {links}"
    assert f"pip install {meta['name']}" in readme  # how to install once published
    assert f"tools/install.py --package {package.name.removeprefix('unilab-')}" in readme


@pytest.mark.parametrize("package", PACKAGES, ids=[p.name for p in PACKAGES])
def test_the_version_lives_in_one_place(package: Path) -> None:
    meta = project(package)
    assert "version" not in meta and meta["dynamic"] == ["version"]
    (init,) = package.glob("src/unilab_*/__init__.py")
    assert len(re.findall(r'(?m)^__version__ = "\d+\.\d+\.\d+"$', init.read_text())) == 1
    with open(package / "pyproject.toml", "rb") as f:
        hatch = tomllib.load(f)["tool"]["hatch"]
    assert hatch["version"]["path"] == str(init.relative_to(package))


def test_envs_sdist_leaves_out_the_parity_fixtures() -> None:
    with open(ROOT / "packages" / "unilab-envs" / "pyproject.toml", "rb") as f:
        sdist = tomllib.load(f)["tool"]["hatch"]["build"]["targets"]["sdist"]
    assert "tests/data" in sdist["exclude"]


def test_every_doc_with_pip_install_says_how_to_install_before_a_release() -> None:
    docs = [ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *(p / "README.md" for p in PACKAGES)]
    for doc in docs:
        text = doc.read_text()
        if re.search(r"pip\s+install\s+[\"']?unilab-", text):
            assert "tools/install.py" in text or "tools/release.py --wheels" in text, doc


SIBLING_CHECKS = sorted(path for p in PACKAGES for path in p.glob("src/unilab_*/_siblings.py"))


def test_the_sibling_check_ships_identical_in_every_package_with_siblings() -> None:
    with_siblings = {
        p.name
        for p in PACKAGES
        if any(requirement_name(r).startswith("unilab-") for r in project(p)["dependencies"])
    }
    holders = {path.parents[2].name for path in SIBLING_CHECKS}
    assert holders == with_siblings == {"unilab-algos", "unilab-launch", "integration"}
    assert len({path.read_bytes() for path in SIBLING_CHECKS}) == 1
    for path in SIBLING_CHECKS:  # imported first, before anything that could fail deeper
        init = (path.parent / "__init__.py").read_text()
        first = re.search(r"(?m)^from \..*$", init).group(0)
        assert first.startswith("from . import _siblings"), path


class FakeMetadata:
    """importlib.metadata for a unilab-algos that requires unilab-storage>=0.1,<0.2."""

    PackageNotFoundError = importlib.metadata.PackageNotFoundError

    def __init__(self, versions: dict[str, str]) -> None:
        self.versions = versions

    def requires(self, dist: str) -> list[str]:
        if dist not in self.versions:
            raise self.PackageNotFoundError(dist)
        return ["torch>=2.11", "unilab-storage<0.2,>=0.1", "unilab-dist<0.2,>=0.1; extra == 'test'"]

    def version(self, dist: str) -> str:
        if dist not in self.versions:
            raise self.PackageNotFoundError(dist)
        return self.versions[dist]


def test_a_sibling_outside_the_range_fails_at_import_naming_both_versions(monkeypatch) -> None:
    spec = importlib.util.spec_from_file_location("unilab_nothing._siblings", SIBLING_CHECKS[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # no metadata for unilab-nothing: nothing to check
    for storage, ok in (("0.1.3", True), ("0.0.9", False), ("0.2.0", False), (None, False)):
        versions = {"unilab-algos": "0.1.0", **({"unilab-storage": storage} if storage else {})}
        monkeypatch.setattr(module, "metadata", FakeMetadata(versions))
        if ok:
            module.check_siblings("unilab-algos")  # the test extra's unilab-dist is not required
            continue
        found = storage or "not installed"
        with pytest.raises(ImportError) as err:
            module.check_siblings("unilab-algos")
        assert str(err.value) == (
            f"unilab-algos 0.1.0 needs unilab-storage<0.2,>=0.1, found unilab-storage {found}: "
            'pip install "unilab-storage<0.2,>=0.1"'
        )
    assert module.within("0.1.0+local", ">=0.1,<0.2") and not module.within("1.0", "<1")
