"""`resolve_hosts`: a host list as given, or the nodes of the SLURM allocation.

The SLURM lookup is torchrunx's own (`torchrunx.utils.environment.in_slurm_job` and
`slurm_hosts`, which runs `scontrol show hostnames`); it runs when a launch starts, never when
a config is built.
"""

from __future__ import annotations

import os
import subprocess

from ._config import SLURM, parse_hosts

__all__ = ["resolve_hosts"]


def resolve_hosts(value: object) -> tuple[str, ...] | None:
    """The hosts of a launch: `parse_hosts(value)`, with "slurm" replaced by the allocation's
    nodes in SLURM's order (the first node gets ranks 0..k-1).

    Raises ValueError, naming SLURM, for "slurm" outside a SLURM allocation (neither
    SLURM_JOB_ID nor SLURM_JOBID set), when `scontrol` is missing or fails, or when it lists
    no node; the same errors as `parse_hosts` otherwise.
    """
    hosts = parse_hosts(value)
    if hosts != SLURM:
        return hosts
    from torchrunx.utils.environment import in_slurm_job, slurm_hosts

    if not in_slurm_job():
        raise ValueError(
            "hosts 'slurm': this process is not inside a SLURM allocation (neither "
            "SLURM_JOB_ID nor SLURM_JOBID is set); run it inside salloc or sbatch, or give "
            "the host names"
        )
    try:
        nodes = slurm_hosts()
    except (OSError, subprocess.CalledProcessError) as exc:
        raise ValueError(
            f"hosts 'slurm': `scontrol show hostnames` failed inside SLURM job {_job_id()}: {exc}"
        ) from None
    nodes = [n.strip() for n in nodes if n.strip()]
    if not nodes:
        raise ValueError(
            f"hosts 'slurm': `scontrol show hostnames` listed no node (SLURM job {_job_id()})"
        )
    return parse_hosts(nodes)  # type: ignore[return-value]  # a list never becomes "slurm"


def _job_id() -> str:
    return os.environ.get("SLURM_JOB_ID") or os.environ.get("SLURM_JOBID") or "?"
