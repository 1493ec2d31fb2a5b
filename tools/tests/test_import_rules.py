"""tools/import_rules.py: import cycles and private names crossing files, in every package."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import import_rules


def test_the_tree_keeps_the_rules():
    assert len(import_rules.module_sources(import_rules.SOURCES)) > 100
    assert import_rules.check() == []


def test_cycles_count_deferred_and_type_checking_imports():
    sources = {
        "unilab_x": "from unilab_x.a import A\n",
        "unilab_x.a": "from unilab_x.b import B\nA = 1\n",
        "unilab_x.b": "def f():\n    from unilab_x.c import C\n",
        "unilab_x.c": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n",
        "unilab_x.d": "from unilab_x import a\nimport unilab_x.b\n",  # a submodule: not __init__
        "unilab_y.e": "import unilab_x.d\n",  # another package: not part of unilab_x's cycles
    }
    got = import_rules.violations(sources, inits={"unilab_x"})
    assert got == ["cycle: unilab_x.a -> unilab_x.b -> unilab_x.c"]


def test_a_name_of_a_package_is_an_import_of_its_init():
    sources = {
        "unilab_x": "from unilab_x.a import A\n",
        "unilab_x.a": "def A():\n    from unilab_x import helper\n",
        "unilab_x.helper": "",
    }
    assert import_rules.violations(sources, inits={"unilab_x"}) == []  # helper is a module
    sources["unilab_x.a"] = "def A():\n    from unilab_x import B\n"
    assert import_rules.violations(sources, inits={"unilab_x"}) == ["cycle: unilab_x -> unilab_x.a"]


def test_private_names_crossing_files_are_found():
    sources = {
        "unilab_x.a": "def _helper():\n    pass\n\nclass A:\n    def _step(self):\n        self._x = 1\n",
        "unilab_x.b": (
            "from .a import _helper, A\n"
            "def run(a):\n"
            "    a._step()\n"
            "    a._x\n"
            "    a._unknown  # defined in no UniLab module: a third party's\n"
        ),
        "unilab_x.c": "class C:\n    def _step(self):\n        other._step()\n",  # its own name
        "unilab_y.d": "from unilab_x.a import _helper\nfrom torch import _C\n",
    }
    assert import_rules.violations(sources) == [
        "unilab_x.b:1: imports _helper",
        "unilab_x.b:3: reads ._step",
        "unilab_x.b:4: reads ._x",
        "unilab_y.d:1: imports _helper",
    ]


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    src = tmp_path / "src"
    for name, text in files.items():
        path = src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return src


def test_known_exceptions_must_still_occur(tmp_path):
    src = _package(
        tmp_path,
        {
            "unilab_x/__init__.py": "",
            "unilab_x/a.py": "from unilab_x.b import f\n",
            "unilab_x/b.py": "def f():\n    from unilab_x.a import g\n",
        },
    )
    cycle = "cycle: unilab_x.a -> unilab_x.b"
    assert import_rules.check([src], known={}) == [cycle]
    assert import_rules.check([src], known={cycle: "why"}) == []
    (src / "unilab_x" / "b.py").write_text("def f():\n    pass\n")
    assert import_rules.check([src], known={cycle: "why"}) == [
        f"{cycle}: listed in KNOWN but no longer occurs; remove it"
    ]
