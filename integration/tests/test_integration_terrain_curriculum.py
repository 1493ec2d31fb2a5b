"""Terrain levels under `runner.curriculum_sync` on 2 CPU ranks (gloo): `local` drifts between
ranks, `global` stays identical; collectives per iteration 0 / 1 (docs/semantics.md); the
levels of every rank are checkpointed and re-split on a resume at another world size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from unilab_integration import apply_overrides, load_checkpoint, make_config, train

pytestmark = pytest.mark.slow

ITERATIONS, STEPS, ENVS = 2, 10, 7
# 4 levels of MJLab's rough grid (one column per type, 7 types), 0.4 s episodes (20 steps):
# every world resets at the end of the second iteration and moves by its walk and command.
# Spawned within 5 cm of the tile origin (MJLab: 0.5 m), the distance is the walk, so a short
# episode's walk against its command moves some worlds down.
KWARGS = {
    "terrain": {"num_rows": 4, "border_width": 1.0},
    "episode_length_s": 0.4,
    "max_init_terrain_level": 3,
    "reset_pose_x": [-0.05, 0.05],
    "reset_pose_y": [-0.05, 0.05],
}


def _train(log_dir: Path, name: str, sync: str, *, workers: int = 2, resume=None, more=()):
    cfg = apply_overrides(
        make_config("go1-velocity-rough", "ppo"),
        [
            f"launch.cpu_workers={workers}",
            f"env.num_envs={ENVS}",
            f"env.kwargs={json.dumps(KWARGS)}",
            f"runner.num_steps_per_env={STEPS}",
            f"runner.iterations={ITERATIONS}",
            f"runner.checkpoints.interval={ITERATIONS}",
            f"runner.curriculum_sync={sync}",
            "runner.logging.progress=false",
            'runner.logging.loggers=["console","jsonl"]',
            "runner.seed=5",
            f"runner.logging.log_dir={json.dumps(str(log_dir))}",
            f"runner.logging.run_name={name}",
            "algo.num_mini_batches=1",
            "algo.num_epochs=1",
            "runner.random_episode_start=false",  # every world at step 0: the schedule above
            *more,
        ],
    )
    result = train(cfg, resume=resume)
    run_dir = Path(result["run_dir"])
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return load_checkpoint(run_dir), rows, run_dir


def _levels(ckpt) -> list[list[int]]:
    return [state["levels"] for state in ckpt["curriculum"]]


def test_local_levels_drift_between_ranks_without_a_collective(tmp_path):
    local, rows, _ = _train(tmp_path, "local", "local")
    lv = _levels(local)
    assert lv[0] != lv[1]  # different commands and pushes per rank: different moves
    assert lv != [_initial_levels()] * 2  # they moved (the start is the same on every rank)
    assert all(r.get("dist/curriculum/collectives", 0) == 0 for r in rows)
    # the logged distribution: count-weighted over both ranks
    last = rows[-1]
    assert last["curriculum/terrain_levels/mean"] == pytest.approx(
        (sum(lv[0]) + sum(lv[1])) / (2 * ENVS)
    )
    hist = [last[f"curriculum/terrain_levels/level_{k}"] for k in range(4)]
    assert hist == pytest.approx([(lv[0].count(k) + lv[1].count(k)) / (2 * ENVS) for k in range(4)])


def test_levels_resume_from_one_rank_on_two_and_global_keeps_them_identical(tmp_path):
    one, _, run_dir = _train(tmp_path, "one", "local", workers=1)
    saved = _levels(one)[0]
    assert saved != _initial_levels()
    # 2 ranks, `global`, saving every iteration: the resume restarts every episode (20
    # steps), so the first iteration (10 steps) has no reset and its levels are the
    # re-split ones (same env count per rank: each rank takes rank 0's); the second resets
    # every world and moves them, identically on both ranks
    _, rows, run_two = _train(
        tmp_path,
        "two",
        "global",
        resume=str(run_dir),
        more=[f"runner.iterations={ITERATIONS + 2}", "runner.checkpoints.interval=1"],
    )
    first = load_checkpoint(run_two / "checkpoints" / f"ckpt_{ITERATIONS + 1:06d}.pt")
    assert _levels(first) == [saved, saved]
    last = _levels(load_checkpoint(run_two))
    assert last[0] == last[1] and last[0] != saved
    counted = [r["dist/curriculum/collectives"] for r in rows if r["iteration"] > ITERATIONS]
    assert counted == [1.0, 1.0]  # `global`: one all-reduce per iteration


def _initial_levels() -> list[int]:
    import mujoco

    from unilab_envs.terrain import TerrainConfig, TerrainLevels, add_terrain

    terrain = TerrainConfig(**KWARGS["terrain"])
    layout = add_terrain(mujoco.MjSpec(), terrain)
    levels = TerrainLevels(layout, max_init_level=3, episode_length_s=0.4, seed=terrain.seed)
    levels.bind(ENVS, "cpu")
    return levels.levels.numpy().tolist()


def _sync_on_rank(rank: int, world_size: int) -> dict[str, tuple[list[int], int]]:
    """Two ranks whose slots start at different levels, with different outcomes, synced once
    by `CurriculumSync`'s per-world protocol in each mode: {mode: (levels, curriculum collectives)}."""
    import mujoco
    import torch

    import unilab_dist
    from unilab_dist import DistContext
    from unilab_envs import EnvFeatures
    from unilab_envs.terrain import TerrainConfig, TerrainLevels, add_terrain
    from unilab_integration._runners._curriculum import CurriculumSync

    layout = add_terrain(mujoco.MjSpec(), TerrainConfig(num_rows=4))
    out = {}
    for mode in ("global", "rank0", "local"):
        levels = TerrainLevels(layout, episode_length_s=20.0)
        levels.bind(3, "cpu")
        levels.adopt_levels(torch.tensor([[1, 2, 3], [0, 2, 3]][rank], dtype=torch.int32))
        levels._torch["shared"].copy_(torch.tensor([1, 2, 3], dtype=torch.int32))
        # slot 0: rank 0 up, rank 1 down (net 0); slot 1: down; slot 2: up past the top
        counts = [[[1, 0, 1], [0, 1, 0]], [[0, 0, 1], [1, 1, 0]]][rank]
        levels.outcome_counts().copy_(torch.tensor(counts, dtype=torch.int32))
        ctx = DistContext(
            world_size=world_size, rank=rank, local_world_size=world_size, local_rank=rank
        )
        sync = CurriculumSync(EnvFeatures.of_curriculum(levels), mode, ctx)
        assert sync.per_world
        phase = "curriculum"
        before = unilab_dist.accounting.snapshot().get(phase, {}).get("collectives", 0)
        sync.sync({}, {})  # a per-world curriculum reads no episode means
        after = unilab_dist.accounting.snapshot().get(phase, {}).get("collectives", 0)
        out[mode] = (levels.levels_tensor().tolist(), after - before)
    return out


def test_the_sync_rules_and_their_collectives():
    from unilab_dist.testing import run_distributed

    r0, r1 = run_distributed(_sync_on_rank, 2)
    assert r0["local"] == ([1, 2, 3], 0) and r1["local"] == ([0, 2, 3], 0)
    assert r0["rank0"] == r1["rank0"] == ([1, 2, 3], 1)  # rank 0's levels, one broadcast
    (levels, count), other = r0["global"], r1["global"]
    assert other == (levels, count) and count == 1  # one all-reduce, the same on both ranks
    assert levels[:2] == [1, 1] and 0 <= levels[2] < 4  # shared [1, 2, 3] + net [0, -1, +1]
