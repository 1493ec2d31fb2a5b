"""The device work of one control step of `go1-velocity-flat`, `go1-velocity-rough`,
`quadruped-velocity` and `humanoid-velocity`, counted on warp's CPU device, stays at or below
today's: a ceiling for changes to the tasks (a new launch per step costs every step of every
run; on CUDA the step is one graph of these).

Updating the ceilings: a change that removes launches lowers them (write the new counts into
`STEP_CEILINGS`); one that must add a launch raises them, with the reason in the commit. The
test prints the counts it saw (`pytest -s`). MuJoCo Warp's own launches (4 physics substeps and
the forward after the resets) change with its version: its ceilings move with an upgrade of
mujoco-warp, in the same commit.
"""

from __future__ import annotations

import pytest
import torch

import unilab_envs
from unilab_envs.testing import count_step_launches, mjlab_robot

# Per task, one env.step with mujoco-warp 4.0 and 4 worlds: UniLab's kernel launches (all but
# MuJoCo Warp's), MuJoCo Warp's, warp memsets and copies, torch operators.
STEP_CEILINGS = {
    "go1-velocity-flat": {"unilab": 14, "mujoco_warp": 564, "memory_ops": 103, "torch_ops": 25},
    # rough: the terrain-levels curriculum runs in the terms' reset kernel (one launch fewer)
    "go1-velocity-rough": {"unilab": 24, "mujoco_warp": 603, "memory_ops": 123, "torch_ops": 25},
    # as with their hand-written kernels (one evaluate and one observe kernel, as now the terms')
    "quadruped-velocity": {"unilab": 13, "mujoco_warp": 408, "memory_ops": 76, "torch_ops": 25},
    "humanoid-velocity": {"unilab": 13, "mujoco_warp": 408, "memory_ops": 76, "torch_ops": 25},
}


@pytest.mark.parametrize("task", sorted(STEP_CEILINGS))
def test_one_step_launches_no_more_than_today(task):
    if task.startswith("go1"):
        mjlab_robot("go1")
    env = unilab_envs.make(task, num_envs=4, seed=0)
    env.reset()
    gen = torch.Generator().manual_seed(0)
    env.step(torch.zeros(4, env.action_dim))  # first step: kernel loading
    counts = []
    for _ in range(2):
        c = count_step_launches(env, torch.rand(4, env.action_dim, generator=gen) * 2 - 1)
        physics = c.kernels_of("mujoco_warp")
        counts.append(
            {
                # every kernel that is not MuJoCo Warp's: the env's, the task's, generated ones
                "unilab": c.total_kernels - physics,
                "mujoco_warp": physics,
                "memory_ops": c.memory_ops,
                "torch_ops": c.torch_ops,
            }
        )
    print(task, counts[-1])
    assert counts[0] == counts[1], "the step's launches should not depend on the state"
    ceiling = STEP_CEILINGS[task]
    over = {k: (v, ceiling[k]) for k, v in counts[-1].items() if v > ceiling[k]}
    assert not over, f"{task}: one step launches more than the ceiling: {over} (count, ceiling)"
