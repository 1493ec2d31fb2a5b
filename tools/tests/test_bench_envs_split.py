"""bench_envs.py --split: the classification of kernel records into physics and env layer.

bench_envs imports torch, warp and MJWarp at the top, which the nox `tools` session does not
install, so `split_kernels` (self-contained by design) is compiled alone from the script's
source.
"""

import ast
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_envs.py"


def _load(name: str):
    tree = ast.parse(BENCH.read_text(), filename=str(BENCH))
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    namespace: dict = {}
    exec(compile(ast.Module([node], type_ignores=[]), str(BENCH), "exec"), namespace)
    return namespace[name]


split_kernels = _load("split_kernels")

STEPS = 2
# Per control step the env launches step_a and step_b (MJWarp, also in the raw loop), obs and
# reward once each; one reset in the two steps.
ENV = [
    ("step_a", 1.0),
    ("step_b", 0.5),
    ("obs", 0.2),
    ("reward", 0.1),
    ("step_a", 1.2),
    ("step_b", 0.5),
    ("obs", 0.2),
    ("reward", 0.1),
    ("reset", 0.05),
]
RAW = [("step_a", 0.8), ("step_b", 0.5), ("step_a", 0.8), ("step_b", 0.5)]


def test_shared_names_are_physics_the_rest_env_layer():
    k = split_kernels(ENV, RAW, STEPS)
    assert k["env_physics_us"] == pytest.approx((1.0 + 0.5 + 1.2 + 0.5) * 1e3 / STEPS)
    assert k["env_layer_us"] == pytest.approx((0.2 + 0.1 + 0.2 + 0.1 + 0.05) * 1e3 / STEPS)
    assert k["raw_physics_us"] == pytest.approx((0.8 + 0.5) * 2 * 1e3 / STEPS)
    assert k["physics_ratio"] == pytest.approx(3.2 / 2.6)
    assert k["env_kernels_ratio"] == pytest.approx((3.2 + 0.65) / 2.6)
    assert k["env_physics_launches"] == 2.0
    assert k["env_layer_launches"] == 2.5
    assert k["raw_launches"] == 2.0
    assert k["raw_only"] == []


def test_top_kernels_are_ordered_and_cut():
    k = split_kernels(ENV, RAW, STEPS, top=2)
    layer = k["top_env_layer"]
    assert [t["name"] for t in layer] == ["obs", "reward"]
    assert layer[0]["us"] == pytest.approx(200.0)
    assert layer[0]["launches"] == 1.0
    excess = k["top_physics_excess"]
    assert [t["name"] for t in excess] == ["step_a", "step_b"]
    assert excess[0]["env_us"] == pytest.approx(1100.0)
    assert excess[0]["raw_us"] == pytest.approx(800.0)
    assert excess[0]["env_launches"] == excess[0]["raw_launches"] == 1.0
    assert excess[1]["env_us"] == pytest.approx(excess[1]["raw_us"])
    assert len(split_kernels(ENV, RAW, STEPS)["top_env_layer"]) == 3  # all, fewer than 5


def test_raw_only_kernels_and_empty_raw():
    k = split_kernels([("solve", 1.0)] * 3, [("solve", 1.0), ("solve", 1.0), ("island", 0.3)], 1)
    assert k["raw_only"] == ["island"]
    assert k["raw_physics_us"] == pytest.approx(2300.0)
    assert k["env_layer_us"] == 0.0
    # one more solver iteration in the env: one more launch of the same kernel
    (solve,) = k["top_physics_excess"]
    assert (solve["env_launches"], solve["raw_launches"]) == (3.0, 2.0)
    assert k["env_physics_launches"] == 3.0
    assert k["raw_launches"] == 3.0
    empty = split_kernels([("obs", 0.2)], [], 1)
    assert empty["physics_ratio"] is None
    assert empty["env_layer_us"] == pytest.approx(200.0)
    assert empty["env_physics_launches"] == 0
