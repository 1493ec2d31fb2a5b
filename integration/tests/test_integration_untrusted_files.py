"""Opening a file never runs code: checkpoints are read as plain data (`weights_only=True`), and
a saved config's `runner.imports` are imported only when the command names them.

Every command that reads a checkpoint gets two crafted files, in real processes: one whose
pickle would write a marker file when unpickled (`__reduce__`), and one whose config names a
module that writes a marker when imported. Each command refuses (exit 2) and no marker appears.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from _untrained_checkpoint import write_untrained_cartpole_run
from tensordict import TensorDict

from unilab_integration import CheckpointError, load_checkpoint, save_checkpoint
from unilab_integration._checkpoint import FORMAT, restore_rng
from unilab_integration.cli import main

HERE = Path(__file__).parent


class _WritesMarker:
    """Unpickling this writes `path` (what a malicious file would do with os.system)."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (exec, (f"open({self.path!r}, 'w').write('ran')",))


def _pickle_bomb(run: Path, marker: Path) -> Path:
    """RUN/checkpoints/ckpt_000001.pt whose unpickling writes `marker` (version 2 on its face)."""
    folder = run / "checkpoints"
    folder.mkdir(parents=True)
    payload = {"format": FORMAT, "version": 2, "task": "cartpole-balance", "algo_name": "ppo"}
    torch.save({**payload, "learner": [_WritesMarker(marker)]}, folder / "ckpt_000001.pt")
    (folder / "latest").write_text("ckpt_000001.pt\n")
    return run


def _importing_config(run: Path) -> Path:
    """A plain-data checkpoint whose saved config names `_unilab_marker_module` to import."""
    write_untrained_cartpole_run(run)
    file = run / "checkpoints" / "ckpt_000001.pt"
    ckpt = load_checkpoint(file)
    ckpt["config"]["runner"]["imports"] = ["_unilab_marker_module"]
    payload = {k: v for k, v in ckpt.items() if k not in ("format", "version", "path")}
    save_checkpoint(run / "checkpoints", 1, payload)
    return run


def _commands(run: Path, logs: Path) -> dict[str, list[str]]:
    file = str(run / "checkpoints" / "ckpt_000001.pt")
    train = ["train", "cartpole-balance", "--cpu-workers", "1", "--iterations", "3"]
    return {
        "play run": ["play", str(run), "--episodes", "1"],
        "play file": ["play", file, "--episodes", "1"],
        "resume": [*train, "--resume", str(run)],
        "teacher": [*train, "--algo", "distill", "--teacher", str(run), "--log-dir", str(logs)],
        "eval": ["eval", str(run), "--num-envs", "2"],
        "export": ["export", str(run), str(logs / "policy.onnx")],
    }


def _run_all(
    commands: dict[str, list[str]], marker: Path
) -> dict[str, subprocess.CompletedProcess]:
    env = {
        **os.environ,
        "UNILAB_TEST_MARKER": str(marker),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
    }
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-m", "unilab_integration.cli", *argv],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, argv in commands.items()
    }
    out = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=300)
        out[name] = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    return out


def test_a_pickle_that_runs_code_is_refused_by_every_command(tmp_path):
    marker = tmp_path / "marker"
    run = _pickle_bomb(tmp_path / "run", marker)
    commands = _commands(run, tmp_path / "logs")
    mjlab = tmp_path / "model_1.pt"  # an MJLab/RSL-RL file, for the converter
    torch.save({"actor_state_dict": _WritesMarker(marker), "iter": 1}, mjlab)
    commands["mjlab play"] = ["play", str(mjlab), "--task", "go1-velocity-flat"]
    commands["mjlab eval"] = ["eval", str(mjlab), "--task", "go1-velocity-flat"]
    results = _run_all(commands, marker)
    for name, result in results.items():
        assert result.returncode == 2, (name, result.stderr)
        assert "is not opened: reading it would build exec, which can run code" in result.stderr, (
            name
        )
        assert len(result.stderr.strip().splitlines()) == 1, (name, result.stderr)
    assert not marker.exists()


def test_a_saved_config_never_chooses_modules_to_import(tmp_path):
    marker = tmp_path / "marker"
    run = _importing_config(tmp_path / "run")
    results = _run_all(_commands(run, tmp_path / "logs"), marker)
    for name, result in results.items():
        assert result.returncode == 2, (name, result.stderr)
        assert "asks to import _unilab_marker_module (its runner.imports)" in result.stderr, name
        assert "--import _unilab_marker_module" in result.stderr, name
    assert not marker.exists()
    # named on the command line, the module is imported and the checkpoint plays
    named = ["play", str(run), "--episodes", "1", "--num-envs", "1"]
    named += ["--import", "_unilab_marker_module"]
    result = _run_all({"named": named}, marker)["named"]
    assert result.returncode == 0, result.stderr
    assert marker.read_text() == "imported\n"


def _version_one(folder: Path) -> Path:
    """A checkpoint as version 1 wrote it: the NumPy RNG tuple and a TensorDict of obs."""
    np.random.seed(7)
    obs = TensorDict({"obs": {"policy": torch.arange(6.0).reshape(2, 3)}}, batch_size=[2])
    data = {
        "format": FORMAT,
        "version": 1,
        "task": "cartpole-balance",
        "iteration": 4,
        "rng": [
            {
                "python": (3, tuple(range(625)), None),
                "numpy": np.random.get_state(),
                "torch": torch.get_rng_state(),
            }
        ],
        "obs": [obs],
    }
    folder.mkdir(parents=True)
    torch.save(data, folder / "ckpt_000004.pt")
    (folder / "latest").write_text("ckpt_000004.pt\n")
    return folder / "ckpt_000004.pt"


def test_a_version_one_checkpoint_is_refused_until_upgraded_with_trust(tmp_path, capsys):
    file = _version_one(tmp_path / "run" / "checkpoints")
    expected_draw = np.random.rand(3)
    with pytest.raises(CheckpointError, match=r"numpy\S*_reconstruct, which can run code") as e:
        load_checkpoint(tmp_path / "run")
    assert f"unilab upgrade-checkpoint {file} --trust" in str(e.value)
    before = file.read_bytes()
    assert main(["upgrade-checkpoint", str(tmp_path / "run")]) == 2
    assert "give --trust" in capsys.readouterr().err
    assert file.read_bytes() == before
    assert main(["upgrade-checkpoint", str(tmp_path / "run"), "--trust"]) == 0
    assert f"upgraded to checkpoint version 2 (version 1 kept as {file}.v1)" in (
        capsys.readouterr().out
    )
    assert (file.parent / (file.name + ".v1")).read_bytes() == before  # the original, kept
    ckpt = load_checkpoint(tmp_path / "run")
    assert ckpt["version"] == 2 and ckpt["iteration"] == 4
    assert torch.equal(ckpt["obs"][0]["data"]["obs"]["policy"], torch.arange(6.0).reshape(2, 3))
    restore_rng(ckpt["rng"][0])
    assert np.array_equal(np.random.rand(3), expected_draw)
    assert main(["upgrade-checkpoint", str(file), "--trust"]) == 0
    assert "already checkpoint version 2" in capsys.readouterr().out
