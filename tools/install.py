#!/usr/bin/env python3
"""Install UniLab from this clone into a virtual environment, every package editable.

    python3 tools/install.py [VENV] [--package NAME ...] [--extra NAME ...] [--cpu | --gpu]

VENV defaults to `.venv` in the clone; it is created with the Python running this script
(3.11 or newer) when it does not exist, and reused when it does. Without `--package` every
package is installed (the six distributions and the `unilab` command); `--package envs`
installs `unilab-envs` and the UniLab packages it declares, nothing else. Packages go in
dependency order, each from its folder in the clone (`pip install -e`), in one pip command, so
pip never looks for a `unilab-*` on the package index. `--extra video` adds that extra to every
installed package that declares it.

PyTorch. On a machine without `nvidia-smi` (or with `--cpu`) the install is constrained by
constraints/cpu.txt, which pins torch to 2.13.0, and pip must take that release's CPU build
`2.13.0+cpu`, not PyPI's CUDA build of several GB. pip prefers `2.13.0+cpu` wherever it sees
it (a local version label sorts above the plain release), so the script first asks pip (a dry
run, metadata only) which torch it would take; unless that is a `+cpu` build already (a wheel
in pip's own configuration, as on UniLab's CI machines), it adds PyTorch's CPU wheel index
(TORCH_CPU_INDEX) with `--extra-index-url`. With a GPU (or `--gpu`) nothing is pinned and pip
takes PyPI's torch, a CUDA build.

Standard library only. `--dry-run` prints the commands without running them.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
CONSTRAINTS = Path("constraints") / "cpu.txt"
LAYERS = ("dist", "storage", "algos", "envs", "launch", "integration")  # docs/architecture.md

if sys.version_info < (3, 11):  # noqa: UP036 (tomllib, and the packages' requires-python)
    sys.exit(f"tools/install.py needs Python 3.11 or newer, this is {sys.version.split()[0]}")

import tomllib  # noqa: E402 (after the version check, which names the problem)


def package_dirs(root: Path) -> dict[str, Path]:
    """{short name: folder} of every package of the clone (`dist` -> packages/unilab-dist)."""
    found = {p.name.removeprefix("unilab-"): p for p in (root / "packages").glob("unilab-*")}
    found["integration"] = root / "integration"
    names = sorted(found, key=lambda n: (LAYERS.index(n) if n in LAYERS else len(LAYERS), n))
    return {n: found[n] for n in names if (found[n] / "pyproject.toml").is_file()}


def project_table(path: Path) -> dict:
    with open(path / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def requirement_name(requirement: str) -> str:
    name = requirement.split(";")[0].split("[")[0]
    for sep in "<>=!~ ":
        name = name.split(sep)[0]
    return name.strip()


def install_order(root: Path, wanted: Sequence[str] | None = None) -> list[str]:
    """Short names of `wanted` (default: all packages) and the UniLab packages they declare,
    transitively, each after the ones it depends on."""
    dirs = package_dirs(root)
    unknown = [name for name in wanted or () if name not in dirs]
    if unknown:
        raise SystemExit(f"unknown package(s) {unknown}; known: {', '.join(dirs)}")
    deps = {
        name: [
            short
            for req in project_table(path).get("dependencies", [])
            if (short := requirement_name(req).removeprefix("unilab-")) in dirs
            and requirement_name(req).startswith("unilab-")
        ]
        for name, path in dirs.items()
    }
    order: list[str] = []

    def visit(name: str) -> None:
        if name not in order:
            for dep in deps[name]:
                visit(dep)
            order.append(name)

    for name in wanted or list(dirs):
        visit(name)
    return order


# Approximate download of the large third-party distributions, in MB (wheels for CPython 3.11 on
# x86-64 Linux with their own dependencies); everything else together stays under SMALL_MB.
DOWNLOAD_MB = {
    "torch": 210,  # the CPU build with sympy, networkx, jinja2
    "warp-lang": 150,
    "numpy": 17,
    "onnx": 10,
    "onnxruntime": 17,
    "tensorboard": 20,  # with grpcio and protobuf
    "mujoco": 7,
    "mujoco-warp": 3,
    "wandb": 25,
    "imageio-ffmpeg": 30,
    "viser": 15,
}
TORCH_CUDA_MB = 3500  # PyPI's torch with its NVIDIA libraries
SMALL_MB = 10


def third_party_requirements(root: Path, names: Sequence[str], extras: Sequence[str]) -> set[str]:
    """Distribution names (lowercase) that the packages `names` declare, with their `extras`,
    other than UniLab's own."""
    dirs = package_dirs(root)
    found: set[str] = set()
    for name in names:
        meta = project_table(dirs[name])
        reqs = list(meta.get("dependencies", []))
        for extra in extras:
            reqs += meta.get("optional-dependencies", {}).get(extra, [])
        found |= {
            requirement_name(r).lower()
            for r in reqs
            if not requirement_name(r).startswith("unilab-")
        }
    return found


def download_estimate(
    root: Path, names: Sequence[str], extras: Sequence[str], *, gpu: bool
) -> tuple[int, list[str]]:
    """(MB, the large distributions in it, largest first) of a first install of `names`."""
    reqs = third_party_requirements(root, names, extras)
    sizes = {name: DOWNLOAD_MB[name] for name in reqs if name in DOWNLOAD_MB}
    if "torch" in sizes and gpu:
        sizes["torch"] = TORCH_CUDA_MB
    heavy = sorted((n for n in sizes if sizes[n] >= 10), key=lambda n: (-sizes[n], n))
    return sum(sizes.values()) + SMALL_MB, heavy


def _size_text(mb: int) -> str:
    return f"{mb / 1000:.1f} GB" if mb >= 1000 else f"{(mb + 5) // 10 * 10} MB"


def has_nvidia_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def probe_torch_command(python: Path, root: Path) -> list[str]:
    """The pip dry run that reports which torch the constrained install would take."""
    return [
        str(python), "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps",
        "--quiet", "--report", "-", "-c", str(root / CONSTRAINTS), "torch",
    ]  # fmt: skip


def torch_version_of_report(text: str) -> str | None:
    """The torch version in a `pip install --report` JSON, or None."""
    for item in json.loads(text or "{}").get("install", []):
        meta = item.get("metadata", {})
        if meta.get("name", "").lower() == "torch":
            return meta.get("version")
    return None


def venv_command(venv: Path, python: str = sys.executable) -> list[str] | None:
    """The command that creates `venv`, or None when it exists."""
    return None if venv_python(venv).exists() else [python, "-m", "venv", str(venv)]


def pip_command(
    root: Path,
    venv: Path,
    *,
    packages: Sequence[str] | None = None,
    extras: Sequence[str] = (),
    gpu: bool,
    cpu_torch_found: bool,
) -> list[str]:
    """One `pip install` of the packages, editable, in dependency order. Without a GPU it
    carries constraints/cpu.txt and, unless pip already sees torch's CPU build
    (`cpu_torch_found`), PyTorch's CPU wheel index."""
    pip = [str(venv_python(venv)), "-m", "pip", "install"]
    if not gpu:
        pip += ["-c", str(root / CONSTRAINTS)]
        if not cpu_torch_found:
            pip += ["--extra-index-url", TORCH_CPU_INDEX]
    dirs = package_dirs(root)
    for name in install_order(root, packages):
        declared = project_table(dirs[name]).get("optional-dependencies", {})
        chosen = [extra for extra in extras if extra in declared]
        suffix = f"[{','.join(chosen)}]" if chosen else ""
        pip += ["-e", f"{dirs[name]}{suffix}"]
    return pip


def cpu_torch_found(venv: Path, root: Path) -> bool:
    """Would pip, constrained by constraints/cpu.txt, take a `+cpu` torch without extra index?"""
    out = subprocess.run(
        probe_torch_command(venv_python(venv), root), capture_output=True, text=True
    )
    if out.returncode != 0:
        return False
    version = torch_version_of_report(out.stdout)
    return version is not None and "+cpu" in version


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _run(command: list[str], dry_run: bool) -> None:
    print(("" if dry_run else "+ ") + shlex.join(command), flush=True)
    if not dry_run and subprocess.call(command) != 0:
        raise SystemExit(f"tools/install.py: failed: {shlex.join(command)}")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tools/install.py", description=__doc__.split("\n\n")[0])
    p.add_argument("venv", nargs="?", default=str(ROOT / ".venv"), help="default: .venv")
    p.add_argument("--package", action="append", help="only this package and its siblings")
    p.add_argument("--extra", action="append", default=[], help="extra of the packages")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--cpu", action="store_true", help="CPU torch even with nvidia-smi")
    which.add_argument("--gpu", action="store_true", help="PyPI's torch even without nvidia-smi")
    p.add_argument("--dry-run", action="store_true", help="print the commands only")
    args = p.parse_args(argv)
    venv = Path(args.venv).absolute()
    gpu = args.gpu or (not args.cpu and has_nvidia_gpu())
    names = install_order(ROOT, args.package)
    torch_kind = "PyPI's torch (CUDA)" if gpu else "torch 2.13.0's CPU build"
    size, heavy = download_estimate(ROOT, names, args.extra, gpu=gpu)
    print(
        f"installing {', '.join('unilab-' + n for n in names)} (editable, from {_shown(ROOT)}) "
        f"with {torch_kind} into {_shown(venv)}; a first install downloads about "
        f"{_size_text(size)} ({', '.join(heavy)}; pip's cache keeps it for the next one)",
        flush=True,
    )
    start = time.monotonic()
    create = venv_command(venv)
    if create is not None:
        _run(create, args.dry_run)
    if args.dry_run and not gpu:
        print(f"# (--extra-index-url {TORCH_CPU_INDEX} only if pip sees no +cpu torch)")
    found = gpu or (not args.dry_run and cpu_torch_found(venv, ROOT))
    pip = pip_command(
        ROOT, venv, packages=args.package, extras=args.extra, gpu=gpu, cpu_torch_found=found
    )
    _run(pip, args.dry_run)
    if args.dry_run:
        return 0
    print(f"installed in {time.monotonic() - start:.0f} s into {_shown(venv)}")
    print(f"activate it:  . {_shown(venv_python(venv).parent / 'activate')}")
    if "integration" in names:
        print("then:         unilab list")
    return 0


if __name__ == "__main__":
    sys.exit(main())
