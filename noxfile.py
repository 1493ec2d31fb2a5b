"""Checks of the UniLab monorepo, run by `python3 -m nox` (README.md, .ci/run).

Sessions:
  lint              ruff check and ruff format --check over the whole tree
  layers            the dependency direction between packages and layers (import-linter, root
                    pyproject); no import cycle, no private name crossing a file in any
                    package (tools/import_rules.py)
  tools             tests of the repository tools (tools/tests)
  tests(<pkg>)      one package in a fresh venv with only its declared dependencies, the check
                    that no undeclared unilab package is importable there, then its tests
  dist_rsl_rl       unilab_dist.contrib.rsl_rl with RSL-RL 5.4.2 (docs/dist-in-rsl-rl.md's script)
  integration       the integration package's tests with every package installed, and wandb
                    (its W&B sink test runs: UNILAB_REQUIRE_WANDB=1)
  build(<pkg>)      wheel + sdist of one package (LICENSE inside, twine check --strict), the wheel
                    installed into an empty venv, imported
  compat            the libraries' fast tests against the oldest sibling versions their ranges
                    allow (tools/compat.py) and tensordict at its floor
  install           README's install command (tools/install.py) into a fresh venv, then
                    `unilab list` and `unilab --help` there
  demo              README's first command: that install, then its training command
                    (cartpole-balance, PPO, 2 CPU workers, --until-solved)
  gpu               every gpu/multigpu test in the current environment, on the GPU machine;
                    writes docs/benchmarks/gpu-tests.md (tools/gpu_tests.py)

Each session deletes its virtual environment when it ends, so that a full run needs the disk of
one environment at a time (about 1.6 GB) rather than of all of them; `nox -r` (reuse) or
UNILAB_NOX_KEEP_VENVS=1 keeps them.

On a machine without an NVIDIA GPU every install is constrained by constraints/cpu.txt, which
pins torch to the CPU build 2.13.0 (DEVELOPERS.md says why). The packages' own metadata keeps
honest, open ranges.
"""

from __future__ import annotations

import functools
import os
import shutil
import tarfile
import tomllib
import zipfile
from pathlib import Path

import nox

ROOT = Path(__file__).parent
nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = False
nox.options.error_on_missing_interpreters = True
nox.options.sessions = [
    "lint", "layers", "tools", "install", "tests", "dist_rsl_rl", "integration", "build", "compat",
]  # fmt: skip

PACKAGES: dict[str, Path] = {
    "dist": ROOT / "packages" / "unilab-dist",
    "storage": ROOT / "packages" / "unilab-storage",
    "algos": ROOT / "packages" / "unilab-algos",
    "envs": ROOT / "packages" / "unilab-envs",
    "launch": ROOT / "packages" / "unilab-launch",
    "integration": ROOT / "integration",
}
LIBRARIES = [name for name in PACKAGES if name != "integration"]

# RSL-RL 5.4.2 is a test oracle only. Its metadata asks for torchvision, which would make pip
# replace the pinned CPU torch by a CUDA build, so it is installed without dependencies plus the
# light ones it really imports.
RSL_RL_ORACLE = ["rsl-rl-lib==5.4.2"]
RSL_RL_LIGHT_DEPS = ["numpy", "tensordict>=0.15", "GitPython", "onnx", "onnxscript", "tensorboard"]
USES_RSL_RL = {"storage", "algos", "envs", "integration"}  # unilab-dist's: `dist_rsl_rl`
# MJLab 1.6.0 is test data only: its wheel carries the Go1/G1 MJCF files that
# `unilab_envs.tasks.robots.find_mjcf` finds without importing mjlab (go1-velocity-flat, the
# parity tests). Never a dependency or an extra: its own dependencies pin mujoco and
# mujoco-warp versions of their own, so it is installed without them, and the sessions set
# UNILAB_REQUIRE_MJLAB=1 so that those tests fail rather than skip if it goes missing.
MJLAB_ROBOT_FILES = ["mjlab==1.6.0"]
USES_MJLAB = {"envs", "integration"}

PYTEST_ARGS = ["-m", "not gpu and not multigpu", "-ra", "-q"]


def has_nvidia_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None and os.environ.get("UNILAB_FORCE_CPU") != "1"


def constraints() -> list[str]:
    """pip arguments that pin torch to the CPU build on machines without a GPU."""
    if has_nvidia_gpu():
        return []
    return ["-c", str(ROOT / "constraints" / "cpu.txt")]


def project(name: str) -> dict:
    with open(PACKAGES[name] / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def unilab_requirements(name: str, extras: tuple[str, ...] = ("test",)) -> set[str]:
    """Short names of the unilab packages `name` declares, transitively (extras of `name` only)."""
    found: set[str] = set()
    todo = [(name, extras)]
    while todo:
        current, current_extras = todo.pop()
        meta = project(current)
        reqs = list(meta.get("dependencies", []))
        for extra in current_extras:
            reqs += meta.get("optional-dependencies", {}).get(extra, [])
        for req in reqs:
            dist = req.split(";")[0].split("[")[0]
            for sep in "<>=!~ ":
                dist = dist.split(sep)[0]
            if dist.startswith("unilab-"):
                short = dist.removeprefix("unilab-")
                if short not in found:
                    found.add(short)
                    todo.append((short, ()))
    return found


def import_name(name: str) -> str:
    return f"unilab_{name}"


def install_package(session: nox.Session, name: str, extra: str = "test") -> None:
    siblings = sorted(unilab_requirements(name, (extra,) if extra else ()))
    args = [*constraints()]
    args += [str(PACKAGES[s]) for s in siblings]
    args.append(f"{PACKAGES[name]}[{extra}]" if extra else str(PACKAGES[name]))
    session.install(*args)
    if name in USES_RSL_RL and extra == "test":
        session.install(*constraints(), *RSL_RL_LIGHT_DEPS)
        session.install("--no-deps", *RSL_RL_ORACLE)
    if name in USES_MJLAB and extra == "test":
        session.install("--no-deps", *MJLAB_ROBOT_FILES)
        session.env["UNILAB_REQUIRE_MJLAB"] = "1"


def pruned(func):
    """Delete the session's virtual environment when the session ends, pass or fail.

    A full run creates a dozen environments of about 1.1-1.6 GB each (torch, warp, mujoco); kept,
    they fill small CI disks. Kept when the run reuses environments (`nox -r`) or when
    UNILAB_NOX_KEEP_VENVS=1, to look inside one after a failure.
    """

    @functools.wraps(func)
    def wrapper(session: nox.Session, *args, **kwargs) -> None:
        try:
            func(session, *args, **kwargs)
        finally:
            venv = session.virtualenv
            keep = (
                getattr(venv, "reuse_existing", False)
                or os.environ.get("UNILAB_NOX_KEEP_VENVS") == "1"
            )
            location = getattr(venv, "location", None)
            if not keep and location and Path(location).resolve().is_relative_to(ROOT.resolve()):
                shutil.rmtree(location, ignore_errors=True)

    return wrapper


@nox.session
@pruned
def lint(session: nox.Session) -> None:
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
@pruned
def layers(session: nox.Session) -> None:
    """Fail if any package imports a sibling that docs/architecture.md forbids it to import, or
    a module of a layer above its own (import-linter, root pyproject); or if any package has an
    import cycle or a private name that crosses a file (tools/import_rules.py)."""
    session.install("import-linter>=2.0")
    session.install("--no-deps", *(str(path) for path in PACKAGES.values()))
    session.run("lint-imports", "--no-cache", str(ROOT / "pyproject.toml"))
    session.run("python", str(ROOT / "tools" / "import_rules.py"))


BENCH_RUN = ROOT / "tools" / "tests" / "test_bench_ppo_e2e_run.py"
# trains a rough task on 2 CPU ranks: without torch (the tools session) those tests skip
CURRICULUM_RANKS = ROOT / "tools" / "tests" / "test_curriculum_ranks.py"
# runs every python block of the docs: needs every package, so it runs in `integration`
DOC_SNIPPETS = ROOT / "tools" / "tests" / "test_doc_snippets.py"


@nox.session
@pruned
def tools(session: nox.Session) -> None:
    # numpy: the MJLab parity fixtures; mujoco: bench_engine's workload
    session.install("pytest>=8", "numpy", "mujoco")
    session.install("build>=1.2", "twine>=6")  # tools/release.py builds and checks in a clone
    session.env["UNILAB_REQUIRE_BUILD"] = "1"  # so those tests fail rather than skip
    # BENCH_RUN trains through the product: it runs in `integration`, which has the stack
    session.run(
        "pytest",
        str(ROOT / "tools" / "tests"),
        "-q",
        f"--ignore={BENCH_RUN}",
        f"--ignore={DOC_SNIPPETS}",
    )


@nox.session
@nox.parametrize("package", LIBRARIES, ids=LIBRARIES)
@pruned
def tests(session: nox.Session, package: str) -> None:
    """One package, alone, in a fresh virtual environment with only what it declares."""
    install_package(session, package)
    allowed = unilab_requirements(package) | {package}
    forbidden = [import_name(n) for n in PACKAGES if n not in allowed]
    session.run(
        "python",
        "-c",
        "import importlib.util, sys\n"
        f"bad = [m for m in {forbidden!r} if importlib.util.find_spec(m) is not None]\n"
        "sys.exit(f'undeclared unilab packages importable: {bad}' if bad else 0)",
    )
    session.run("pytest", str(PACKAGES[package] / "tests"), *PYTEST_ARGS, *session.posargs)


@nox.session
@pruned
def dist_rsl_rl(session: nox.Session) -> None:
    """unilab_dist.contrib.rsl_rl: RSL-RL 5.4.2's OnPolicyRunner on 2 gloo ranks, with
    unilab-dist and RSL-RL alone (installed without its dependencies, as on a CPU machine)."""
    install_package(session, "dist", "test")
    session.install(*constraints(), *RSL_RL_LIGHT_DEPS)
    session.install("--no-deps", *RSL_RL_ORACLE)
    session.env["UNILAB_REQUIRE_RSL_RL"] = "1"  # the tests fail rather than skip without it
    tests = PACKAGES["dist"] / "tests" / "test_dist_rsl_rl.py"
    session.run("pytest", str(tests), *PYTEST_ARGS, *session.posargs)


@nox.session
@pruned
def integration(session: nox.Session) -> None:
    # The test extra brings viser and playwright for the web viewer's browser test, which
    # drives the system's Chromium (.ci/run installs it; playwright downloads no browser).
    install_package(session, "integration")
    # the W&B sink's test reads back an offline run: here it must run, not skip
    session.install(*constraints(), *project("integration")["optional-dependencies"]["wandb"])
    session.env["UNILAB_REQUIRE_WANDB"] = "1"
    session.run("pytest", str(PACKAGES["integration"] / "tests"), *PYTEST_ARGS, *session.posargs)
    session.run(
        "pytest", str(BENCH_RUN), str(CURRICULUM_RANKS), str(DOC_SNIPPETS), "-q"
    )  # benchmarks driving train() and the docs' code blocks (tools session: no torch)


@nox.session
@nox.parametrize("package", list(PACKAGES), ids=list(PACKAGES))
@pruned
def build(session: nox.Session, package: str) -> None:
    """Build one package's wheel and sdist alone, install the wheel into an empty venv, import."""
    session.install("build>=1.2")
    out = Path(session.create_tmp()) / "dist"
    shutil.rmtree(out, ignore_errors=True)
    names = [*sorted(unilab_requirements(package, ())), package]
    for name in names:
        session.run("python", "-m", "build", "--outdir", str(out / name), str(PACKAGES[name]))
    wheels = [str(next((out / name).glob("*.whl"))) for name in names]
    sdists = list((out / package).glob("*.tar.gz"))
    if not sdists:
        session.error(f"no sdist was built for {package}")
    with zipfile.ZipFile(wheels[-1]) as wheel, tarfile.open(sdists[0]) as sdist:
        if not any(n.endswith(".dist-info/licenses/LICENSE") for n in wheel.namelist()):
            session.error(f"{wheels[-1]} has no LICENSE")
        if not any(n.endswith("/LICENSE") for n in sdist.getnames()):
            session.error(f"{sdists[0]} has no LICENSE")
    session.install("twine>=6")
    session.run("python", "-m", "twine", "check", "--strict", wheels[-1], str(sdists[0]))
    venv = Path(session.create_tmp()) / "empty-venv"
    shutil.rmtree(venv, ignore_errors=True)
    session.run("python", "-m", "venv", str(venv))
    python = str(venv / "bin" / "python")
    session.run(
        python, "-m", "pip", "install", "-q", *constraints(), *wheels, external=True, env=OWN_ENV
    )
    session.run(
        python,
        "-c",
        f"import {import_name(package)} as m; print(m.__name__, m.__version__)",
        external=True,
    )


COMPAT_PACKAGES = ["storage", "algos", "launch"]
"""`compat` runs these: dist and envs declare no sibling (tensordict's floor is tested through
storage and algos); integration's tests take too long for CI (DEVELOPERS.md)."""
FLOORS = ["tensordict"]  # third-party floors installed exactly; torch's: DEVELOPERS.md


def floor_requirement(dist: str) -> str:
    """`dist==<floor>` from the highest `>=` any package declares for `dist` (0.15 -> 0.15.0)."""
    floors = []
    for name in PACKAGES:
        meta = project(name)
        reqs = [*meta.get("dependencies", [])]
        for extra in meta.get("optional-dependencies", {}).values():
            reqs += extra
        for req in reqs:
            spec = req.split(";")[0]
            if spec.startswith(dist) and ">=" in spec:
                bound = spec.split(">=")[1].split(",")[0].strip()
                floors.append(tuple(int(x) for x in bound.split(".")))
    floor = max(floors)
    return f"{dist}=={'.'.join(map(str, floor + (0,) * (3 - len(floor))))}"


@nox.session
@pruned
def compat(session: nox.Session) -> None:
    """Each of COMPAT_PACKAGES' fast tests (not `slow`) against the oldest sibling versions its
    ranges allow (tools/compat.py: the oldest release tag inside each range, else the work tree)
    and tensordict at its floor. The newest siblings are what `tests(<pkg>)` runs.
    `nox -s compat -- algos` runs one."""
    session.install("build>=1.2")
    floors = [floor_requirement(dist) for dist in FLOORS]
    for name in session.posargs or COMPAT_PACKAGES:
        install_package(session, name)
        out = Path(session.create_tmp()) / "oldest" / name
        shutil.rmtree(out, ignore_errors=True)
        session.run("python", str(ROOT / "tools" / "compat.py"), name, "--outdir", str(out))
        wheels = sorted(str(w) for w in out.glob("*.whl"))
        session.install("--no-deps", "--force-reinstall", *constraints(), *wheels, *floors)
        shown = [*FLOORS, *(f"unilab-{sibling}" for sibling in unilab_requirements(name))]
        script = f"import importlib.metadata as m; print({{d: m.version(d) for d in {shown!r}}})"
        session.run("python", "-c", script)  # the versions the tests run against
        tests = PACKAGES[name] / "tests"
        session.run("pytest", str(tests), "-m", "not gpu and not multigpu and not slow", "-q", "-x")


@nox.session(python=False)
def gpu(session: nox.Session) -> None:
    """Every `gpu`/`multigpu` test, in the current environment (the GPU machine has no network
    for fresh venvs); writes docs/benchmarks/gpu-tests.md. Not a default session."""
    session.run("python3", str(ROOT / "tools" / "gpu_tests.py"), *session.posargs)


INSTALL = ["python3", str(ROOT / "tools" / "install.py")]
"""README's install command (tools/install.py); the sessions below give it a venv path."""
OWN_ENV = {"PYTHONPATH": None}  # nothing from the caller's environment on the fresh venv's path


def fresh_venv(session: nox.Session) -> Path:
    """An empty path for a venv under the session's tmp dir (removed first)."""
    venv = Path(session.create_tmp()) / "venv"
    shutil.rmtree(venv, ignore_errors=True)
    return venv


def remove_venv(venv: Path) -> None:
    if os.environ.get("UNILAB_NOX_KEEP_VENVS") != "1":
        shutil.rmtree(venv, ignore_errors=True)


@nox.session(python=False)
def install(session: nox.Session) -> None:
    """README's install command into a fresh venv, then `unilab list` and `unilab --help` there.

    pip's cache is used as usual, and on a machine without a GPU the install is constrained to
    torch's CPU build like every other session, so it downloads no CUDA torch."""
    venv = fresh_venv(session)
    try:
        session.run(*INSTALL, str(venv), external=True, env=OWN_ENV)
        session.run(str(venv / "bin" / "unilab"), "list", external=True, env=OWN_ENV)
        session.run(str(venv / "bin" / "unilab"), "--help", external=True, silent=True, env=OWN_ENV)
        session.run(
            str(venv / "bin" / "python"),
            "-c",
            "import torch, sys; v = torch.__version__; print('torch', v); "
            f"sys.exit(0 if {has_nvidia_gpu()!r} or '+cpu' in v else 'not the CPU torch')",
            external=True,
            env=OWN_ENV,
        )
    finally:
        remove_venv(venv)


@nox.session(python=False)
def demo(session: nox.Session) -> None:
    """README's first command: the install, then PPO on cartpole-balance with 2 CPU workers
    until the task's success threshold, in that venv."""
    venv = fresh_venv(session)
    try:
        session.run(*INSTALL, str(venv), external=True, env=OWN_ENV)
        session.run(
            str(venv / "bin" / "unilab"),
            "train",
            "cartpole-balance",
            "--algo",
            "ppo",
            "--cpu-workers",
            "2",
            "--until-solved",
            *session.posargs,
            external=True,
            env=OWN_ENV,
        )
    finally:
        remove_venv(venv)
