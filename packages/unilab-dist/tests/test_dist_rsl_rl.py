"""The docs/dist-in-rsl-rl.md example (dist_rsl_rl_example.py) on 2 gloo ranks."""

from __future__ import annotations

import pytest
import torch

from unilab_dist.testing import run_distributed

pytest.importorskip("rsl_rl")

N_ENVS, STEPS, OBS, ACT = 8, 6, 3, 2
EPOCHS, MINIBATCHES = 2, 2


def rank_obs(rank: int, step: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(10 * rank + step)
    return torch.randn(N_ENVS, OBS, generator=g) * (1.0 + rank) + 3.0 * rank


def _train(ppo_class: type, rank: int, world_size: int) -> dict:
    from rsl_rl.models import MLPModel
    from rsl_rl.storage import RolloutStorage
    from tensordict import TensorDict

    import unilab_dist as ud

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
    alg = ppo_class(
        actor,
        critic,
        storage,
        num_learning_epochs=EPOCHS,
        num_mini_batches=MINIBATCHES,
        multi_gpu_cfg={"global_rank": rank, "local_rank": rank, "world_size": world_size},
    )
    alg.broadcast_parameters()
    ud.accounting.reset()
    for step in range(STEPS):
        alg.act(obs)
        obs = obs_at(step + 1)
        rewards = obs["policy"].sum(-1)
        alg.process_env_step(obs, rewards, torch.zeros(N_ENVS, dtype=torch.long), {})
    alg.compute_returns(obs)
    with ud.accounting.phase("update"):
        alg.update()
    try:
        ud.check_replicas({"actor": alg.actor, "critic": alg.critic}, [alg.optimizer])
        replicas = "identical"
    except ud.ReplicaMismatchError as e:
        replicas = str(e)
    norm = alg.actor.obs_normalizer
    return {
        "replicas": replicas,
        "mean": norm._mean[0].clone(),
        "var": norm._var[0].clone(),
        "count": int(norm.count),
        "acc": ud.accounting.snapshot(),
    }


def _example_body(rank: int, world_size: int) -> dict:
    from dist_rsl_rl_example import UniLabPPO
    from rsl_rl.algorithms import PPO

    return {"ours": _train(UniLabPPO, rank, world_size), "stock": _train(PPO, rank, world_size)}


def test_global_normalizer_in_one_process_matches_rsl_rl() -> None:
    from dist_rsl_rl_example import GlobalEmpiricalNormalization
    from rsl_rl.modules import EmpiricalNormalization

    ours, stock = GlobalEmpiricalNormalization(OBS, until=20), EmpiricalNormalization(OBS, until=20)
    for step in range(4):
        batch = rank_obs(1, step)
        ours.update(batch)
        stock.update(batch)
    assert int(ours.count) == int(stock.count) == 3 * N_ENVS  # `until` stops after 24 samples
    assert torch.allclose(ours._mean, stock._mean, rtol=1e-6, atol=1e-6)
    assert torch.allclose(ours._var, stock._var, rtol=1e-5, atol=1e-6)
    x = rank_obs(0, 9)
    assert torch.allclose(ours(x), stock(x), rtol=1e-5, atol=1e-5)


def test_rsl_rl_ppo_with_unilab_dist_keeps_replicas_and_normalizers_global() -> None:
    results = run_distributed(_example_body, 2, timeout=300.0)
    # what the normalizers saw: steps 1..STEPS of every rank (process_env_step's obs)
    seen = torch.cat([rank_obs(r, s) for s in range(1, STEPS + 1) for r in range(2)]).double()
    for res in results:
        ours = res["ours"]
        assert ours["replicas"] == "identical"
        assert ours["count"] == seen.shape[0] == 2 * STEPS * N_ENVS
        assert torch.allclose(ours["mean"].double(), seen.mean(0), rtol=1e-5, atol=1e-5)
        assert torch.allclose(ours["var"].double(), seen.var(0, unbiased=False), rtol=1e-5)
        updates = EPOCHS * MINIBATCHES
        # per minibatch: RSL-RL's own KL all-reduce and LR broadcast are not ours; ours are
        # the grad all-reduce (1) -- plus 2 normalizer all-gathers per env step outside
        assert ours["acc"]["update"]["collectives"] == updates
        assert ours["acc"]["default"]["collectives"] == 2 * STEPS + 2  # + check_replicas
    # stock RSL-RL: local normalizers, so the ranks' statistics differ and replicas diverge
    s0, s1 = results[0]["stock"], results[1]["stock"]
    assert s0["count"] == s1["count"] == STEPS * N_ENVS
    assert not torch.allclose(s0["mean"], s1["mean"])
    assert s0["replicas"].startswith("rank 1 differs from rank 0 in tensor 'actor.obs_normalizer")
    assert torch.equal(results[0]["ours"]["mean"], results[1]["ours"]["mean"])


def test_the_docs_page_shows_the_tested_code_verbatim() -> None:
    from pathlib import Path

    here = Path(__file__).resolve().parent
    page = here.parents[2] / "docs" / "dist-in-rsl-rl.md"
    if not page.exists():
        pytest.skip("docs/ not present (installed from an sdist)")
    code = (here / "dist_rsl_rl_example.py").read_text()
    block = page.read_text().split("```python\n", 1)[1].split("```", 1)[0]
    assert block == code
