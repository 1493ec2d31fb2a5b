"""tools/results_table.py: README's results table and the benchmark pages' histories are
written from docs/benchmarks/results.json, and a claim must name what it compares."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import results_table as rt  # noqa: E402


def test_readme_and_the_pages_show_what_results_json_holds():
    stale = [str(p.relative_to(ROOT)) for p, text in rt.render().items() if p.read_text() != text]
    assert not stale, f"out of date: {stale}; run python3 tools/results_table.py"


def claim(**over) -> dict:
    c = {
        "id": "a",
        "what": "Go1 flat task, UniLab over MJLab",
        "value": [2.25, 3.2],
        "unit": "x",
        "gpu": "1x NVIDIA H200",
        "date": "2026-12-01",
        "commit": "abc1234",
        "versions": {
            "unilab": {"torch": "2.11", "mujoco_warp": "4.0.0"},
            "mjlab": {"torch": "2.11", "mujoco_warp": "3.11.0"},
        },
        "command": "unilab train go1-velocity-flat --gpus 0",
        "data": "data/a.json",
        "page": "p.md",
        "readme": True,
    }
    return {**c, **over}


def tree(tmp_path: Path, claims: list[dict]) -> Path:
    bench = tmp_path / "docs" / "benchmarks"
    (bench / "data").mkdir(parents=True)
    (bench / "data" / "a.json").write_text("{}")
    (bench / "results.json").write_text(json.dumps({"claims": claims}))
    (bench / "p.md").write_text("# P\n\n<!-- history:begin -->\nold\n<!-- history:end -->\n")
    (tmp_path / "README.md").write_text("x\n<!-- results:begin -->\n<!-- results:end -->\ny\n")
    return tmp_path


def test_tables_are_written_between_the_markers(tmp_path):
    root = tree(tmp_path, [claim(), claim(id="b", value=686957, unit="env-steps/s", readme=False)])
    out = rt.render(root)
    readme = out[root / "README.md"]
    assert readme.startswith("x\n<!-- results:begin -->\n| result |") and readme.endswith("y\n")
    assert "**2.25-3.20x**" in readme and "UniLab 4.0.0, MJLab 3.11.0" in readme
    assert "686,957" not in readme  # readme: false stays on its page only
    page = out[root / "docs" / "benchmarks" / "p.md"]
    assert "old" not in page and "**686,957 env-steps/s**" in page and "`b`" in page


def test_a_comparison_with_mjlab_must_name_both_engines(tmp_path):
    bad = claim(versions={"unilab": {"mujoco_warp": "4.0.0"}, "mjlab": {"torch": "2.11"}})
    with pytest.raises(SystemExit, match="mujoco_warp for UniLab and for MJLab"):
        rt.render(tree(tmp_path, [bad]))


def test_missing_fields_markers_and_data_are_named(tmp_path):
    c = claim()
    del c["commit"]
    with pytest.raises(SystemExit, match=r"claim 'a' lacks \['commit'\]"):
        rt.render(tree(tmp_path / "1", [c]))
    root = tree(tmp_path / "2", [claim(data="data/gone.json")])
    with pytest.raises(SystemExit, match=r"data file docs/benchmarks/data/gone\.json missing"):
        rt.render(root)
    root = tree(tmp_path / "3", [claim()])
    (root / "README.md").write_text("no markers\n")
    with pytest.raises(SystemExit, match=r"README\.md: no <!-- results:begin -->"):
        rt.render(root)
