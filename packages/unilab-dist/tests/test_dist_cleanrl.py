"""docs/dist.md's CleanRL walk-through: its unilab-dist lines in a CleanRL-shaped PPO
(dist_cleanrl_ppo.py) change nothing in one process and equal torch DDP on 2 gloo ranks."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from unilab_dist.testing import run_distributed

HERE = Path(__file__).resolve().parent


def test_the_unilab_lines_change_nothing_in_one_process(monkeypatch) -> None:
    from dist_cleanrl_ppo import train

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    plain, ours = train("none"), train("unilab")
    assert torch.equal(plain["state"], ours["state"])  # parameters and Adam state, bitwise


def _ranks_body(rank: int, world_size: int) -> dict:
    from dist_cleanrl_ppo import train

    return {"unilab": train("unilab"), "ddp": train("ddp")}


def test_two_ranks_match_ddp_bitwise_and_stay_replicas() -> None:
    results = run_distributed(_ranks_body, 2, timeout=300.0)
    for res in results:
        assert torch.equal(res["unilab"]["state"], res["ddp"]["state"])
    assert torch.equal(results[0]["unilab"]["state"], results[1]["unilab"]["state"])
    # per-rank seeds: rank 1's 4 envs start at seed 1 + 4, after rank 0's 1..4
    assert [int(r["unilab"]["seed"]) for r in results] == [1, 5]


def test_the_docs_diff_is_the_tested_lines() -> None:
    page = HERE.parents[2] / "docs" / "dist.md"
    if not page.exists():
        pytest.skip("docs/ not present (installed from an sdist)")
    diff = page.read_text().split("```diff\n", 1)[1].split("```", 1)[0]
    added = [line[1:].strip() for line in diff.splitlines() if line.startswith("+")]
    script = (HERE / "dist_cleanrl_ppo.py").read_text()
    assert len(added) == 6
    for line in added:
        code = line.replace("args.seed", "seed").replace("args.num_envs", "NUM_ENVS")
        assert code in script or line == "import unilab_dist", line
