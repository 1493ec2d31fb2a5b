"""PPO's symmetry and large-batch options through the command line's config: `--set
algo.symmetry...` / `algo.large_batch...` build the nested configs, and `go1-velocity-flat`
trains with both (the mirror maps from its task's terms, the mini-batches scaled for its env
count), then its checkpoint plays without the env."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from unilab_integration import (
    TrainConfig,
    apply_overrides,
    learner_from_checkpoint,
    make_config,
    train,
)

ENVS, STEPS, ITERATIONS = 4, 8, 2


def test_overrides_build_the_nested_options():
    from unilab_algos import LargeBatch, SymmetryConfig

    base = make_config("go1-velocity-flat", "ppo")
    assert base.algo.symmetry is None and base.algo.large_batch is None
    cfg = apply_overrides(
        base,
        [
            "algo.large_batch.reference_envs=4096",
            "algo.symmetry.mirror_loss=true",
            "algo.symmetry.mirror_loss_coef=0.5",
        ],
    )
    assert cfg.algo.large_batch == LargeBatch(reference_envs=4096)
    assert cfg.algo.symmetry == SymmetryConfig(
        data_augmentation=True, mirror_loss=True, mirror_loss_coef=0.5
    )
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg  # what a run's config.json holds
    with pytest.raises(TypeError, match=r"large_batch.scope' takes one of 'rank', 'global'"):
        apply_overrides(base, ["algo.large_batch.scope=world"])


def test_the_command_line_sets_them(capsys):
    from unilab_integration.cli import main

    argv = ["train", "go1-velocity-flat", "--set", "algo.large_batch.reference_envs=4096"]
    argv += ["--set", "algo.symmetry.mirror_loss=true", "--print-config"]
    assert main(argv) == 0
    algo = json.loads(capsys.readouterr().out)["algo"]
    assert algo["large_batch"] == {"reference_envs": 4096, "scope": "rank"}
    assert algo["symmetry"] == {
        "data_augmentation": True,
        "mirror_loss": True,
        "mirror_loss_coef": 0.0,
    }


@pytest.mark.slow
def test_go1_trains_with_symmetry_and_large_batch(tmp_path: Path):
    cfg = apply_overrides(
        make_config("go1-velocity-flat", "ppo"),
        [
            "launch.cpu_workers=1",
            f"env.num_envs={ENVS}",
            f"runner.num_steps_per_env={STEPS}",
            f"runner.iterations={ITERATIONS}",
            f"runner.checkpoints.interval={ITERATIONS}",
            "runner.logging.progress=false",
            'runner.logging.loggers=["console","jsonl"]',
            f"runner.logging.log_dir={json.dumps(str(tmp_path))}",
            "runner.logging.run_name=levers",
            "algo.num_epochs=1",
            "algo.num_mini_batches=1",
            "algo.actor.hidden=[16]",
            "algo.critic.hidden=[16]",
            # 4 envs over a reference of 2: twice the mini-batches, twice the KL target
            "algo.large_batch.reference_envs=2",
            "algo.symmetry.data_augmentation=true",
            "algo.symmetry.mirror_loss=true",
            "algo.symmetry.mirror_loss_coef=0.1",
        ],
    )
    result = train(cfg)
    run_dir = Path(result["run_dir"])
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    train_rows = [r for r in rows if any(k.endswith("symmetry") for k in r)]
    assert len(train_rows) == ITERATIONS
    for row in train_rows:
        (sym,) = [v for k, v in row.items() if k.endswith("symmetry")]
        (mini,) = [v for k, v in row.items() if k.endswith("mini_batches")]
        assert sym > 0.0 and mini == 2
    learner = learner_from_checkpoint(run_dir)  # acts without the env: no mirror needed
    assert learner.config.symmetry is None and learner.config.num_mini_batches == 1


def test_symmetry_on_a_task_without_mirror_maps_is_refused_before_launch(tmp_path: Path):
    """The launcher asks the task for its mirror maps before any worker starts: a task without
    them is refused (exit 2, one message naming the task and the way out, no traceback) and no
    run folder is made."""
    import subprocess
    import sys

    argv = [sys.executable, "-m", "unilab_integration.cli", "train", "quadruped-velocity"]
    argv += ["--cpu-workers", "1", "--iterations", "1", "--log-dir", str(tmp_path)]
    argv += ["--set", "algo.symmetry.data_augmentation=true"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert "quadruped-velocity" in out.stderr and "has no mirror maps" in out.stderr
    assert "train without algo.symmetry" in out.stderr and "Traceback" not in out.stderr
    assert not any(tmp_path.iterdir())


def test_the_fast_preset_is_rsl_rl_with_symmetry_and_tf32():
    """`--preset fast` is exactly the recorded recipe (docs/benchmarks/mjlab-tasks.md): the
    `rsl_rl` preset with `algo.symmetry.data_augmentation=true` and TF32 matmuls."""
    fast = make_config("go1-velocity-flat", "ppo", preset="fast")
    recipe = apply_overrides(
        make_config("go1-velocity-flat", "ppo", preset="rsl_rl"),
        ["algo.symmetry.data_augmentation=true", "runner.matmul_precision=high"],
    )
    assert fast.to_dict() == {**recipe.to_dict(), "preset": "fast"}
    with pytest.raises(ValueError, match="not available for --algo fastsac"):
        make_config("go1-velocity-flat", "fastsac", preset="fast")


def test_the_fast_preset_on_a_task_without_mirror_maps_names_the_other_presets(tmp_path: Path):
    import subprocess
    import sys

    argv = [sys.executable, "-m", "unilab_integration.cli", "train", "cartpole-balance"]
    argv += ["--preset", "fast", "--cpu-workers", "1", "--iterations", "1"]
    argv += ["--log-dir", str(tmp_path)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert "the preset 'fast' trains with algo.symmetry" in out.stderr
    assert "use --preset rsl_rl or --preset default" in out.stderr
    assert not any(tmp_path.iterdir())
