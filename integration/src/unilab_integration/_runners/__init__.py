"""Runners: one per algorithm kind, living in one worker process each."""

from ._base import Runner, RunResult, iteration_budget
from ._guards import NonFiniteError
from .offpolicy import OffPolicyRunner
from .onpolicy import OnPolicyRunner

__all__ = [
    "NonFiniteError",
    "OffPolicyRunner",
    "OnPolicyRunner",
    "RunResult",
    "Runner",
    "iteration_budget",
    "make_runner",
]


def make_runner(config, ctx, run_dir) -> Runner:
    """The runner of `config.algo_name`'s kind for this rank."""
    from .._algorithms import algorithm_spec

    kind = algorithm_spec(config.algo_name).kind
    cls = OnPolicyRunner if kind == "on-policy" else OffPolicyRunner
    return cls(config, ctx, run_dir)
