"""tools/release.py in a temporary clone of this repository: dry run, refusals, a real release."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import release

ROOT = Path(__file__).resolve().parents[2]
NEEDS_BUILD = [m for m in ("build", "twine") if importlib.util.find_spec(m) is None]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A clone of this repository's HEAD with a note under unilab-dist's "Unreleased"."""
    repo = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(repo)], check=True)
    git(repo, "config", "user.name", "Release Test")
    git(repo, "config", "user.email", "release@example.invalid")
    log = repo / "packages" / "unilab-dist" / "CHANGELOG.md"
    log.write_text(release.add_unreleased_note(log.read_text(), "- A note to release."))
    git(repo, "commit", "-qam", "a change to release")
    return repo


def run_release(repo: Path, *args: str) -> int:
    return release.main([*args, "--root", str(repo), "--date", "2026-12-01"])


def test_version_ranges_and_the_0x_widening() -> None:
    assert release.allows(">=0.1,<0.2", "0.1.7") and not release.allows(">=0.1,<0.2", "0.2.0")
    assert release.allows("", "3.0.0") and not release.allows(">=0.2", "0.1.9")
    assert release.widened(">=0.1,<0.2", "0.2.0") == ">=0.1,<0.3"
    assert release.widened(">=1.2,<2", "2.0.0") == ">=1.2,<3"


def test_dry_run_prints_every_step_and_changes_nothing(clone: Path, capsys) -> None:
    head = git(clone, "rev-parse", "HEAD")
    assert run_release(clone, "dist", "0.2.0", "--widen", "--dry-run") == 0
    out = capsys.readouterr().out
    old = release.current_version(clone / "packages" / "unilab-dist")
    assert f"dry run: release unilab-dist {old} -> 0.2.0" in out
    assert '+__version__ = "0.2.0"' in out and "+## 0.2.0 (2026-12-01)" in out
    for sibling in ("unilab-storage", "unilab-algos", "unilab-launch", "integration"):
        assert (
            f"+++ b/{'packages/' if sibling != 'integration' else ''}{sibling}/pyproject.toml"
            in out
        )
    assert out.count('+    "unilab-dist>=0.1,<0.3",') == 4
    assert "+- Accepts unilab-dist 0.2.0: `unilab-dist>=0.1,<0.3`." in out
    assert "-m build --outdir" in out and "-m twine check --strict" in out
    assert "git tag -a unilab-dist-v0.2.0" in out and "would tag unilab-dist-v0.2.0" in out
    assert "python3 -m twine upload" in out and "git push origin HEAD unilab-dist-v0.2.0" in out
    assert git(clone, "status", "--porcelain") == "" and git(clone, "tag") == ""
    assert git(clone, "rev-parse", "HEAD") == head


def test_refuses_what_a_sibling_range_excludes_and_changes_nothing(clone: Path, capsys) -> None:
    assert run_release(clone, "dist", "0.2.0") == 2
    err = capsys.readouterr().err
    assert "unilab-dist 0.2.0 is outside sibling ranges" in err
    assert "unilab-storage requires unilab-dist>=0.1,<0.2" in err and "--widen" in err
    old = release.current_version(clone / "packages" / "unilab-dist")
    assert run_release(clone, "unilab-dist", old) == 2
    assert f"not greater than {old}" in capsys.readouterr().err
    assert run_release(clone, "nope", "1.0.0") == 2
    assert "unknown package 'nope'" in capsys.readouterr().err
    (clone / "stray.txt").write_text("x")
    assert run_release(clone, "dist", "0.1.9") == 2
    assert "uncommitted changes" in capsys.readouterr().err
    (clone / "stray.txt").unlink()
    assert git(clone, "status", "--porcelain") == "" and git(clone, "tag") == ""


def test_empty_unreleased_section_is_refused(clone: Path, capsys) -> None:
    log = clone / "packages" / "unilab-storage" / "CHANGELOG.md"
    log.write_text("# Changelog\n\n## Unreleased\n\n## 0.1.0 (2026-01-01)\n\n- First.\n")
    git(clone, "commit", "-qam", "nothing unreleased")
    assert run_release(clone, "storage", "0.1.9") == 2
    assert "empty" in capsys.readouterr().err


@pytest.mark.skipif(
    bool(NEEDS_BUILD) and os.environ.get("UNILAB_REQUIRE_BUILD") != "1",
    reason=f"needs {NEEDS_BUILD} (pip install build twine)",
)
def test_release_bumps_builds_checks_commits_and_tags(clone: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_release(clone, "dist", "0.2.0", "--widen", "--outdir", str(out)) == 0
    assert git(clone, "status", "--porcelain") == ""
    assert git(clone, "log", "-1", "--format=%s") == "Release unilab-dist 0.2.0\n"
    assert git(clone, "tag", "--points-at", "HEAD") == "unilab-dist-v0.2.0\n"
    changed = set(git(clone, "show", "--name-only", "--format=", "HEAD").split())
    assert "packages/unilab-dist/src/unilab_dist/__init__.py" in changed
    assert "packages/unilab-storage/pyproject.toml" in changed and len(changed) == 10
    log = (clone / "packages" / "unilab-dist" / "CHANGELOG.md").read_text()
    assert "## Unreleased\n\n## 0.2.0 (2026-12-01)\n\n- A note to release." in log
    assert release.current_version(clone / "packages" / "unilab-dist") == "0.2.0"
    built = out / "unilab-dist-0.2.0"
    with zipfile.ZipFile(built / "unilab_dist-0.2.0-py3-none-any.whl") as wheel:
        names = wheel.namelist()
        meta = wheel.read("unilab_dist-0.2.0.dist-info/METADATA").decode()
    assert "unilab_dist-0.2.0.dist-info/licenses/LICENSE" in names
    assert "Version: 0.2.0" in meta and "../" not in meta
    with tarfile.open(built / "unilab_dist-0.2.0.tar.gz") as sdist:
        assert "unilab_dist-0.2.0/LICENSE" in sdist.getnames()
    # the same version again: the tag exists
    assert run_release(clone, "dist", "0.2.0", "--outdir", str(out)) == 2


@pytest.mark.skipif(
    bool(NEEDS_BUILD) and os.environ.get("UNILAB_REQUIRE_BUILD") != "1",
    reason=f"needs {NEEDS_BUILD} (pip install build twine)",
)
def test_wheels_of_a_package_and_the_siblings_it_needs(clone: Path, tmp_path: Path) -> None:
    out = tmp_path / "wheels"
    out.mkdir()
    (out / "unilab_dist-0.0.1-py3-none-any.whl").write_text("an older build")
    assert release.main(["--wheels", "launch", "--root", str(clone), "--outdir", str(out)]) == 0
    version = release.current_version
    assert sorted(p.name for p in out.iterdir()) == [
        f"unilab_dist-{version(clone / 'packages' / 'unilab-dist')}-py3-none-any.whl",
        f"unilab_launch-{version(clone / 'packages' / 'unilab-launch')}-py3-none-any.whl",
    ]


def test_every_package_version_is_read_from_its_init() -> None:
    for path in release.package_dirs(ROOT).values():
        assert release.VERSION_RE.match(release.current_version(path)), path
