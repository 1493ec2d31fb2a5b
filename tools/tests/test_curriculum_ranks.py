"""curriculum_ranks.py: per-rank terrain levels of real runs under `runner.curriculum_sync`
`local` and `global`, and the cost the runner logged; its error paths; its plot's input.

The runs train go1-velocity-rough on 2 gloo ranks on the CPU through `unilab_integration.
train()`, at the size of integration/tests/test_integration_terrain_curriculum.py (7 worlds per
rank on 4 levels, 0.4 s episodes: every world resets at the end of the second iteration), with
a checkpoint every iteration, every world starting at step 0 (no random episode start). They
need torch, the whole stack and MJLab's go1.xml: the `tools`
nox session (no torch) skips them, `nox -s integration` runs this file (UNILAB_REQUIRE_MJLAB=1:
a missing go1.xml fails there).
"""

import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "bench"))
import curriculum_ranks as cr  # noqa: E402
import plot_curves  # noqa: E402

ITERATIONS, STEPS, ENVS, ROWS = 2, 10, 7, 4
KWARGS = {
    "terrain": {"num_rows": ROWS, "border_width": 1.0},
    "episode_length_s": 0.4,
    "max_init_terrain_level": 3,
    "reset_pose_x": [-0.05, 0.05],
    "reset_pose_y": [-0.05, 0.05],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """RUNS/w2_local and RUNS/w2_global: 2 CPU ranks, a checkpoint every iteration."""
    pytest.importorskip("torch")
    from unilab_envs.testing import mjlab_robot

    mjlab_robot("go1")  # skip without go1.xml (fail under UNILAB_REQUIRE_MJLAB=1)
    from unilab_integration import apply_overrides, make_config, train

    root = tmp_path_factory.mktemp("runs")
    for sync in ("local", "global"):
        cfg = apply_overrides(
            make_config("go1-velocity-rough", "ppo"),
            [
                "launch.cpu_workers=2",
                f"env.num_envs={ENVS}",
                f"env.kwargs={json.dumps(KWARGS)}",
                f"runner.num_steps_per_env={STEPS}",
                f"runner.iterations={ITERATIONS}",
                "runner.checkpoints.interval=1",
                "runner.checkpoints.keep=0",
                f"runner.curriculum_sync={sync}",
                "runner.logging.progress=false",
                'runner.logging.loggers=["console","jsonl"]',  # as bench_time_to_threshold.py
                "runner.seed=5",
                f"runner.logging.log_dir={json.dumps(str(root))}",
                f"runner.logging.run_name=w2_{sync}",
                "algo.num_mini_batches=1",
                "algo.num_epochs=1",
                # every world at step 0: the schedule above (the first resets at the end of
                # the second iteration) is what the assertions below read
                "runner.random_episode_start=false",
            ],
        )
        train(cfg)
    return root


@pytest.fixture(scope="module")
def reports(runs) -> dict:
    return {sync: cr.analyze_run(runs / f"w2_{sync}") for sync in ("local", "global")}


def _weighted_mean(point: dict) -> float:
    return sum(r["mean"] * r["worlds"] for r in point["ranks"]) / sum(
        r["worlds"] for r in point["ranks"]
    )


def test_local_levels_drift_apart_without_a_curriculum_collective(reports):
    doc = reports["local"]
    assert (doc["sync"], doc["world_size"], doc["task"]) == ("local", 2, "go1-velocity-rough")
    points = doc["points"]
    assert [p["iteration"] for p in points] == [1, 2]
    assert [p["env_steps"] for p in points] == [2 * ENVS * STEPS, 4 * ENVS * STEPS]
    assert all(p["train_s"] > 0 for p in points) and points[1]["train_s"] > points[0]["train_s"]
    for p in points:
        assert [r["worlds"] for r in p["ranks"]] == [ENVS, ENVS]
        assert all(sum(r["hist"]) == pytest.approx(1.0) for r in p["ranks"])
        # `local` changes no level at the sync: the checkpoint's levels are those logged
        assert p["logged_mean"] == pytest.approx(_weighted_mean(p))
    # the same start on every rank (no world reset in the first iteration), apart at the end
    assert points[0]["identical"] and points[0]["spread"] == 0.0
    assert not points[-1]["identical"] and points[-1]["differ_fraction"] > 0
    assert points[-1]["hist_distance"] > 0
    cost = doc["collectives"]
    assert cost["iterations"] == ITERATIONS and cost["keys"] == []  # no sync ran a collective
    assert cost["curriculum_collectives_per_iteration"] == 0.0
    assert cost["curriculum_bytes_per_iteration"] == 0.0
    assert cost["iterations_with_curriculum_collectives"] == 0
    assert cost["collectives_per_iteration"] > 0  # the update's and the rollout's
    assert cost["curriculum_share_of_collectives"] == 0.0
    assert cost["sync_timed_iterations"] == ITERATIONS and 0.0 <= cost["sync_s"] < 1.0


def test_global_levels_stay_identical_at_one_all_reduce_per_iteration(reports):
    doc = reports["global"]
    points = doc["points"]
    assert [p["iteration"] for p in points] == [1, 2]
    assert all(p["identical"] and p["spread"] == 0.0 for p in points)
    assert all(p["differ_fraction"] == 0.0 and p["hist_distance"] == 0.0 for p in points)
    # the levels did move (every world reset in the second iteration): identical, not frozen
    assert points[0]["ranks"][0]["hist"] != points[1]["ranks"][0]["hist"]
    # both modes start from the same levels (the terrain's seed, not the rank's)
    assert points[0]["ranks"][0]["hist"] == reports["local"]["points"][0]["ranks"][0]["hist"]
    cost = doc["collectives"]
    assert cost["keys"] == list(cr.PHASE_KEYS)
    assert cost["curriculum_collectives_per_iteration"] == 1.0  # one all-reduce
    assert cost["curriculum_bytes_per_iteration"] == 2 * ENVS * 4  # int32 [2, N] outcome counts
    assert cost["iterations_with_curriculum_collectives"] == ITERATIONS
    assert cost["curriculum_share_of_collectives"] == pytest.approx(
        1.0 / cost["collectives_per_iteration"]
    )
    # the runner timed the sync (outside perf/iteration_s) in every iteration
    assert cost["sync_timed_iterations"] == ITERATIONS and 0.0 < cost["sync_s"] < 10.0
    assert 0.0 < cost["sync_fraction"] < 10.0 and doc["notes"] == []


def test_the_command_line_writes_a_json_per_run_and_prints_the_table_last(runs, tmp_path, capsys):
    docs = cr.main([str(runs), "--out", str(tmp_path)])  # a folder of runs
    assert [d["run"] for d in docs] == ["w2_global", "w2_local"]
    for d in docs:
        saved = json.loads((tmp_path / f"curriculum_ranks_{d['run']}.json").read_text())
        assert saved["kind"] == "curriculum_ranks" and saved["points"] == d["points"]
    lines = capsys.readouterr().out.strip().splitlines()
    header, row_global, row_local = lines[-3:]
    assert header.split()[:3] == ["run", "sync", "W"]
    assert row_global.split()[:6] == ["w2_global", "global", "2", "2", "2", "0.000"]
    assert row_global.split()[6:8] == ["True", "1.00"]
    assert row_local.split()[:3] == ["w2_local", "local", "2"]
    assert row_local.split()[6:8] == ["False", "0.00"]
    # a run's own folder and its checkpoints folder name the same run
    assert cr.find_runs(runs / "w2_local") == cr.find_runs(runs / "w2_local" / "checkpoints")


def test_a_run_without_metrics_still_gives_its_levels(runs, reports, tmp_path):
    run = tmp_path / "w2_local"
    run.mkdir()
    os.symlink(runs / "w2_local" / "checkpoints", run / "checkpoints")
    doc = cr.analyze_run(run)
    assert doc["collectives"] is None
    assert any("metrics.jsonl" in note and "cost is not reported" in note for note in doc["notes"])
    kept = ("iteration", "ranks", "spread", "identical", "differ_fraction")
    assert [{k: p[k] for k in kept} for p in doc["points"]] == [
        {k: p[k] for k in kept} for p in reports["local"]["points"]
    ]
    assert all(p["train_s"] is None and p["logged_mean"] is None for p in doc["points"])


def test_a_folder_without_checkpoints_is_refused_naming_the_fix(tmp_path):
    with pytest.raises(SystemExit, match=r"no checkpoints.*--save-interval"):
        cr.find_runs(tmp_path)
    copied = tmp_path / "ttt_go1rough_local_w2"  # what the driver copies to $OUT: no checkpoints
    copied.mkdir()
    (copied / "metrics.jsonl").write_text('{"iteration": 1}\n')
    with pytest.raises(SystemExit, match="no checkpoints"):
        cr.main([str(copied), "--out", str(tmp_path)])
    (copied / "checkpoints").mkdir()  # a checkpoints folder that holds none
    with pytest.raises(SystemExit, match="no checkpoints"):
        cr.analyze_run(copied)
    with pytest.raises(SystemExit, match="no such folder"):
        cr.find_runs(tmp_path / "absent")


def test_a_checkpoint_without_per_world_levels_is_refused(tmp_path):
    where = tmp_path / "ckpt_000001.pt"
    for states in ([None, None], [{"level": 2.0}, {"level": 2.0}], [], None):
        with pytest.raises(SystemExit, match=r"per-rank curriculum|per-world curriculum"):
            cr.rank_levels({"task": "go1-velocity-flat", "curriculum": states}, where)
    torch = pytest.importorskip("torch")
    checkpoint = pytest.importorskip("unilab_integration._checkpoint")
    run = tmp_path / "flat"
    (run / "checkpoints").mkdir(parents=True)
    flat = {
        "format": "unilab-checkpoint",
        "version": checkpoint.VERSION,
        "task": "go1-velocity-flat",
        "iteration": 1,
    }
    torch.save({**flat, "curriculum": [None, None]}, run / "checkpoints" / "ckpt_000001.pt")
    with pytest.raises(SystemExit, match="'go1-velocity-flat' has no per-world curriculum"):
        cr.main([str(run), "--out", str(tmp_path)])


def test_rank_comparison_numbers():
    out = cr.compare_ranks([[0, 1, 2, 3], [0, 1, 3, 3], [0, 1, 2, 3]], ROWS)
    assert [r["mean"] for r in out["ranks"]] == [1.5, 1.75, 1.5]
    assert out["ranks"][1]["hist"] == [0.25, 0.25, 0.0, 0.5]
    assert out["spread"] == 0.25
    assert out["hist_distance"] == pytest.approx(0.25)  # 0.5 x (0.25 + 0.25)
    assert out["differ_fraction"] == 0.25 and out["identical"] is False
    same = cr.compare_ranks([[2, 0, 1]] * 2, 3)
    assert same["identical"] and same["spread"] == same["differ_fraction"] == 0.0


def _rows(n: int, sync_s: float | None = 0.002):
    """Metrics lines as rank 0 logs them: iterations of 1 s, the sync's seconds, and
    `dist/curriculum/*` from the third line on (the first sync with a collective)."""
    rows = []
    for i in range(1, n + 1):
        row = {"iteration": i, "perf/iteration_s": 1.0}
        row.update({"dist/collectives": 10.0, "dist/bytes": 1000.0})
        if sync_s is not None:
            row["perf/curriculum_sync_s"] = sync_s * i
        if i >= 3:
            row.update({"dist/curriculum/collectives": 1.0, "dist/curriculum/bytes": 56.0})
        rows.append(row)
    return rows


def test_the_cost_is_the_collectives_and_the_timed_sync():
    cost = cr.collective_cost(_rows(10))
    assert cost["curriculum_collectives_per_iteration"] == pytest.approx(0.8)  # 8 of 10 lines
    assert cost["curriculum_bytes_per_iteration"] == pytest.approx(0.8 * 56)
    assert cost["curriculum_share_of_collectives"] == pytest.approx(0.08)
    assert (
        cost["keys"] == list(cr.PHASE_KEYS) and cost["iterations_with_curriculum_collectives"] == 8
    )
    assert cost["sync_s"] == pytest.approx(0.011) and cost["sync_s_median"] == pytest.approx(0.011)
    assert cost["sync_fraction"] == pytest.approx(0.011) and cost["sync_timed_iterations"] == 10
    untimed = cr.collective_cost(_rows(4, sync_s=None))  # a run older than the metric
    assert untimed["sync_s"] is None and untimed["sync_fraction"] is None


def test_plot_curves_reads_the_documents(tmp_path):
    point = {"iteration": 1, "env_steps": 140.0, "spread": 0.25}
    point["ranks"] = [{"mean": 1.5}, {"mean": 1.75}]
    doc = {"kind": "curriculum_ranks", "run": "w2_local", "sync": "local", "world_size": 2}
    doc["points"] = [point, {**point, "iteration": 2}]
    (tmp_path / "curriculum_ranks_w2_local.json").write_text(json.dumps(doc))
    ranks: list = []
    curves, scaling, _ = plot_curves.collect(
        plot_curves.load([str(tmp_path)]), {}, [], "time_s", [], [], ranks
    )
    assert ranks == [doc] and not curves and not scaling
    pytest.importorskip("matplotlib")
    plot_curves.main([str(tmp_path), "--out", str(tmp_path)])
    assert (tmp_path / "curriculum_ranks.png").stat().st_size > 0
