"""The runner feeds curricula the env's own metric names, in each sync scope."""

import math

from unilab_envs import LevelCurriculum
from unilab_integration._episodes import means_from_sums
from unilab_integration._runners._stats import curriculum_metrics


def test_curriculum_metrics_use_the_env_names_and_nan_for_missing() -> None:
    sums = {
        "episode/count": 4.0,
        "episode/return_sum": 8.0,
        "episode/length_sum": 400.0,
        "episode_term/track_lin_vel_sum": 2.0,
    }
    means = means_from_sums(sums)
    got = curriculum_metrics(means, ("track_lin_vel", "return", "feet_air_time"))
    assert got["track_lin_vel"] == 0.5 and got["return"] == 2.0
    assert math.isnan(got["feet_air_time"])


def test_a_level_curriculum_moves_on_runner_metrics() -> None:
    curriculum = LevelCurriculum(metric="track_lin_vel", num_levels=3, up_threshold=0.4)
    means = means_from_sums({"episode/count": 2.0, "episode_term/track_lin_vel_sum": 1.0})
    assert curriculum.update(curriculum_metrics(means, curriculum.metric_keys))
    assert curriculum.state_dict()["index"] == 1
    none_ended = means_from_sums({"episode/count": 0.0, "episode_term/track_lin_vel_sum": 0.0})
    assert not curriculum.update(curriculum_metrics(none_ended, curriculum.metric_keys))


def test_play_restores_the_trained_curriculum_level() -> None:
    from types import SimpleNamespace

    from unilab_integration._restore import restore_curriculum

    def env():
        curriculum = LevelCurriculum(metric="track_lin_vel", num_levels=5, up_threshold=1.0)
        return SimpleNamespace(curriculum=curriculum)

    trained = LevelCurriculum(metric="track_lin_vel", num_levels=5, up_threshold=1.0)
    trained.update({"track_lin_vel": 2.0})
    trained.update({"track_lin_vel": 2.0})
    fresh = env()
    assert restore_curriculum(fresh, {"curriculum": [trained.state_dict(), None]}) == 0.5
    assert fresh.curriculum.state_dict() == trained.state_dict()
    # no state in the checkpoint: the env keeps its own; no curriculum at all: None
    assert restore_curriculum(env(), {"curriculum": [None]}) == 0.0
    assert restore_curriculum(SimpleNamespace(), {"curriculum": [trained.state_dict()]}) is None


def test_until_solved_counts_evaluations_only_when_there_are_evaluations() -> None:
    from types import SimpleNamespace

    from unilab_integration._runners._base import Runner

    runner = Runner.__new__(Runner)  # only what _solved reads
    runner.config = SimpleNamespace(runner=SimpleNamespace(solved_patience=2))
    runner.threshold, runner.solved_streak, runner.evaluator = 10.0, 0, object()
    assert not runner._solved({"episode/return": 50.0})  # training returns do not count
    assert not runner._solved({"episode/return": 1.0, "eval/return": 12.0})
    assert not runner._solved({"episode/return": 1.0})  # no evaluation: the streak stands
    assert runner._solved({"eval/return": 11.0})
    runner.evaluator, runner.solved_streak = None, 0  # without evaluations: training returns
    assert not runner._solved({"episode/return": 50.0})
    assert runner._solved({"episode/return": 50.0})


def _scalar_sync_on_rank(rank: int, world_size: int) -> dict[str, tuple[int, int, dict]]:
    """A level curriculum synced once by `CurriculumSync` in each mode on two ranks whose own
    episodes differ (rank 0: return 12, up; rank 1: return 5, no move) and whose reduced means
    say up (return 10.5): {mode: (index, curriculum collectives, logged metrics)}."""
    import unilab_dist
    from unilab_dist import DistContext
    from unilab_envs import EnvFeatures
    from unilab_integration._runners._curriculum import CurriculumSync

    ctx = DistContext(
        world_size=world_size, rank=rank, local_world_size=world_size, local_rank=rank
    )
    local = {"episode/return": [12.0, 5.0][rank]}
    out = {}
    for mode in ("local", "global", "rank0"):
        curriculum = LevelCurriculum(metric="return", num_levels=3, up_threshold=10.0)
        sync = CurriculumSync(EnvFeatures.of_curriculum(curriculum), mode, ctx)
        assert sync.active and not sync.per_world
        summed = unilab_dist.reduce_scalars(sync.payload(), op="sum")
        metrics = sync.metrics(summed)
        before = unilab_dist.accounting.snapshot().get("curriculum", {}).get("collectives", 0)
        sync.sync({"episode/return": 10.5}, local)
        after = unilab_dist.accounting.snapshot().get("curriculum", {}).get("collectives", 0)
        out[mode] = (curriculum.index, after - before, metrics)
    return out


def test_curriculum_sync_scalar_modes_on_two_ranks() -> None:
    from unilab_dist.testing import run_distributed

    r0, r1 = run_distributed(_scalar_sync_on_rank, 2)
    level = {"curriculum/level": 0.0}  # the level the episodes were collected under
    assert r0["local"] == (1, 0, level) and r1["local"] == (0, 0, level)  # each its own means
    assert r0["global"] == r1["global"] == (1, 0, level)  # the reduced means; no collective
    # rank 0's decision, one object broadcast (two collectives: its length, then its bytes)
    assert r0["rank0"] == r1["rank0"] == (1, 2, level)


def test_curriculum_sync_without_a_curriculum_does_nothing() -> None:
    from unilab_dist import DistContext
    from unilab_envs import EnvFeatures
    from unilab_integration._runners._curriculum import CurriculumSync

    sync = CurriculumSync(EnvFeatures(), "rank0", DistContext())
    assert not sync.active and sync.payload() == {} and sync.metrics({}) == {}
    sync.sync({}, {})
    assert sync.state() is None and sync.load([None], 0, 0, True) is False
