"""The training budget: the iteration a run stops at, and which setting decided it.

A budget is the run's total, counted from its first iteration, on resume as well:
`--iterations 100` on a run resumed at iteration 60 runs 40 more, and `--env-steps S` stops
after the first iteration whose global env-step count (all ranks, every world size the run
had) reaches S. With both, the one reached first wins; `--until-solved` alone is capped at
`UNTIL_SOLVED_CAP` iterations.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

__all__ = ["UNTIL_SOLVED_CAP", "UNTIL_SOLVED_SOURCE", "Budget", "plan_budget"]

UNTIL_SOLVED_CAP = 500
"""Iteration cap of `--until-solved` when no other budget is given."""
UNTIL_SOLVED_SOURCE = "--until-solved's cap"
"""`Budget.source` of that cap: the run ends when solved, at the latest there."""


@attrs.frozen(kw_only=True)
class Budget:
    """`iterations`: the iteration the run stops at (a total; None: unbounded). `source`: the
    setting that decided it, as the first log line names it. `other`: what the other budget,
    when both are given, would have allowed."""

    iterations: int | None
    source: str
    other: str = ""

    def describe(self, start: int = 0) -> str:
        """The first log line's budget part, e.g. 'budget 8 iterations in all, 4 from
        iteration 4 (set by --iterations 8; --env-steps 8192 would end at 10)'."""
        if self.iterations is None:
            return "budget unbounded"
        left = f", {self.iterations - start} from iteration {start}" if start else ""
        other = f"; {self.other}" if self.other else ""
        return f"budget {self.iterations} iterations in all{left} (set by {self.source}{other})"


def plan_budget(
    config: Any, world_size: int, *, iteration: int = 0, env_steps_global: int = 0
) -> Budget:
    """The budget of `config` at `world_size` for a run now at `iteration` with
    `env_steps_global` env steps done (0 and 0 for a new run)."""
    run = config.runner
    per_iteration = run.num_steps_per_env * config.env.total(world_size)
    limits: list[tuple[int, str]] = []
    if run.iterations is not None:
        limits.append((run.iterations, f"--iterations {run.iterations}"))
    if run.env_steps is not None:
        left = max(run.env_steps - env_steps_global, 0)
        limits.append(
            (
                iteration + math.ceil(left / per_iteration),
                f"--env-steps {run.env_steps} at {per_iteration} global steps per iteration",
            )
        )
    if not limits:
        if run.until_solved:
            return Budget(iterations=UNTIL_SOLVED_CAP, source=UNTIL_SOLVED_SOURCE)
        return Budget(iterations=None, source="")
    first = min(limits, key=lambda limit: limit[0])  # ties: --iterations, listed first
    others = [limit for limit in limits if limit is not first]
    other = ""
    if others:
        stop, source = others[0]
        other = f"{source.split(' at ')[0]} would end at {stop}"
    return Budget(iterations=first[0], source=first[1], other=other)
