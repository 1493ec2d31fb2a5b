import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import release

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    shutil.copytree(
        ROOT / "packages" / "unilab-dist",
        tmp_path / "packages" / "unilab-dist",
        ignore=shutil.ignore_patterns("tests", "__pycache__"),
    )
    pkg = tmp_path / "packages" / "unilab-dist"
    (pkg / "CHANGELOG.md").write_text(
        "# Changelog\n\n## Unreleased\n\n- Added a thing.\n- Fixed another.\n\n"
        "## 0.1.0 (2026-01-01)\n\n- First.\n"
    )
    return tmp_path


def version_of(repo: Path) -> tuple[str, str]:
    pkg = repo / "packages" / "unilab-dist"
    pyproject = release.current_version((pkg / "pyproject.toml").read_text())
    init = (pkg / "src" / "unilab_dist" / "__init__.py").read_text()
    return pyproject, init


def test_release_moves_unreleased_notes_and_bumps_both_versions(repo: Path) -> None:
    old, _ = version_of(repo)
    assert release.main(["dist", "0.2.0", "--date", "2026-12-01", "--root", str(repo)]) == 0
    pkg = repo / "packages" / "unilab-dist"
    assert (pkg / "CHANGELOG.md").read_text() == (
        "# Changelog\n\n## Unreleased\n\n## 0.2.0 (2026-12-01)\n\n- Added a thing.\n"
        "- Fixed another.\n\n## 0.1.0 (2026-01-01)\n\n- First.\n"
    )
    new, init = version_of(repo)
    assert (old, new) == ("0.1.0", "0.2.0")
    assert '__version__ = "0.2.0"' in init


def test_release_refuses_empty_unreleased_and_old_versions(repo: Path, capsys) -> None:
    assert release.main(["unilab-dist", "0.1.0", "--root", str(repo)]) == 2
    assert "not greater than 0.1.0" in capsys.readouterr().err
    assert release.main(["dist", "0.2.0", "--root", str(repo)]) == 0
    before = (repo / "packages" / "unilab-dist" / "CHANGELOG.md").read_text()
    assert release.main(["dist", "0.3.0", "--root", str(repo)]) == 2
    assert "empty" in capsys.readouterr().err
    assert (repo / "packages" / "unilab-dist" / "CHANGELOG.md").read_text() == before
    assert version_of(repo)[0] == "0.2.0"


def test_release_names_unknown_packages(repo: Path, capsys) -> None:
    assert release.main(["nope", "1.0.0", "--root", str(repo)]) == 2
    assert "unknown package 'nope'" in capsys.readouterr().err


def test_every_package_version_matches_its_init() -> None:
    for pyproject in [
        *ROOT.glob("packages/*/pyproject.toml"),
        ROOT / "integration" / "pyproject.toml",
    ]:
        version = release.current_version(pyproject.read_text())
        (init,) = pyproject.parent.glob("src/unilab_*/__init__.py")
        assert f'__version__ = "{version}"' in init.read_text(), init
