"""The import rules of every UniLab package, checked from the source (stdlib only).

    python3 tools/import_rules.py        # exit status 1 and one line per violation

1. No import cycle between the modules of one package. Every import counts, also one inside a
   function or under `TYPE_CHECKING`: a cycle that only a deferred import keeps working is
   still two modules that cannot be understood (or moved) one without the other. An import of
   a name from a package counts as an import of its `__init__`, unless the name is a submodule.
2. No private name crosses a file (STYLE.md): no module imports a `_name` from another UniLab
   module, nor reads `obj._name` where `_name` is defined in another UniLab module and not in
   its own (`self._x` / `cls._x` are always the module's own). import-linter, which the
   `layers` nox session also runs, checks the direction between packages and layers within
   them; it knows modules, not names, and reports no cycle outside a layers contract.

`KNOWN` lists the violations that are accepted for now, each with why; it may only shrink: an
entry that no longer occurs is reported too, so that it is removed with the fix.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [*sorted((ROOT / "packages").glob("*/src/unilab_*")), ROOT / "integration" / "src"]

KNOWN: dict[str, str] = {}


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def module_sources(src_dirs: Iterable[Path]) -> dict[str, str]:
    """Dotted module name -> source text of every `unilab_*` module under `src_dirs` (a package
    folder `unilab_x` or a `src` folder holding one); a package is named by its `__init__`."""
    out: dict[str, str] = {}
    for src in src_dirs:
        base = src.parent if src.name.startswith("unilab_") else src
        for path in sorted(src.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            if parts and parts[0].startswith("unilab_"):
                out[".".join(parts)] = path.read_text(encoding="utf-8")
    return out


def imported_modules(
    module: str, tree: ast.AST, modules: set[str], is_init: bool
) -> list[tuple[int, str, list[str]]]:
    """(line, module it names, imported names) of every import in `tree` that names a module
    in `modules` (the target is the submodule when a name is one, else the package)."""
    found: list[tuple[int, str, list[str]]] = []
    package = module.split(".") if is_init else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                for n in range(len(parts), 0, -1):
                    if ".".join(parts[:n]) in modules:
                        found.append((node.lineno, ".".join(parts[:n]), []))
                        break
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                head = package[: len(package) - node.level + 1]
                base = ".".join(head + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            plain = []
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:
                    found.append((node.lineno, sub, []))
                else:
                    plain.append(alias.name)
            if plain and base in modules:
                found.append((node.lineno, base, plain))
            elif plain and base.split(".")[0].startswith("unilab_"):
                found.append((node.lineno, base, plain))  # a name of a module not in `modules`
    return found


def _cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def _defined_private(tree: ast.AST) -> set[str]:
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
    return {n for n in out if is_private(n)}


def violations(sources: Mapping[str, str], inits: Iterable[str] = ()) -> list[str]:
    """One line per broken rule among `sources` (dotted module name -> source; `inits` names
    the modules that are a package's `__init__`), sorted: `cycle: a -> b` (the modules of one
    cycle, sorted) and `module:line: imports _x` / `module:line: reads ._x`."""
    inits = set(inits)
    trees = {m: ast.parse(src, filename=m) for m, src in sources.items()}
    modules = set(trees)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    found: list[str] = []
    defined = {m: _defined_private(t) for m, t in trees.items()}
    for m, tree in trees.items():
        top = m.split(".")[0]
        for line, target, names in imported_modules(m, tree, modules, m in inits):
            if target in modules and target.split(".")[0] == top and target != m:
                graph[m].add(target)
            found += [f"{m}:{line}: imports {n}" for n in names if is_private(n)]
        elsewhere = set().union(*(d for o, d in defined.items() if o != m)) - defined[m]
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in elsewhere:
                owner = node.value
                if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                    found.append(f"{m}:{node.lineno}: reads .{node.attr}")
    cycles = [f"cycle: {' -> '.join(c)}" for c in _cycles(graph)]
    return cycles + sorted(set(found), key=_line_order)


def _line_order(entry: str) -> tuple[str, int, str]:
    module, line, what = entry.split(":", 2)
    return module, int(line), what


def check(src_dirs: Iterable[Path] = SOURCES, known: Mapping[str, str] = KNOWN) -> list[str]:
    """The violations under `src_dirs` not in `known`, then the `known` entries that no longer
    occur (each to be removed)."""
    dirs = list(src_dirs)
    sources = module_sources(dirs)
    inits = {m for m in sources if _is_init(m, dirs)}
    found = violations(sources, inits)
    out = [v for v in found if v not in known]
    out += [
        f"{k}: listed in KNOWN but no longer occurs; remove it" for k in known if k not in found
    ]
    return out


def _is_init(module: str, src_dirs: list[Path]) -> bool:
    rel = Path(*module.split("."))
    for src in src_dirs:
        base = src.parent if src.name.startswith("unilab_") else src
        if (base / rel / "__init__.py").is_file():
            return True
    return False


def main() -> int:
    problems = check()
    for line in problems:
        print(line)
    if problems:
        print(
            f"{len(problems)} import rule violation(s): break the cycle (move the shared code "
            "down a layer) or make the name public (no leading underscore)",
            file=sys.stderr,
        )
        return 1
    print(f"import rules: no cycle, no private name crossing a file ({len(SOURCES)} packages)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
