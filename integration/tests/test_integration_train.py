"""End to end on CPU with 2 gloo workers: PPO, resume, export, play, distillation, FastSAC,
and the fault cases. Each launch costs tens of seconds of process start-up on CPU."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from unilab_envs import make_task
from unilab_integration import (
    apply_overrides,
    export_onnx,
    load_checkpoint,
    make_config,
    play,
    train,
)
from unilab_integration._play import play_episodes
from unilab_integration._restore import policy_from_checkpoint
from unilab_integration._rundir import process_start_ticks
from unilab_integration.cli import main

pytestmark = pytest.mark.slow

T, N, E, M = 16, 16, 5, 4


def _ppo_config(log_dir, name, *more):
    cfg = make_config("cartpole-balance", "ppo")
    return apply_overrides(
        cfg,
        [
            "launch.cpu_workers=2",
            f"env.num_envs={N}",
            f"runner.num_steps_per_env={T}",
            "runner.iterations=4",
            "runner.checkpoints.interval=2",
            "runner.logging.progress=false",
            'runner.logging.loggers=["console","jsonl"]',
            "runner.seed=3",
            f"runner.logging.log_dir={json.dumps(str(log_dir))}",
            f"runner.logging.run_name={name}",
            *more,
        ],
    )


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("runs")
    result = train(_ppo_config(log_dir, "straight"))
    return Path(result["run_dir"]), result


def _rows(run_dir):
    return [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_ppo_trains_logs_and_checkpoints(straight):
    run_dir, result = straight
    assert result["iterations"] == 4 and result["world_size"] == 2
    assert result["env_steps_global"] == 4 * T * N * 2
    assert result["env_steps_per_rank"] == 4 * T * N
    names = sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    assert names == ["ckpt_000002.pt", "ckpt_000004.pt", "latest"]
    assert json.loads((run_dir / "config.json").read_text())["env"]["num_envs"] == N
    for log in (run_dir / "logs").glob("*.log"):  # a successful run: no error, no shutdown noise
        text = log.read_text()
        assert " ERROR " not in text and "Traceback" not in text, (log.name, text)
    rows = _rows(run_dir)
    assert [r["iteration"] for r in rows] == [1, 2, 3, 4]
    for r in rows:
        # update: E*M gradient all-reduces; collect: per step one merge of the actor's and the
        # critic's global normalizers (fused), and the global advantage normalization
        assert r["dist/update/collectives"] == E * M
        assert r["dist/collect/collectives"] == T + 1
        assert r["dist/collectives"] == E * M + 1 + T
        assert r["env_steps/per_rank"] * 2 == r["env_steps/global"]
        assert r["perf/steps_per_s"] > 0
    ck = load_checkpoint(run_dir)
    assert ck["iteration"] == 4 and ck["world_size"] == 2 and len(ck["rng"]) == 2
    # replicated modules are identical on both ranks
    for key in ("actor", "critic"):
        for name, value in ck["learner"][0][key].items():
            assert torch.equal(value, ck["learner"][1][key][name]), name


@pytest.mark.parametrize("sync", ["global", "local"])
def test_curriculum_level_is_logged_per_iteration(tmp_path, sync):
    # 5-step episodes: a random policy's return (about 4.9) clears the cart-pole curriculum's
    # bar (0.9 x 4.5), so the level rises while the init angle stays small.
    kwargs = json.dumps({"curriculum": True, "max_episode_steps": 5})
    cfg = _ppo_config(
        tmp_path, f"curriculum_{sync}", f"env.kwargs={kwargs}", f"runner.curriculum_sync={sync}"
    )
    run_dir = Path(train(cfg)["run_dir"])
    levels = [r["curriculum/level"] for r in _rows(run_dir)]
    assert levels[:2] == [0.0, 0.25]  # the level each iteration collected under (rank mean)
    assert levels == sorted(levels) and all(x * 4 == round(x * 4) for x in levels)
    states = load_checkpoint(run_dir)["curriculum"]
    assert all(st["index"] >= round(levels[-1] * 4) for st in states)
    if sync == "global":  # the same decision on every rank
        assert states[0] == states[1]


def test_resume_same_world_size_is_bit_for_bit(straight, tmp_path):
    run_dir, _ = straight
    cfg = _ppo_config(tmp_path, "resumed")
    result = train(cfg, resume=str(run_dir / "checkpoints" / "ckpt_000002.pt"))
    assert result["iterations"] == 4
    a = load_checkpoint(run_dir / "checkpoints" / "ckpt_000004.pt")
    b = load_checkpoint(Path(result["run_dir"]))
    for rank in range(2):
        for key in ("actor", "critic"):
            for name, value in a["learner"][rank][key].items():
                assert torch.equal(value, b["learner"][rank][key][name]), (rank, key, name)
        assert a["learner"][rank]["learning_rate"] == b["learner"][rank]["learning_rate"]
        obs_a, obs_b = (c["obs"][rank]["data"]["obs"]["policy"] for c in (a, b))
        assert torch.equal(obs_a, obs_b)
    rows_a = _rows(run_dir)[2:]
    rows_b = _rows(Path(result["run_dir"]))
    assert [r["learner/value"] for r in rows_a] == [r["learner/value"] for r in rows_b]


def test_four_workers_on_two_hosts_train_in_lockstep(tmp_path):
    # The multi-GPU, multi-node paths (launch, gradient all-reduce, global normalizers and
    # advantages, metric reduction, checkpoint gather) with 4 gloo workers on two "hosts": two
    # loopback addresses, one agent each (started without SSH: both are this machine).
    cfg = apply_overrides(
        _ppo_config(tmp_path, "four"),
        [
            'launch.hosts="127.0.0.1,127.0.0.2"',
            "launch.cpu_workers=2",
            "env.num_envs=8",
            "runner.iterations=2",
        ],
    )
    result = train(cfg)
    assert result["world_size"] == 4 and result["iterations"] == 2
    assert result["env_steps_global"] == 2 * T * 8 * 4
    run_dir = Path(result["run_dir"])
    for r in _rows(run_dir):
        assert r["dist/collectives"] == E * M + 1 + T
        assert r["env_steps/per_rank"] * 4 == r["env_steps/global"]
    ck = load_checkpoint(run_dir)
    assert ck["world_size"] == 4 and len(ck["learner"]) == 4 and len(ck["env_state"]) == 4
    for rank in range(1, 4):
        for key in ("actor", "critic"):
            for name, value in ck["learner"][0][key].items():
                assert torch.equal(value, ck["learner"][rank][key][name]), (rank, key, name)
    # every rank stepped its own envs (seeded per rank): different observations
    assert not torch.equal(
        ck["obs"][0]["data"]["obs"]["policy"], ck["obs"][3]["data"]["obs"]["policy"]
    )


def _sha(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_resume_into_its_folder_at_another_world_size(straight, tmp_path, capsys, monkeypatch):
    # a copy of the 2-rank run (4 iterations, 2048 global steps), continued on 1 rank to a total
    # of 3072 global env steps: 4 more iterations of 16 x 16 steps, exactly
    run_dir = tmp_path / "straight"
    shutil.copytree(straight[0], run_dir)
    first_session = [
        "config.json",
        "logs/rank0.log",
        *(f"checkpoints/ckpt_00000{i}.pt" for i in (2, 4)),
    ]
    kept = {p: _sha(run_dir / p) for p in first_session}
    argv = ["train", "cartpole-balance", "--cpu-workers", "1", "--env-steps", "3072"]
    argv += [
        "--resume",
        str(run_dir),
        "--no-progress",
        "--set",
        'runner.logging.loggers=["console","jsonl"]',
    ]
    argv += ["--num-envs", str(N), "--env-scope", "per-rank"]
    monkeypatch.chdir(tmp_path)
    code = main([*argv, "--set", f"runner.num_steps_per_env={T}"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    # the last lines: the run folder (relative to the working directory) and the next commands
    assert out[-3:] == [
        "run folder straight; next:",
        "  unilab play straight --episodes 10",
        "  unilab export straight policy.onnx",
    ]
    assert main(out[-2].split()[1:]) == 0  # they work as printed
    played = capsys.readouterr().out
    assert "mean return" in played and "over 10 episodes" in played
    assert main(out[-1].split()[1:]) == 0
    assert (tmp_path / "policy.onnx").is_file()
    assert out[-4].startswith(
        "finished: 8 iterations, 3072 env steps in all; this session, from iteration 4: "
        "4 iterations, 1024 env steps (1024 per rank, 1 rank(s)); checkpoint "
    )
    ck = load_checkpoint(run_dir)
    assert ck["iteration"] == 8 and ck["world_size"] == 1
    assert ck["counters"]["env_steps_global"] == 3072
    assert [r["iteration"] for r in _rows(run_dir)] == list(range(1, 9))  # appended
    assert _rows(run_dir)[-1]["env_steps/global"] == 3072
    # what the first session wrote stays; this session's config and logs are its own
    assert {p: _sha(run_dir / p) for p in first_session} == kept
    session = json.loads((run_dir / "config.resume-4.json").read_text())
    assert session["runner"]["env_steps"] == 3072 and session["launch"]["cpu_workers"] == 1
    first = (run_dir / "logs" / "resume-4" / "rank0.log").read_text()
    assert (
        "budget 8 iterations in all, 4 from iteration 4 (set by --env-steps 3072 at 256 global "
        "steps per iteration)"
    ) in first
    text = (run_dir / "resume.log").read_text()
    assert "world size 2 -> 1" in text and "global envs 32 -> 16" in text
    assert not (run_dir / ".lock").exists()
    names = sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    # the run's checkpoint interval (2) continues: a checkpoint every 2 iterations
    assert names == [f"ckpt_00000{i}.pt" for i in (2, 4, 6, 8)] + ["latest"]
    assert main(["play", str(run_dir), "--episodes", "1", "--num-envs", "2"]) == 0


def _descendants(pid):
    """(pid, start ticks) of every process below `pid`."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append((child, process_start_ticks(child)))
            todo.append(child)
    return out


def test_a_live_trainer_locks_its_folder_until_sigterm(tmp_path, capsys):
    argv = ["train", "cartpole-balance", "--cpu-workers", "1", "--num-envs", "8"]
    argv += ["--env-scope", "per-rank", "--log-dir", str(tmp_path), "--no-progress"]
    argv += [
        "--set",
        'runner.logging.loggers=["console","jsonl"]',
        "--set",
        "runner.checkpoints.interval=1",
    ]
    cmd = [sys.executable, "-m", "unilab_integration.cli", *argv, "--run-name", "live"]
    with open(tmp_path / "trainer.out", "w") as log:
        trainer = subprocess.Popen([*cmd, "--iterations", "100000"], stdout=log, stderr=log)
    run_dir = tmp_path / "live"
    try:
        deadline = time.monotonic() + 240
        while not (run_dir / "checkpoints" / "latest").exists():
            assert trainer.poll() is None and time.monotonic() < deadline
            time.sleep(0.5)
        lock = json.loads((run_dir / ".lock").read_text())
        assert lock["pid"] == trainer.pid and lock["host"] == socket.gethostname()
        for more in (["--run-name", "live"], ["--resume", str(run_dir)]):
            assert main([*argv, "--iterations", "100001", *more]) == 2
            err = capsys.readouterr().err
            assert f"is in use by a live trainer (pid {trainer.pid} on host " in err
        workers = _descendants(trainer.pid)
        assert workers
        trainer.send_signal(signal.SIGTERM)
        assert trainer.wait(timeout=60) == 143
    finally:
        if trainer.poll() is None:
            trainer.kill()
    assert not (run_dir / ".lock").exists()
    deadline = time.monotonic() + 10
    while any(process_start_ticks(p) == t for p, t in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p, t in workers if process_start_ticks(p) == t]  # none left behind
    out = (tmp_path / "trainer.out").read_text()
    assert "unilab train: interrupted by SIGTERM; all workers were stopped" in out
    assert "Traceback" not in out  # one line, not the launcher's stack


def test_resume_refuses_another_task(straight, tmp_path, capsys):
    run_dir, _ = straight
    code = main(
        [
            "train",
            "cartpole-swingup",
            "--iterations",
            "1",
            "--resume",
            str(run_dir),
            "--log-dir",
            str(tmp_path),
        ]
    )
    assert code == 2
    assert (
        "trained with task 'cartpole-balance', this run uses 'cartpole-swingup'"
        in capsys.readouterr().err
    )


def test_teacher_from_another_task_is_refused_before_launch(straight, tmp_path, capsys):
    run_dir, _ = straight
    args = ["train", "cartpole-swingup", "--algo", "distill", "--iterations", "1"]
    code = main([*args, "--teacher", str(run_dir), "--log-dir", str(tmp_path)])
    assert code == 2
    assert "trained on task 'cartpole-balance', this run is task 'cartpole-swingup'" in (
        capsys.readouterr().err
    )
    assert not list(tmp_path.iterdir())  # refused before a run folder or a worker existed


def test_onnx_export_matches_torch(straight, tmp_path):
    run_dir, _ = straight
    _check_onnx_matches_policy(export_onnx(run_dir, tmp_path / "policy.onnx"), run_dir)
    # the normalizer is inside: a changed mean moves the exported output
    ck = load_checkpoint(run_dir)
    assert not torch.equal(ck["learner"][0]["actor"]["obs_normalizer.mean"], torch.zeros(5))


def test_play_returns_episodes(straight):
    run_dir, _ = straight
    returns = play(run_dir, episodes=3, num_envs=4, seed=1)
    assert len(returns) == 3 and all(math.isfinite(r) for r in returns)


def test_play_reports_each_reward_term_per_episode(straight, capsys):
    run_dir, _ = straight
    result = play_episodes(run_dir, episodes=5, num_envs=4, seed=1)
    assert result.curriculum_level is None  # cart-pole has no curriculum
    assert set(result.terms) == set(make_task("cartpole-balance").spec.log_terms)
    assert all(len(v) == len(result.returns) == 5 for v in result.terms.values())
    # the terms are the return's parts, episode by episode
    summed = [sum(parts) for parts in zip(*result.terms.values(), strict=True)]
    np.testing.assert_allclose(summed, result.returns, rtol=1e-4, atol=1e-4)
    assert main(["play", str(run_dir), "--episodes", "2", "--num-envs", "2"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {name}" in out for name in result.terms)


def test_distillation_from_ppo_teacher(straight, tmp_path):
    run_dir, _ = straight
    cfg = apply_overrides(
        make_config("cartpole-balance", "distill"),
        [
            "launch.cpu_workers=2",
            f"env.num_envs={N}",
            f"runner.num_steps_per_env={T}",
            "runner.iterations=2",
            "runner.logging.progress=false",
            'runner.logging.loggers=["console","jsonl"]',
            f"runner.teacher={json.dumps(str(run_dir))}",
            f"runner.logging.log_dir={json.dumps(str(tmp_path))}",
            "runner.logging.run_name=distill",
        ],
    )
    result = train(cfg)
    assert result["iterations"] == 2
    teacher = load_checkpoint(run_dir)["learner"][0]["actor"]
    student_ck = load_checkpoint(Path(result["run_dir"]))
    for name, value in teacher.items():
        assert torch.equal(student_ck["learner"][0]["teacher"][name], value), name
    # the checkpoint records the config the learner was built with: the teacher's network is
    # the PPO actor's (64, 64), not the distillation default's (512, 256, 128)
    teacher_algo = load_checkpoint(run_dir)["config"]["algo"]
    assert student_ck["config"]["algo"]["teacher"] == teacher_algo["actor"]
    assert student_ck["config"]["algo"]["teacher_obs"] == teacher_algo["actor_obs"]
    rows = _rows(Path(result["run_dir"]))
    assert len(rows) == 2 and all(math.isfinite(r["learner/behavior"]) for r in rows)


def _sac_config(log_dir, name, *more):
    return apply_overrides(
        make_config("cartpole-balance", "fastsac"),
        [
            "launch.cpu_workers=2",
            "env.num_envs=8",
            "runner.num_steps_per_env=8",
            "runner.iterations=4",
            "runner.checkpoints.interval=2",
            "runner.checkpoints.replay=true",
            "runner.deterministic=true",
            "runner.logging.progress=false",
            'runner.logging.loggers=["console","jsonl"]',
            "algo.learning_starts=4",
            "algo.capture=false",
            f"runner.logging.log_dir={json.dumps(str(log_dir))}",
            f"runner.logging.run_name={name}",
            *more,
        ],
    )


def test_fastsac_trains_and_resumes_bit_for_bit_with_its_replay(tmp_path):
    result = train(_sac_config(tmp_path, "sac"))
    assert result["iterations"] == 4
    run_dir = Path(result["run_dir"])
    rows = _rows(run_dir)
    # steps 4..8 of iteration 1 update (2 updates each), all 8 of the later iterations
    assert [r["learner/updates"] for r in rows] == [10.0, 16.0, 16.0, 16.0]
    ck = load_checkpoint(run_dir)
    for name, value in ck["learner"][0]["actor"].items():
        assert torch.equal(value, ck["learner"][1]["actor"][name]), name
    assert "replay" in ck["learner"][0]
    # resume from iteration 2: the replay shards come back, so the run continues exactly
    resumed = train(
        _sac_config(tmp_path, "sac_resumed"), resume=str(run_dir / "checkpoints" / "ckpt_000002.pt")
    )
    b = load_checkpoint(Path(resumed["run_dir"]))
    for rank in range(2):
        for key in ("actor", "critic", "critic_target"):
            for name, value in ck["learner"][rank][key].items():
                assert torch.equal(value, b["learner"][rank][key][name]), (rank, key, name)
    assert [r["learner/critic_loss"] for r in rows[2:]] == [
        r["learner/critic_loss"] for r in _rows(Path(resumed["run_dir"]))
    ]
    with pytest.raises(
        ValueError,
        match=r"checkpoints\.replay applies to algorithms with a replay buffer \(fastsac\)",
    ):
        apply_overrides(make_config("cartpole-balance", "ppo"), ["runner.checkpoints.replay=true"])
    # a FastSAC checkpoint plays (deterministic policy) and exports like a PPO one
    played = play_episodes(run_dir, episodes=2, num_envs=2, seed=1)
    assert len(played.returns) == 2 and set(played.terms) >= {"alive"}
    out = export_onnx(run_dir, tmp_path / "sac.onnx")
    _check_onnx_matches_policy(out, run_dir)


def _check_onnx_matches_policy(onnx_file, run_dir):
    """The exported ONNX policy computes the checkpoint's torch policy on random observations,
    clamped to cart-pole's action bound as `play` clamps it."""
    import onnxruntime as ort

    policy, _, _ = policy_from_checkpoint(run_dir)
    bound = make_task("cartpole-balance").spec.action_bound
    obs = torch.randn(7, 5, generator=torch.Generator().manual_seed(0)) * 2
    with torch.no_grad():
        expected = policy(obs).clamp(-bound, bound).numpy()
    session = ort.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    got = session.run(["actions"], {"obs": obs.numpy()})[0]
    assert got.shape == (7, 1)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def _learner_rows(rows):
    return [{k: v for k, v in r.items() if k.startswith("learner/")} for r in rows]


def _check_evaluations(rows, every, worlds):
    for r in rows:
        if r["iteration"] % every:
            assert not any(k.startswith("eval") for k in r), r["iteration"]
            continue
        assert r["eval/count"] == worlds  # the first episode of every world, all ranks
        terms = sum(v for k, v in r.items() if k.startswith("eval_term/"))
        assert math.isclose(terms, r["eval/return"], rel_tol=1e-4, abs_tol=1e-4)
        assert 1 <= r["eval/length"] <= 500 and r["perf/eval_s"] > 0


def test_evaluations_log_the_deterministic_policy_and_leave_training_unchanged(tmp_path):
    plain = train(_sac_config(tmp_path, "sac_plain"))
    evaluated = train(
        _sac_config(tmp_path, "sac_eval", "runner.eval.interval=2", "runner.eval.envs=3")
    )
    rows = _rows(Path(evaluated["run_dir"]))
    _check_evaluations(rows, every=2, worlds=6)
    assert _learner_rows(rows) == _learner_rows(_rows(Path(plain["run_dir"])))
    a, b = load_checkpoint(Path(plain["run_dir"])), load_checkpoint(Path(evaluated["run_dir"]))
    for name, value in a["learner"][0]["actor"].items():
        assert torch.equal(value, b["learner"][0]["actor"][name]), name


def test_ppo_evaluations_leave_training_unchanged(straight, tmp_path):
    run_dir, _ = straight
    result = train(_ppo_config(tmp_path, "ppo_eval", "runner.eval.interval=2"))
    rows = _rows(Path(result["run_dir"]))
    _check_evaluations(rows, every=2, worlds=2 * N)  # default: all of a rank's worlds (<= 1024)
    assert _learner_rows(rows) == _learner_rows(_rows(run_dir))


def test_nan_observation_stops_the_run(tmp_path, capsys):
    start = time.monotonic()
    code = main(
        [
            "train",
            "cartpole-balance",
            "--cpu-workers",
            "2",
            "--num-envs",
            "8",
            "--env-scope",
            "per-rank",
            "--iterations",
            "2",
            "--no-progress",
            "--log-dir",
            str(tmp_path),
            "--run-name",
            "nan",
            "--set",
            "env.kwargs.init_angle=NaN",
            "--timeout",
            "60",
        ]
    )
    err = capsys.readouterr().err
    assert code == 1
    assert "non-finite observation in group 'policy' on rank" in err
    assert "at iteration 0 (before the first step)" in err
    assert not (tmp_path / "nan" / "checkpoints").exists()
    assert time.monotonic() - start < 300


def test_cartpole_ppo_reaches_the_success_threshold(tmp_path, capsys):
    """README's demo: 2 CPU workers, PPO, until the task's threshold (450) is reached."""
    code = main(
        [
            "train",
            "cartpole-balance",
            "--algo",
            "ppo",
            "--cpu-workers",
            "2",
            "--until-solved",
            "--log-dir",
            str(tmp_path),
            "--run-name",
            "demo",
            "--set",
            'runner.logging.loggers=["console","jsonl"]',
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[-4].startswith("solved: ")
    assert out.splitlines()[-3] == f"run folder {tmp_path / 'demo'}; next:"
    rows = _rows(tmp_path / "demo")
    assert all(r["episode/return"] >= 450.0 for r in rows[-2:])
    assert len(rows) < 500


def test_ppo_with_rnd_trains_through_the_cli(tmp_path, capsys):
    """`--set algo.rnd.<field>` reaches the workers as an RNDConfig (they rebuild the config
    from config.json, where a None-default field used to come back as a plain dict). The
    replica check runs every iteration and passes: RND's target, predictor and normalizer and
    every optimizer stay identical on both ranks."""
    code = main(
        [
            "train",
            "cartpole-balance",
            "--cpu-workers",
            "2",
            "--num-envs",
            "8",
            "--env-scope",
            "per-rank",
            "--iterations",
            "2",
            "--no-progress",
            "--log-dir",
            str(tmp_path),
            "--run-name",
            "rnd",
            *("--set", 'runner.logging.loggers=["console","jsonl"]'),
            *("--set", "algo.rnd.weight=0.5"),
            *("--set", "algo.rnd.predictor_hidden=[16]"),
            *("--set", "algo.rnd.target_hidden=[16]"),
            *("--set", "runner.check_replicas_interval=1"),
        ]
    )
    assert code == 0, capsys.readouterr().err
    rows = _rows(tmp_path / "rnd")
    assert len(rows) == 2
    assert all(r["learner/rnd"] > 0.0 for r in rows)  # the predictor's loss: RND ran
    assert all(0.0 < r["perf/check_replicas_s"] < 10.0 for r in rows)
    ckpt = load_checkpoint(tmp_path / "rnd")
    assert list(ckpt["config"]["algo"]["rnd"]["predictor_hidden"]) == [16]
    assert "rnd" in ckpt["learner"][0]


def test_replica_check_stops_a_run_whose_ranks_diverge(tmp_path, capsys, monkeypatch):
    """Rank 1 nudges one critic weight after its second update (a test module imported by
    every worker through runner.imports); the check of iteration 2 stops every rank, naming
    the rank and the tensor."""
    here = str(Path(__file__).parent)
    monkeypatch.syspath_prepend(here)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    code = main(
        [
            "train",
            "cartpole-balance",
            "--cpu-workers",
            "2",
            "--num-envs",
            "8",
            "--env-scope",
            "per-rank",
            "--iterations",
            "3",
            "--no-progress",
            "--log-dir",
            str(tmp_path),
            "--run-name",
            "diverged",
            "--timeout",
            "60",
            *("--set", 'runner.imports=["_unilab_diverging_rank"]'),
            *("--set", "runner.check_replicas_interval=1"),
            *("--set", 'runner.logging.loggers=["console","jsonl"]'),
        ]
    )
    err = capsys.readouterr().err
    assert code == 1
    assert "replicas differ at iteration 2 (runner.check_replicas_interval=1)" in err
    assert "rank 1" in err and "ValueCritic[1].mlp.0.weight" in err
    assert len(_rows(tmp_path / "diverged")) == 1  # iteration 1 passed its check and logged


def test_a_foreign_env_without_features_trains_with_conservative_defaults(tmp_path, monkeypatch):
    # _unilab_foreign_env (imported by every worker through runner.imports) makes the runner's
    # env a plain object with the step contract alone: no features, no optional method
    here = str(Path(__file__).parent)
    monkeypatch.syspath_prepend(here)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    )
    more = ["launch.cpu_workers=1", "runner.iterations=2", 'runner.imports=["_unilab_foreign_env"]']
    result = train(_ppo_config(tmp_path, "foreign", *more))
    assert result["iterations"] == 2 and result["env_steps_global"] == 2 * T * N
    run_dir = Path(result["run_dir"])
    log = (run_dir / "logs" / "rank0.log").read_text()
    assert "| env step eager (not a unilab_envs VecEnv: it reports no features) |" in log
    ckpt = load_checkpoint(result["checkpoint"])
    assert ckpt["iteration"] == 2
    assert ckpt["env_state"] == [None] and ckpt["curriculum"] == [None]  # nothing it lacks
    rows = _rows(run_dir)
    assert [r["iteration"] for r in rows] == [1, 2]
    assert all(math.isfinite(r["learner/value"]) for r in rows)
    assert not [k for r in rows for k in r if k.startswith("curriculum/")]
