"""Resolving the function a launch runs, and making its module importable in the workers."""

from __future__ import annotations

import importlib
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["module_root", "resolve_target"]


def resolve_target(target: str | Callable[..., Any]) -> Callable[..., Any]:
    """Return the callable named by `"package.module:function"` (or `target` if callable).

    The import happens in the launcher, before any worker starts, so a typo fails at once.
    Raises ImportError (module missing or failing to import), ValueError (malformed string,
    missing or non-callable attribute) or TypeError (neither a string nor a callable).
    """
    if callable(target):
        return target
    if not isinstance(target, str):
        raise TypeError(f"target must be a callable or 'module:function', got {target!r}")
    module_name, sep, attr_path = target.partition(":")
    if not sep or not module_name or not attr_path:
        raise ValueError(f"target {target!r} must look like 'package.module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(f"cannot import target {target!r}: {exc}") from exc
    except Exception as exc:  # the module itself raised while importing
        raise ImportError(
            f"cannot import target {target!r}: importing {module_name!r} raised "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    obj: Any = module
    for part in attr_path.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"cannot import target {target!r}: {module_name!r} has no {part!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"target {target!r} is a {type(obj).__name__}, not a function")
    return obj


def module_root(fn: Callable[..., Any]) -> Path | None:
    """The sys.path folder from which `fn`'s module was imported, if it is not an installed one.

    Workers unpickle `fn` by reference (module + name), so a module imported from a folder that
    the launcher added to sys.path (a script's folder, pytest's test folder, the CLI's working
    directory) must be on the workers' PYTHONPATH too. Returns None for `__main__` (pickled by
    value), for the standard library and installed modules (site-packages) and for modules without a file.
    """
    name = getattr(fn, "__module__", None)
    if not name or name == "__main__":
        return None
    module = sys.modules.get(name)
    file = getattr(module, "__file__", None)
    if module is None or file is None:
        return None
    path = Path(file).resolve()
    root = path.parent
    if path.name == "__init__.py":
        root = root.parent
    for _ in range(name.count(".")):
        root = root.parent
    if "site-packages" in root.parts or "dist-packages" in root.parts:
        return None
    paths = sysconfig.get_paths()
    standard = {Path(paths[k]).resolve() for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return None if root in standard else root
