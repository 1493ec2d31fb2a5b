"""unilab_dist.contrib.rsl_rl: RSL-RL 5.4.2's OnPolicyRunner data-parallel on gloo.

The first test runs docs/dist-in-rsl-rl.md's script (dist_rsl_rl_train.py) exactly as the page
launches it; the others check the adapter's parts against the data of both ranks.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from unilab_dist.testing import run_distributed

if os.environ.get("UNILAB_REQUIRE_RSL_RL") != "1":
    pytest.importorskip("rsl_rl")

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "dist_rsl_rl_train.py"
N_ENVS, STEPS, OBS, ACT = 8, 6, 3, 2
EPOCHS, MINIBATCHES = 2, 2
# docs/dist-in-rsl-rl.md: per iteration, one all-gather per env step (actor and critic share
# it), one for the advantages, one gradient all-reduce per mini-batch; two broadcasts at start
# (float32 and int64 state) and check_replicas' two
DOCUMENTED = {"broadcast": 2, "rollout": 5 * 16, "returns": 5, "update": 5 * 2 * 2, "default": 2}


def run_docs_script(**env: str) -> None:
    """The page's command, `torchrun --standalone --nproc-per-node 2 train_rsl_rl.py`."""
    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent)) or "torchrun"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **env}
    done = subprocess.run(
        [torchrun, "--standalone", "--nproc-per-node", "2", SCRIPT.name],
        cwd=HERE, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found = re.findall(
        r"rank (\d): seed (\d+), replicas identical, state sha256 (\w+)", done.stdout
    )
    assert sorted((rank, seed) for rank, seed, _ in found) == [("0", "1"), ("1", "65")]
    assert len({digest for _, _, digest in found}) == 1  # bitwise the same actor and critic
    for rank in "01":
        (line,) = re.findall(rf"rank {rank}: collectives (.*)", done.stdout)
        counts = {phase: v["collectives"] for phase, v in ast.literal_eval(line).items()}
        assert counts == DOCUMENTED


def test_the_docs_script_trains_two_cpu_ranks_into_bitwise_equal_replicas() -> None:
    run_docs_script(CUDA_VISIBLE_DEVICES="")  # gloo, whatever the machine has


@pytest.mark.multigpu
def test_the_docs_script_on_two_gpus_adopts_rsl_rl_nccl_group() -> None:
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 CUDA GPUs")
    run_docs_script()


def test_the_docs_page_opens_with_the_tested_script() -> None:
    page = HERE.parents[2] / "docs" / "dist-in-rsl-rl.md"
    if not page.exists():
        pytest.skip("docs/ not present (installed from an sdist)")
    text = page.read_text()
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    assert block == SCRIPT.read_text()
    assert text.index("```python") < text.index("\n## ")  # before the first section


def rank_obs(rank: int, step: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(10 * rank + step)
    return torch.randn(N_ENVS, OBS, generator=g) * (1.0 + rank) + 3.0 * rank


def _train(rank: int, world_size: int, advantages: str, stock: bool) -> dict:
    from rsl_rl.algorithms import PPO
    from rsl_rl.models import MLPModel
    from rsl_rl.storage import RolloutStorage
    from tensordict import TensorDict

    import unilab_dist as ud
    from unilab_dist.contrib.rsl_rl import DataParallelPPO

    ud.seed_everything(ud.seed_for_rank(0, rank))  # different init per rank: broadcast fixes it

    def obs_at(step: int) -> TensorDict:
        return TensorDict({"policy": rank_obs(rank, step)}, batch_size=[N_ENVS])

    obs = obs_at(0)
    groups = {"actor": ["policy"], "critic": ["policy"]}
    gauss = {"class_name": "rsl_rl.modules.distribution:GaussianDistribution"}
    actor = MLPModel(
        obs, groups, "actor", ACT, [16], obs_normalization=True, distribution_cfg=gauss
    )
    critic = MLPModel(obs, groups, "critic", 1, [16], obs_normalization=True)
    storage = RolloutStorage("rl", N_ENVS, STEPS, obs, [ACT], "cpu")
    kwargs = {} if stock else {"advantage_normalization": advantages}
    alg = (PPO if stock else DataParallelPPO)(
        actor, critic, storage, num_learning_epochs=EPOCHS, num_mini_batches=MINIBATCHES,
        multi_gpu_cfg={"global_rank": rank, "local_rank": rank, "world_size": world_size},
        **kwargs,
    )  # fmt: skip
    alg.broadcast_parameters()
    ud.accounting.reset()
    for step in range(STEPS):
        alg.act(obs)
        obs = obs_at(step + 1)
        alg.process_env_step(obs, obs["policy"].sum(-1), torch.zeros(N_ENVS, dtype=torch.long), {})
    alg.compute_returns(obs)
    raw_advantages = (alg.storage.returns - alg.storage.values).clone()
    normalized = alg.storage.advantages.clone()
    alg.update()
    try:
        ud.check_replicas({"actor": alg.actor, "critic": alg.critic}, [alg.optimizer])
        replicas = "identical"
    except ud.ReplicaMismatchError as e:
        replicas = str(e)
    norms = [alg.actor.obs_normalizer, alg.critic.obs_normalizer]
    return {
        "replicas": replicas,
        "mean": [n._mean[0].clone() for n in norms],
        "var": [n._var[0].clone() for n in norms],
        "count": [int(n.count) for n in norms],
        "raw": raw_advantages,
        "normalized": normalized,
        "acc": ud.accounting.snapshot(),
    }


def _body(rank: int, world_size: int) -> dict:
    return {
        "global": _train(rank, world_size, "global", stock=False),
        "per_rank": _train(rank, world_size, "per_rank", stock=False),
        "stock": _train(rank, world_size, "per_rank", stock=True),
    }


def test_normalizers_and_advantages_are_global_and_replicas_identical() -> None:
    results = run_distributed(_body, 2, timeout=300.0)
    seen = torch.cat([rank_obs(r, s) for s in range(1, STEPS + 1) for r in range(2)]).double()
    raw = torch.cat([res["global"]["raw"].reshape(-1) for res in results]).double()
    for res in results:
        ours = res["global"]
        assert ours["replicas"] == "identical"
        for i in range(2):  # actor and critic: the same statistics, from one all-gather per step
            assert ours["count"][i] == seen.shape[0] == 2 * STEPS * N_ENVS
            assert torch.allclose(ours["mean"][i].double(), seen.mean(0), rtol=1e-5, atol=1e-5)
            assert torch.allclose(ours["var"][i].double(), seen.var(0, unbiased=False), rtol=1e-5)
        assert ours["acc"]["rollout"]["collectives"] == STEPS
        assert ours["acc"]["returns"]["collectives"] == 1
        assert ours["acc"]["update"]["collectives"] == EPOCHS * MINIBATCHES
        # global advantages: the mean and (unbiased) std of both ranks' advantages
        own = ours["raw"].double()
        expected = (own - raw.mean()) / (raw.std() + 1e-8)
        assert torch.allclose(ours["normalized"].double(), expected, rtol=1e-5, atol=1e-5)
        # per rank: RSL-RL's own normalization of this rank's advantages, no collective
        local = res["per_rank"]
        own = local["raw"]
        assert torch.allclose(local["normalized"], (own - own.mean()) / (own.std() + 1e-8))
        assert "returns" not in local["acc"] and local["replicas"] == "identical"
    assert results[0]["global"]["normalized"].mean() != 0  # not each rank's own zero mean
    for key in ("mean", "var"):
        assert torch.equal(results[0]["global"][key][0], results[1]["global"][key][0])
    # stock RSL-RL: local normalizers, so the ranks' statistics differ and replicas diverge
    s0, s1 = results[0]["stock"], results[1]["stock"]
    assert s0["count"][0] == s1["count"][0] == STEPS * N_ENVS
    assert not torch.allclose(s0["mean"][0], s1["mean"][0])
    assert s0["replicas"].startswith("rank 1 differs from rank 0 in tensor 'actor.obs_normalizer")


def test_wrong_rsl_rl_version_and_bad_settings_are_refused(monkeypatch) -> None:
    import importlib.metadata

    import unilab_dist.contrib.rsl_rl as adapter

    with pytest.raises(ValueError, match="advantage_normalization must be one of"):
        adapter.DataParallelPPO(None, None, None, advantage_normalization="local")
    with pytest.raises(ValueError, match="does not support RND"):
        adapter.DataParallelPPO(None, None, None, rnd_cfg={"weight": 1.0})
    with pytest.raises(ValueError, match="derive your algorithm from"):
        adapter.DataParallelRunner(None, {"algorithm": {"class_name": "Distillation"}})
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "5.3.0")
    with pytest.raises(ImportError, match=r"needs rsl-rl-lib 5\.4\.2, found 5\.3\.0: pip install"):
        importlib.reload(adapter)
    monkeypatch.undo()
    importlib.reload(adapter)
