"""tools/install.py: which commands, in which order, with which torch constraints."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import install

ROOT = Path(__file__).resolve().parents[2]
ALL = ["dist", "storage", "algos", "envs", "launch", "integration"]


def editable(command: list[str]) -> list[str]:
    """The package folders of a pip command's `-e` arguments, as short names."""
    paths = [command[i + 1] for i, arg in enumerate(command) if arg == "-e"]
    return [Path(p.split("[")[0]).name.removeprefix("unilab-") for p in paths]


def test_every_package_in_dependency_order():
    order = install.install_order(ROOT)
    assert order == ALL
    for name in order:  # every declared unilab dependency comes first
        meta = install.project_table(install.package_dirs(ROOT)[name])
        for req in meta.get("dependencies", []):
            dep = install.requirement_name(req)
            if dep.startswith("unilab-"):
                assert order.index(dep.removeprefix("unilab-")) < order.index(name)


def test_one_package_brings_only_its_declared_siblings():
    assert install.install_order(ROOT, ["storage"]) == ["storage"]
    assert install.install_order(ROOT, ["envs"]) == ["envs"]
    algos = install.project_table(ROOT / "packages" / "unilab-algos")["dependencies"]
    declared = {install.requirement_name(r) for r in algos if r.startswith("unilab-")}
    got = install.install_order(ROOT, ["algos"])
    assert got[-1] == "algos" and {f"unilab-{n}" for n in got[:-1]} == declared
    with pytest.raises(SystemExit, match="unknown package"):
        install.install_order(ROOT, ["nope"])


def test_cpu_machine_pins_torch_and_adds_the_cpu_index_only_when_needed(tmp_path):
    venv = tmp_path / "venv"
    assert install.venv_command(venv, python="python3") == ["python3", "-m", "venv", str(venv)]
    pip = install.pip_command(ROOT, venv, gpu=False, cpu_torch_found=False)
    python = str(venv / "bin" / "python")
    assert pip[:4] == [python, "-m", "pip", "install"]
    assert pip[4:6] == ["-c", str(ROOT / "constraints" / "cpu.txt")]
    assert pip[6:8] == ["--extra-index-url", install.TORCH_CPU_INDEX]
    assert editable(pip) == ALL and pip.count("-e") == 6
    found = install.pip_command(ROOT, venv, gpu=False, cpu_torch_found=True)
    assert "--extra-index-url" not in found and "-c" in found


def test_gpu_machine_installs_unconstrained(tmp_path):
    pip = install.pip_command(ROOT, tmp_path / "v", gpu=True, cpu_torch_found=False)
    assert "-c" not in pip and "--extra-index-url" not in pip
    assert editable(pip) == ALL


def test_existing_venv_is_reused_and_extras_go_where_declared(tmp_path):
    (tmp_path / "v" / "bin").mkdir(parents=True)
    (tmp_path / "v" / "bin" / "python").touch()
    assert install.venv_command(tmp_path / "v") is None
    pip = install.pip_command(
        ROOT, tmp_path / "v", packages=["integration"], extras=["video"], gpu=True,
        cpu_torch_found=True,
    )  # fmt: skip
    paths = [pip[i + 1] for i, arg in enumerate(pip) if arg == "-e"]
    assert paths[-1] == f"{ROOT / 'integration'}[video]"
    assert all("[" not in p for p in paths[:-1])  # no library declares `video`


def test_gpu_presence_decides_by_default(monkeypatch, tmp_path, capsys):
    seen: list[list[str]] = []
    monkeypatch.setattr(install.subprocess, "call", lambda cmd: seen.append(cmd) or 0)
    monkeypatch.setattr(install, "cpu_torch_found", lambda venv, root: True)
    for gpu, constrained in ((True, False), (False, True)):
        seen.clear()
        monkeypatch.setattr(install, "has_nvidia_gpu", lambda gpu=gpu: gpu)
        assert install.main([str(tmp_path / "v")]) == 0
        assert seen[0][1:3] == ["-m", "venv"]  # the venv first, then one pip command
        assert len(seen) == 2 and ("-c" in seen[1]) == constrained
    out = capsys.readouterr().out
    assert f"activate it:  . {tmp_path / 'v' / 'bin' / 'activate'}" in out
    assert "then:         unilab list" in out


def test_report_parsing():
    report = {"install": [{"metadata": {"name": "torch", "version": "2.13.0+cpu"}}]}
    assert install.torch_version_of_report(json.dumps(report)) == "2.13.0+cpu"
    assert install.torch_version_of_report("{}") is None


def test_banner_tells_the_download_of_what_package_installs(capsys, tmp_path):
    sizes = {}
    for package in ("dist", "envs"):
        assert install.main([str(tmp_path / "v"), "--package", package, "--cpu", "--dry-run"]) == 0
        banner = capsys.readouterr().out.splitlines()[0]
        sizes[package] = banner
    assert "about 240 MB (torch, numpy;" in sizes["dist"]  # no MuJoCo Warp for the dist layer
    assert "warp-lang" not in sizes["dist"]
    assert "about 400 MB (torch, warp-lang, numpy;" in sizes["envs"]
    mb, heavy = install.download_estimate(install.ROOT, ["dist"], [], gpu=True)
    assert mb >= 1000 and heavy[0] == "torch"  # PyPI's CUDA torch
