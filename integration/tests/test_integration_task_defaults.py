"""Task defaults: every built-in task x algorithm x preset composes exactly the recorded config.

`data/task_configs.json` holds `make_config(task, algo, preset=preset).to_dict()` of every
combination, recorded from the dotted-string table that the typed per-task functions replaced.
A deliberate change of a default (here or in an algorithm's config) rewrites it:

    python integration/tests/test_integration_task_defaults.py --write
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from unilab_integration import TrainConfig, make_config
from unilab_integration._algorithms import ALGORITHMS
from unilab_integration._envs import BUILTIN_TASK_NAMES

RECORD = Path(__file__).parent / "data" / "task_configs.json"
COMBINATIONS = [
    (task, algo, preset)
    for task in BUILTIN_TASK_NAMES
    for algo, spec in ALGORITHMS.items()
    for preset in spec.presets
]


def _flat(data: object, prefix: str = "") -> dict[str, str]:
    """Dotted keys -> JSON text of each leaf (so 1 and 1.0 differ)."""
    if isinstance(data, dict):
        out: dict[str, str] = {}
        for k, v in data.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else k))
        return out
    return {prefix: json.dumps(data)}


def _record() -> dict[str, dict]:
    return {f"{t}/{a}/{p}": make_config(t, a, preset=p).to_dict() for t, a, p in COMBINATIONS}


def test_every_combination_is_recorded():
    assert sorted(json.loads(RECORD.read_text())) == sorted(
        f"{t}/{a}/{p}" for t, a, p in COMBINATIONS
    )


@pytest.mark.parametrize(("task", "algo", "preset"), COMBINATIONS)
def test_task_defaults_compose_the_recorded_config(task, algo, preset):
    expected = json.loads(RECORD.read_text())[f"{task}/{algo}/{preset}"]
    cfg = make_config(task, algo, preset=preset)
    want, got = _flat(expected), _flat(cfg.to_dict())
    diff = {
        k: (want.get(k), got.get(k)) for k in want.keys() | got.keys() if want.get(k) != got.get(k)
    }
    assert diff == {}  # key: (recorded, now), JSON texts: a type change shows (1 vs 1.0)
    # the same values as the declared types hold them (a list where a tuple belongs differs)
    assert TrainConfig.from_dict(expected) == cfg


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    RECORD.write_text(json.dumps(_record(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {RECORD}: {len(COMBINATIONS)} configs")
