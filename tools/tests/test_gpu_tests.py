"""tools/gpu_tests.py counts a real pytest JUnit report and renders its page."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import gpu_tests  # noqa: E402

CASES = """
import pytest

def test_ok():
    pass

def test_ok_too():
    pass

def test_bad():
    assert 1 == 2, "one is not two"

@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")

def test_error(broken):
    pass

@pytest.mark.skip(reason="needs two CUDA GPUs")
def test_skipped():
    pass
"""


def test_summary_counts_a_real_report_and_the_page_shows_it(tmp_path):
    (tmp_path / "test_cases.py").write_text(CASES)
    xml = tmp_path / "report.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", str(tmp_path), "-q", f"--junitxml={xml}"],
        cwd=tmp_path,
        capture_output=True,
        check=False,
    )
    res = gpu_tests.summarize(xml)
    assert (res["passed"], res["failed"], res["skipped"]) == (2, 2, 1)
    outcomes = {test.rsplit("::", 1)[1]: outcome for test, outcome, _ in res["notes"]}
    assert outcomes == {"test_bad": "failed", "test_error": "failed", "test_skipped": "skipped"}
    assert any("needs two CUDA GPUs" in message for *_, message in res["notes"])
    page = gpu_tests.render({"envs": res, "dist": dict(res, notes=[])}, {"commit": "abc123"})
    assert "- commit: abc123" in page
    assert "| envs | 2 | 2 | 1 |" in page and "| all | 4 | 4 | 2 |" in page
    assert "`test_cases::test_skipped` skipped: needs two CUDA GPUs" in page
