"""docs/tasks.md: its opening block runs as a user pastes it, and its table is the library."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from unilab_envs import mdp
from unilab_envs.terms.config import as_term_function
from unilab_envs.terms.signature import params_struct

DOC = Path(__file__).resolve().parents[3] / "docs" / "tasks.md"


def test_the_opening_block_runs_and_prints_the_new_terms(tmp_path):
    from unilab_envs.testing import mjlab_robot

    mjlab_robot("go1")  # skip (or fail) with the reason when no go1.xml is found
    block = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    script = tmp_path / "block.py"
    script.write_text(block)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [x for x in done.stdout.splitlines() if x.startswith(("reward term", "observation"))]
    reward, obs = (re.findall(r"-?\d+\.\d+(?:e-?\d+)?", x.split(":", 1)[1]) for x in lines)
    assert len(reward) == 4 and all(float(r) <= 0.0 for r in reward)  # weight -10 x squares
    assert len(obs) == 4 and all(0.1 < float(h) < 0.5 for h in obs)  # base heights (m)


def test_the_library_table_is_the_library():
    text = DOC.read_text().split("## The library", 1)[1]
    rows = re.findall(r"^\| `(\w+)` \| (\w+) \| ([^|]*) \|", text, re.M)
    table = {name: (kind, params.strip()) for name, kind, params in rows}
    code = {}
    for name, (kind, func) in mdp.LIBRARY.items():
        struct = params_struct(kind, name, as_term_function(func))
        code[name] = (kind, ", ".join(struct.vars) if struct is not None else "-")
    assert table == code
