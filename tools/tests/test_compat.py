"""tools/compat.py in a temporary clone: the oldest sibling version a range allows, from tags."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import compat
from release import ReleaseError

ROOT = Path(__file__).resolve().parents[2]


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def set_dist_version(repo: Path, version: str, marker: str) -> None:
    init = repo / "packages" / "unilab-dist" / "src" / "unilab_dist" / "__init__.py"
    text = init.read_text()
    old = compat.current_version(repo / "packages" / "unilab-dist")
    init.write_text(text.replace(f'__version__ = "{old}"', f'__version__ = "{version}"') + marker)
    git(repo, "commit", "-qam", f"dist {version}")


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    repo = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(repo)], check=True)
    git(repo, "config", "user.name", "Compat Test")
    git(repo, "config", "user.email", "compat@example.invalid")
    return repo


def test_without_tags_the_oldest_is_the_work_tree(clone: Path) -> None:
    assert compat.sibling_ranges(clone, "storage") == {"dist": ">=0.1,<0.2"}
    assert compat.sibling_ranges(clone, "algos") == {"storage": ">=0.1,<0.2", "dist": ">=0.1,<0.2"}
    tree = compat.current_version(clone / "packages" / "unilab-dist")
    assert compat.oldest_allowed(clone, "dist", ">=0.1,<0.2") == (tree, None)
    with pytest.raises(ReleaseError, match=r"no release of unilab-dist is inside '>=0.7'"):
        compat.oldest_allowed(clone, "dist", ">=0.7")


def test_the_oldest_tag_inside_the_range_wins(clone: Path, tmp_path: Path, capsys) -> None:
    set_dist_version(clone, "0.0.9", "\nOLD = 9\n")
    git(clone, "tag", "unilab-dist-v0.0.9")  # below the range: ignored
    set_dist_version(clone, "0.1.4", "\nOLD = 14\n")
    git(clone, "tag", "unilab-dist-v0.1.4")
    set_dist_version(clone, "0.1.2", "\nOLD = 12\n")
    git(clone, "tag", "unilab-dist-v0.1.2")
    set_dist_version(clone, "0.1.5", "\nNEW = 15\n")  # the work tree, untagged
    assert compat.released_versions(clone, "dist") == ["0.0.9", "0.1.2", "0.1.4"]
    assert compat.oldest_allowed(clone, "dist", ">=0.1,<0.2") == ("0.1.2", "unilab-dist-v0.1.2")
    assert compat.main(["storage", "--root", str(clone), "--dry-run"]) == 0
    assert (
        "unilab-storage: unilab-dist>=0.1,<0.2 -> 0.1.2 (unilab-dist-v0.1.2)"
        in capsys.readouterr().out
    )


@pytest.mark.skipif(
    importlib.util.find_spec("build") is None and os.environ.get("UNILAB_REQUIRE_BUILD") != "1",
    reason="needs build (pip install build)",
)
def test_the_wheel_is_built_from_the_tag(clone: Path, tmp_path: Path) -> None:
    set_dist_version(clone, "0.1.2", "\nOLD = 12\n")
    git(clone, "tag", "unilab-dist-v0.1.2")
    set_dist_version(clone, "0.1.5", "\nNEW = 15\n")
    (wheel,) = compat.oldest_wheels(clone, "launch", tmp_path / "out")
    assert wheel.name == "unilab_dist-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as zf:
        init = zf.read("unilab_dist/__init__.py").decode()
    assert '__version__ = "0.1.2"' in init and "OLD = 12" in init and "NEW" not in init
