"""Every ```python block of README.md, docs/**/*.md, packages/*/README.md and
integration/README.md runs as pasted, on the CPU, unless it is marked as a signature.

The convention (DEVELOPERS.md, "Code blocks in docs"): a ```python fence directly preceded by the
line `<!-- signature -->` shows an API's form, not an example, and is not run. The blocks of one
file run in order in one Python process and one namespace, as a reader pastes them one after the
other, in a scratch folder with no GPU visible. A failure names the file and the block's line.

Needs every UniLab package installed (the nox `integration` session runs it); the `tools`
session, which has no torch, leaves it out.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SIGNATURE = "<!-- signature -->"
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
# exec each block under its own name, so a traceback says which file and line failed; each
# block is also written to that (relative) path in the scratch folder, as a reader's pasted
# script would be a file, so that code which reads its own source (warp's `@wp.func`) finds it
DRIVER = """
import json, os, sys
ns = {"__name__": "__main__"}
for name, code in json.loads(sys.stdin.read()):
    os.makedirs(os.path.dirname(name) or ".", exist_ok=True)
    with open(name, "w") as f:
        f.write(code)
    exec(compile(code, name, "exec"), ns)
"""


def doc_files(root: Path = ROOT) -> list[Path]:
    """The Markdown files whose python blocks a user may paste."""
    files = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    files += [*sorted(root.glob("packages/*/README.md")), root / "integration" / "README.md"]
    return [f for f in files if f.is_file()]


def python_blocks(text: str) -> list[tuple[int, str, bool]]:
    """(line of the fence, code, is_signature) of every ```python block in `text`."""
    out = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        out.append((text.count("\n", 0, m.start()) + 1, m.group(1), before == SIGNATURE))
    return out


def runnable(path: Path) -> list[tuple[str, str]]:
    """(`file:line`, code) of the blocks of `path` that must run."""
    rel = path.relative_to(ROOT)
    return [
        (f"{rel}:{line}", code) for line, code, sig in python_blocks(path.read_text()) if not sig
    ]


def run_blocks(blocks: list[tuple[str, str]], cwd: Path, extra_env: dict | None = None):
    import json

    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1", **(extra_env or {})}
    return subprocess.run(
        [sys.executable, "-c", DRIVER],
        input=json.dumps(blocks),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_blocks_are_found_and_signatures_left_out():
    text = (
        "intro\n```python\nx = 1\n```\n\n<!-- signature -->\n```python\nf(a, *, b) -> C\n```\n"
        "```text\nnot python\n```\n```python\nprint(x)\n```\n"
    )
    assert python_blocks(text) == [
        (2, "x = 1\n", False),
        (7, "f(a, *, b) -> C\n", True),
        (13, "print(x)\n", False),
    ]


def test_a_failing_block_is_named_by_file_and_line(tmp_path):
    proc = run_blocks([("a.md:2", "x = 1\n"), ("a.md:9", "print(x)\nundefined_name\n")], tmp_path)
    assert proc.returncode == 1 and proc.stdout == "1\n"  # one namespace: x carries over
    assert 'File "a.md:9", line 2' in proc.stderr and "NameError" in proc.stderr


FILES = [f for f in doc_files() if runnable(f)]


@pytest.mark.parametrize("path", FILES, ids=[str(f.relative_to(ROOT)) for f in FILES])
def test_python_blocks_run_as_pasted(path, tmp_path):
    from unilab_envs.testing import OFFSCREEN_GL_FIX, offscreen_gl_backend

    blocks = runnable(path)
    extra = {}
    if any("Renderer(" in code for _, code in blocks):
        gl = offscreen_gl_backend()
        if gl is None:
            pytest.skip(OFFSCREEN_GL_FIX)
        extra["MUJOCO_GL"] = gl
    proc = run_blocks(blocks, tmp_path, extra)
    assert proc.returncode == 0, (
        f"{path.relative_to(ROOT)}: a python block failed (fix it, or put {SIGNATURE} on the "
        f"line before its fence if it shows a signature):\n{proc.stderr[-3000:]}"
    )


def test_the_docs_map_links_every_page():
    index = (ROOT / "docs" / "README.md").read_text()
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.name != "README.md")
    missing = [p for p in pages if f"({p})" not in index]
    assert not missing, f"docs/README.md does not link {missing}"
    assert "(benchmarks/README.md)" in index
