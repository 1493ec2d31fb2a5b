"""An algorithm from its own module: its folder (here one module) and one registry call.

`_unilab_toy_algo` registers "toy" with `register_algorithm`; `runner.imports` makes every
worker import it (a later reader imports it itself: a saved config never chooses imports). Trained end to end on 2 gloo
CPU workers, checkpointed, played and resumed without a line of integration naming it."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    # the workers import _unilab_toy_algo from here too
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    )
    import _unilab_toy_algo

    yield _unilab_toy_algo
    from unilab_integration import ALGORITHMS

    ALGORITHMS.pop("toy", None)  # the other tests see the built-in algorithms only
    sys.modules.pop("_unilab_toy_algo", None)


def test_a_registered_algorithm_trains_plays_and_resumes_end_to_end(toy, tmp_path):
    from unilab_integration import ALGORITHMS, apply_overrides, load_checkpoint, make_config, train
    from unilab_integration._play import play_episodes

    assert "toy" in ALGORITHMS
    settings = [
        "launch.cpu_workers=2",
        "env.num_envs=8",
        'env.scope="per-rank"',
        "runner.num_steps_per_env=8",
        "runner.iterations=2",
        "runner.logging.progress=false",
        'runner.logging.loggers=["jsonl"]',
        'runner.imports=["_unilab_toy_algo"]',
        f"runner.logging.log_dir={json.dumps(str(tmp_path))}",
        "runner.logging.run_name=toy",
    ]
    cfg = apply_overrides(make_config("cartpole-balance", "toy"), settings)
    result = train(cfg)
    assert result["iterations"] == 2
    run = Path(result["run_dir"])
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [1, 2]
    assert all(math.isfinite(r["learner/loss"]) for r in rows)
    assert all(r["dist/collectives"] > 0 for r in rows)  # its gradient sync ran on 2 ranks
    ckpt = load_checkpoint(run)
    assert ckpt["algo_name"] == "toy" and ckpt["config"]["algo"]["learning_rate"] == 0.01
    for name, value in ckpt["learner"][0]["actor"].items():  # replicas stayed equal
        assert (value == ckpt["learner"][1]["actor"][name]).all(), name
    played = play_episodes(run, episodes=2, num_envs=4)
    assert len(played.returns) == 2
    more = apply_overrides(cfg, ["runner.iterations=3"])
    resumed = train(more, resume=run)
    assert resumed["iterations"] == 3


def _spec(toy, name, kind="on-policy", learner=None):
    """An AlgorithmSpec of the toy's config; `learner`: the learner class it builds."""
    from unilab_integration import AlgorithmSpec

    def build(shapes, dim, algo, *, device, **_):
        return (learner or toy.ToyLearner)(shapes, dim, algo, device=device)

    return AlgorithmSpec(
        name=name,
        kind=kind,
        description=f"{name} (a test's)",
        presets=("default",),
        config_factory=lambda preset: toy.ToyConfig(),
        learner_factory=build,
    )


def test_a_second_algorithm_under_a_taken_name_is_refused(toy):
    from unilab_integration import ALGORITHMS, register_algorithm

    with pytest.raises(ValueError, match="algorithm 'ppo' is already registered"):
        register_algorithm(_spec(toy, "ppo"))
    with pytest.raises(ValueError, match="kind must be 'on-policy' or 'off-policy'"):
        register_algorithm(_spec(toy, "toy2", kind="model-based"))
    assert "toy2" not in ALGORITHMS


def test_a_learner_outside_the_contract_is_refused_when_built(toy):
    class NoReturns(toy.ToyLearner):
        def __getattribute__(self, name):
            if name == "compute_returns":
                raise AttributeError(name)
            return super().__getattribute__(name)

    with pytest.raises(TypeError, match=r"built a NoReturns that an on-policy runner cannot "
                       r"drive: it lacks compute_returns \(the contract: "
                       r"unilab_algos.OnPolicyLearner\)"):  # fmt: skip
        _spec(toy, "broken", learner=NoReturns).build_learner(
            {"policy": (3,)}, 1, toy.ToyConfig(), device="cpu"
        )
    # the same spec with the whole toy learner builds it
    learner = _spec(toy, "fine").build_learner({"policy": (3,)}, 1, toy.ToyConfig(), device="cpu")
    assert isinstance(learner, toy.ToyLearner)
