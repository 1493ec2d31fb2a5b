"""The "wandb" sink end to end: `unilab train` of cart-pole in W&B's offline mode, then
`--resume`; what W&B wrote (its .wandb transaction logs) is read back and compared with the run
folder: the same run id in both sessions, config.json as the run config, every iteration's
metrics against the global env steps, the checkpoints' paths, and the startup line in the
run's log. A user's sink registered through `runner.imports` rides along.

Skipped without wandb, unless UNILAB_REQUIRE_WANDB=1 (the nox integration session, which
installs it) makes a missing wandb a failure."""

from __future__ import annotations

import json
import math
import os
import struct
from pathlib import Path

import pytest

from unilab_integration.cli import main

if os.environ.get("UNILAB_REQUIRE_WANDB") == "1":
    import wandb  # noqa: F401  (required here: fail rather than skip)
else:
    pytest.importorskip(
        "wandb",
        reason='the W&B sink needs wandb: pip install "unilab-integration[wandb]" '
        "(CI installs it and sets UNILAB_REQUIRE_WANDB=1)",
    )

pytestmark = pytest.mark.slow

BLOCK = 32768  # the .wandb file is a LevelDB-style log: 32 KiB blocks of 7-byte-headed chunks


def wandb_records(path: Path) -> list:
    """The protobuf records of one .wandb transaction log (W&B ships no Python reader)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B", data[:7]
    pos, records, pending = 7, [], b""
    while pos + 7 <= len(data):
        left = BLOCK - pos % BLOCK
        if left < 7:  # a block's tail too short for a header is padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if kind == 0:  # zero-filled rest of a block
            pos += left
            continue
        pending += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a full record, or the last chunk of one
            record = pb.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


def _session(path: Path) -> dict:
    """One offline W&B session: run id and project, config, history rows, final summary, exit."""
    out: dict = {"config": {}, "history": [], "summary": {}, "metrics": [], "exit": None}
    for record in wandb_records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            out["id"], out["project"], out["name"] = (
                record.run.run_id,
                record.run.project,
                record.run.display_name,
            )
            for item in record.run.config.update:
                out["config"][item.key] = json.loads(item.value_json)
        elif kind == "config":
            for item in record.config.update:
                out["config"][item.key] = json.loads(item.value_json)
        elif kind == "history":
            out["history"].append(
                {
                    "/".join(i.nested_key) or i.key: json.loads(i.value_json)
                    for i in record.history.item
                }
            )
        elif kind == "summary":
            for item in record.summary.update:
                out["summary"]["/".join(item.nested_key) or item.key] = json.loads(item.value_json)
        elif kind == "metric":
            out["metrics"].append((record.metric.glob_name, record.metric.step_metric))
        elif kind == "exit":
            out["exit"] = record.exit.exit_code
    out["config"].pop("_wandb", None)
    return out


def _train(tmp_path: Path, iterations: int, *more: str) -> None:
    argv = ["train", "cartpole-balance", "--cpu-workers", "1", "--num-envs", "8"]
    argv += ["--env-scope", "per-rank", "--iterations", str(iterations), "--no-progress"]
    argv += ["--log-dir", str(tmp_path / "runs"), "--run-name", "wb", "--save-interval", "1"]
    argv += ["--loggers", "console,jsonl,wandb,returns", "--set", "runner.num_steps_per_env=8"]
    argv += ["--set", 'runner.imports=["_unilab_user_sink"]', *more]  # registers "returns"
    assert main(argv) == 0


def _same(a, b) -> bool:
    if isinstance(a, float) and math.isnan(a):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return a == b


def test_wandb_sink_offline_then_resume_continues_the_same_run(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("WANDB_PROJECT", raising=False)
    here = str(Path(__file__).parent)  # the workers import _unilab_user_sink from here
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))
    )
    (tmp_path / "wandb").mkdir()
    _train(tmp_path, 2)
    run_dir = tmp_path / "runs" / "wb"
    record = json.loads((run_dir / "wandb.json").read_text())
    assert record["project"] == "unilab" and record["entity"] is None
    _train(tmp_path, 4, "--resume", str(run_dir))
    assert json.loads((run_dir / "wandb.json").read_text()) == record  # the same W&B run

    files = sorted((tmp_path / "wandb" / "wandb").glob("offline-run-*/*.wandb"))
    assert [f.name for f in files] == [f"run-{record['id']}.wandb"] * 2  # one per session
    first, second = (_session(f) for f in files)
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [1, 2, 3, 4]
    for session, config_file, iterations in (
        (first, "config.json", [1, 2]),
        (second, "config.resume-2.json", [3, 4]),
    ):
        assert (session["id"], session["project"], session["name"]) == (
            record["id"],
            "unilab",
            "wb",
        )
        assert session["config"] == json.loads((run_dir / config_file).read_text())
        assert ("*", "env_steps/global") in session["metrics"]  # charted against env steps
        history = [h for h in session["history"] if "iteration" in h]
        assert [h["iteration"] for h in history] == iterations
        for logged in history:
            expected = rows[logged["iteration"] - 1]
            for key, value in logged.items():
                if not key.startswith("_"):
                    assert _same(value, expected[key]), (logged["iteration"], key)
            assert set(expected) <= set(logged)  # every metric of metrics.jsonl
        last = iterations[-1]
        ckpt = run_dir / "checkpoints" / f"ckpt_{last:06d}.pt"
        assert session["summary"]["checkpoint/path"] == str(ckpt) and ckpt.is_file()
        assert session["summary"]["checkpoint/iteration"] == last
        assert session["exit"] == 0
    assert second["config"]["runner"]["iterations"] == 4
    # the resumed session notes where it resumed: points past it from before are superseded
    assert "resume/iteration" not in first["summary"]
    assert (second["summary"]["resume/iteration"], second["summary"]["resume/env_steps"]) == (
        2,
        rows[1]["env_steps/global"],
    )

    # the user's sink (docs/integration.md's example), registered through runner.imports
    ckpts = run_dir / "checkpoints"
    expected = []
    for row in rows:
        ret = "nan" if row["episode/return"] is None else str(row["episode/return"])
        expected += [f"{row['env_steps/global']:.0f} {ret}"]
        it = row["iteration"]
        expected += [f"checkpoint {it} {ckpts / f'ckpt_{it:06d}.pt'}"]
    assert (run_dir / "returns.txt").read_text().splitlines() == expected

    for log in (run_dir / "logs" / "rank0.log", run_dir / "logs" / "resume-2" / "rank0.log"):
        text = log.read_text()
        lines = [x.split(" INFO ", 1)[1] for x in text.splitlines() if " INFO system: " in x]
        assert len(lines) == 1, log  # once per session, one line
        assert "DEBUG" not in text and "WARNING" not in text, text  # W&B adds no noise
        assert lines[0].startswith("system: cpu | torch ")
        assert "env step eager (CUDA graphs need a CUDA device, got cpu)" in lines[0]
        assert "update and rollout eager (CUDA graphs need a CUDA device, got cpu)" in lines[0]
