"""No private name crosses a file inside unilab_algos (STYLE.md: "a `_name` never crosses a
file"; import-linter checks modules, not names). A module may not import `_name` from another
unilab_algos module, nor read `obj._name` where `_name` is defined in another unilab_algos
module and not in its own (`self._x` / `cls._x` are always the module's own)."""

from __future__ import annotations

import ast
from pathlib import Path

import unilab_algos

ROOT = Path(unilab_algos.__file__).parent


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined(tree: ast.AST) -> set[str]:
    """Private names a module defines: functions, classes, methods, module and class
    variables, and attributes assigned on `self`/`cls`."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
        ):
            out.add(node.attr)
    return {n for n in out if _private(n)}


def _internal(node: ast.ImportFrom) -> bool:
    return node.level > 0 or (node.module or "").split(".")[0] == "unilab_algos"


def violations(sources: dict[str, str]) -> list[str]:
    """`file:line: what` for each private name that crosses a file among `sources`."""
    trees = {path: ast.parse(src) for path, src in sources.items()}
    defined = {path: _defined(tree) for path, tree in trees.items()}
    found = []
    for path, tree in trees.items():
        elsewhere = set().union(*(d for p, d in defined.items() if p != path)) - defined[path]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and _internal(node):
                for alias in node.names:
                    if _private(alias.name):
                        found.append((path, node.lineno, f"imports {alias.name}"))
            elif isinstance(node, ast.Attribute) and node.attr in elsewhere:
                owner = node.value
                if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                    found.append((path, node.lineno, f"reads .{node.attr}"))
    return [f"{path}:{line}: {what}" for path, line, what in sorted(found)]


def test_no_private_name_crosses_a_file_in_unilab_algos():
    sources = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in ROOT.rglob("*.py")}
    assert len(sources) > 20
    assert violations(sources) == []


def test_the_check_finds_both_kinds_of_crossing():
    sources = {
        "a.py": "def _helper():\n    pass\n\nclass A:\n    def _step(self):\n        self._x = 1\n",
        "b.py": (
            "from .a import _helper, A\n"
            "def run(a):\n"
            "    a._step()\n"
            "    a._x\n"
            "    self_like = a._unknown  # defined nowhere in the package: a third party's\n"
        ),
        "c.py": "class C:\n    def _step(self):\n        other._step()\n",  # its own name
    }
    assert violations(sources) == [
        "b.py:1: imports _helper",
        "b.py:3: reads ._step",
        "b.py:4: reads ._x",
    ]
