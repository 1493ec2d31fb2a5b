"""The `unilab-launch` command.

    unilab-launch [--gpus 0,1|all | --cpu-workers N] [--hosts h1,h2|slurm | --hostfile F]
                  [--seed S] [--log-dir D] [--timeout T] [--env K=V ...]
                  module:function [args ...]

Runs `function(*args)` (args as strings) on every worker. The working directory is on the
import path, as with `python -m`. Exit status: 0 when every worker finished, 1 when a worker
failed (its rank and traceback are printed on stderr), 2 for bad input (nothing was started),
130 after Ctrl-C and 143 after SIGTERM (every worker stopped, one line on stderr).

torch and torchrunx are imported only once the arguments are parsed and the settings
checked, so `--help` and argument errors answer without them.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from ._config import LaunchConfig, read_hostfile

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="unilab-launch",
        description="Run module:function on one worker per GPU, or N CPU workers, on one or "
        "many hosts (torchrunx).",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("--gpus", help="GPU indices '0,1' or 'all' (one NCCL worker per GPU)")
    where.add_argument("--cpu-workers", type=int, help="number of CPU workers (gloo) per host")
    hosts = p.add_mutually_exclusive_group()
    hosts.add_argument(
        "--hosts",
        help="comma-separated host names, or 'slurm': the nodes of the SLURM allocation "
        "(default: this machine)",
    )
    hosts.add_argument("--hostfile", help="file with one host name per line")
    p.add_argument("--seed", type=int, default=0, help="base seed; rank r uses seed + r")
    p.add_argument("--log-dir", help="folder for rank<R>.log files and failure records")
    p.add_argument("--timeout", type=float, default=1800.0, help="collective timeout (s)")
    p.add_argument("--agent-timeout", type=float, default=60.0, help="agent timeout (s)")
    p.add_argument("--num-threads", type=int, help="torch threads per worker")
    p.add_argument("--ssh-config", help="SSH config file for remote hosts")
    p.add_argument(
        "--env", action="append", default=[], metavar="KEY=VALUE", help="worker env (repeat)"
    )
    p.add_argument("--quiet", action="store_true", help="do not echo rank 0's output")
    p.add_argument("target", help="module:function to run")
    p.add_argument("args", nargs=argparse.REMAINDER, help="string arguments of the function")
    return p


def _env(pairs: Sequence[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--env expects KEY=VALUE, got {pair!r}")
        env[key] = value
    return env


def _config(ns: argparse.Namespace) -> LaunchConfig:
    hosts = read_hostfile(ns.hostfile) if ns.hostfile else ns.hosts
    return LaunchConfig(
        gpus=ns.gpus,
        cpu_workers=ns.cpu_workers,
        hosts=hosts,
        seed=ns.seed,
        env=_env(ns.env),
        log_dir=ns.log_dir,
        timeout=ns.timeout,
        agent_timeout=ns.agent_timeout,
        num_threads=ns.num_threads,
        ssh_config_file=ns.ssh_config,
        console=not ns.quiet,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Parse `argv` (default sys.argv[1:]), launch, and return the exit status."""
    parser = _parser()
    ns = parser.parse_args(argv)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        config = _config(ns)  # bad settings are refused here, before torch is imported
    except (ValueError, TypeError, FileNotFoundError) as exc:
        print(f"unilab-launch: error: {exc}", file=sys.stderr)
        return 2
    from ._launch import LaunchInterrupted, WorkerFailedError, launch

    try:
        launch(ns.target, tuple(ns.args), config=config)
    except WorkerFailedError as exc:
        print(f"unilab-launch: {exc}", file=sys.stderr)
        return 1
    except LaunchInterrupted as exc:
        print(f"unilab-launch: {exc}", file=sys.stderr)
        return 128 + getattr(signal, exc.signal)
    except (ValueError, TypeError, ImportError, FileNotFoundError, RuntimeError) as exc:
        print(f"unilab-launch: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
