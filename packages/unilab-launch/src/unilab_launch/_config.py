"""`LaunchConfig` and the parsing of GPU lists, host lists and host files.

Everything here is pure data and validation: no process is started, no CUDA call is made.
Checks that need the machine (how many GPUs are present, whether a host resolves) live in
`_launch.py` and run before any worker starts.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import attrs

__all__ = [
    "DEFAULT_ENV_PATTERNS",
    "LaunchConfig",
    "parse_gpus",
    "parse_hosts",
    "read_hostfile",
]

DEFAULT_ENV_PATTERNS: tuple[str, ...] = (
    "PATH",
    "LD_LIBRARY*",
    "LIBRARY_PATH",
    "VIRTUAL_ENV",
    "PYTHON*",
    "CUDA*",
    "NCCL*",
    "MUJOCO*",
    "MUJOCO_GL",
    "WARP*",
    "OMP*",
    "TORCH*",
    "PYTORCH*",
    "UNILAB*",
)
"""Launcher environment variables (fnmatch patterns) copied to workers on every host."""

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?"
_HOSTNAME_RE = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*\.?$")
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_gpus(value: object) -> tuple[int, ...] | Literal["all"] | None:
    """Normalize a GPU selection: None, "all", "0,1", 3 (-> (3,)) or [0, 1] -> tuple of ints.

    Raises ValueError for an empty list, a negative or duplicated index, or a malformed string;
    TypeError for anything that is not a string, an int or a sequence of ints.
    """
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.lower() == "all":
            return "all"
        parts = [p.strip() for p in text.split(",")]
        if not text or any(not p for p in parts):
            raise ValueError(f"malformed GPU list {value!r}: use 'all' or indices like '0,1'")
        try:
            indices = [int(p) for p in parts]
        except ValueError:
            raise ValueError(
                f"malformed GPU list {value!r}: use 'all' or indices like '0,1'"
            ) from None
    elif isinstance(value, bool):
        raise TypeError(f"gpus must be 'all', a string like '0,1' or ints, got {value!r}")
    elif isinstance(value, int):
        indices = [value]
    elif isinstance(value, Sequence):
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
            raise TypeError(f"gpus must be a sequence of ints, got {value!r}")
        indices = list(value)
    else:
        raise TypeError(f"gpus must be 'all', a string like '0,1' or ints, got {value!r}")
    if not indices:
        raise ValueError("gpus is empty: give at least one GPU index, or 'all'")
    if any(i < 0 for i in indices):
        raise ValueError(f"GPU indices must be >= 0, got {indices}")
    if len(set(indices)) != len(indices):
        raise ValueError(f"GPU indices must be distinct, got {indices}")
    return tuple(indices)


def _check_host(host: str, where: str) -> str:
    if not host:
        raise ValueError(f"malformed host list: empty host name in {where}")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if not _HOSTNAME_RE.match(host) or len(host) > 253:
            raise ValueError(
                f"malformed host list: {host!r} in {where} is not a host name or IP address"
            ) from None
    return host


SLURM = "slurm"
"""The host list that stands for the nodes of the SLURM allocation (see `resolve_hosts`)."""


def parse_hosts(value: object) -> tuple[str, ...] | Literal["slurm"] | None:
    """Normalize a host list: None, "h1,h2" or ["h1", "h2"] -> ("h1", "h2"); "slurm" stays.

    Each entry must be a host name (letters, digits, '-', '_', dots) or an IP address; the list
    must be non-empty and without duplicates (each host runs one agent, which starts all of its
    workers). Users, ports and keys come from the SSH config, not from the host list. The
    string "slurm" (any case) means the nodes of the SLURM allocation, looked up at launch;
    a host that is really named so goes in a list (["slurm"]) or a host file.
    """
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() == SLURM:
        return SLURM
    if isinstance(value, str):
        hosts = [h.strip() for h in value.split(",")]
        where = repr(value)
    elif isinstance(value, Sequence) and all(isinstance(h, str) for h in value):
        hosts = [h.strip() for h in value]
        where = repr(list(value))
    else:
        raise TypeError(f"hosts must be a string 'h1,h2' or a list of strings, got {value!r}")
    if not hosts or hosts == [""]:
        raise ValueError("malformed host list: it is empty")
    for h in hosts:
        _check_host(h, where)
    dupes = sorted({h for h in hosts if hosts.count(h) > 1})
    if dupes:
        raise ValueError(f"malformed host list: {dupes} appear more than once in {where}")
    return tuple(hosts)


def read_hostfile(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """Read one host per line; blank lines and text after '#' are ignored.

    Raises FileNotFoundError for a missing file and ValueError (naming the line) for a line
    that holds anything but one host name.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"host file {str(path)!r} does not exist")
    hosts: list[str] = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        if len(text.split()) != 1:
            raise ValueError(f"malformed host file {str(path)!r} line {number}: {line.strip()!r}")
        hosts.append(_check_host(text, f"{path}:{number}"))
    if not hosts:
        raise ValueError(f"host file {str(path)!r} lists no host")
    return parse_hosts(hosts)  # type: ignore[return-value]  # duplicates check


def _env_dict(value: Mapping[str, str] | None) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"env must be a mapping of str to str, got {type(value).__name__}")
    out = {}
    for k, v in value.items():
        if not isinstance(k, str) or not _ENV_NAME_RE.match(k):
            raise ValueError(f"env: {k!r} is not a valid environment variable name")
        if not isinstance(v, str):
            raise TypeError(f"env[{k!r}] must be a str, got {type(v).__name__}")
        out[k] = v
    return out


def _optional_path(value: object) -> Path | None:
    return None if value is None else Path(value)  # type: ignore[arg-type]


def _positive_int_or_none(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{attribute.name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{attribute.name} must be >= 1, got {value}")


def _positive_number(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{attribute.name} must be a number of seconds, got {value!r}")
    if not value > 0:
        raise ValueError(f"{attribute.name} must be > 0 seconds, got {value}")


def _seed(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"seed must be an int, got {type(value).__name__}")
    if not 0 <= value < 2**32:
        raise ValueError(f"seed must be in [0, 2**32 - 1], got {value}")


@attrs.frozen(kw_only=True)
class LaunchConfig:
    """Where and how `launch` runs its workers.

    Attributes:
        gpus: None, "all", or GPU indices (e.g. (0, 1) or "0,1"): one NCCL worker per GPU on
            every host; indices are relative to the launcher's CUDA_VISIBLE_DEVICES.
        cpu_workers: N CPU workers (gloo) per host. With neither `gpus` nor `cpu_workers`,
            every visible GPU is used, or one CPU worker when there is none.
        hosts: host names (None = this machine only), or "slurm": the nodes of the SLURM
            allocation, asked at launch (`resolve_hosts`). Agents are started over SSH
            (torchrunx); all hosts need the same Python environment at the same path.
        seed: base seed; global rank r is seeded with `seed_for_rank(seed, r)` = seed + r.
        env: extra environment variables for the workers (on top of `copy_env`).
        log_dir: folder for per-rank logs (`rank<R>.log`), agent logs and failure records;
            None = a temporary folder, removed after a successful run.
        timeout: collective timeout of the workers' process group, in seconds.
        agent_timeout: launcher <-> agent communication timeout, in seconds.
        num_threads: torch intra-op threads per worker; None = cores / workers for CPU
            launches, torch's default for GPU launches.
        copy_env: fnmatch patterns of launcher environment variables sent to every host.
        ssh_config_file: SSH config for remote hosts (None = ~/.ssh/config).
        console: echo rank 0's output on the launcher's stdout.
    """

    gpus: tuple[int, ...] | Literal["all"] | None = attrs.field(default=None, converter=parse_gpus)
    cpu_workers: int | None = attrs.field(default=None, validator=_positive_int_or_none)
    hosts: tuple[str, ...] | Literal["slurm"] | None = attrs.field(
        default=None, converter=parse_hosts
    )
    seed: int = attrs.field(default=0, validator=_seed)
    env: dict[str, str] = attrs.field(factory=dict, converter=_env_dict, hash=False)
    log_dir: Path | None = attrs.field(default=None, converter=_optional_path)
    timeout: float = attrs.field(default=1800.0, validator=_positive_number)
    agent_timeout: float = attrs.field(default=60.0, validator=_positive_number)
    num_threads: int | None = attrs.field(default=None, validator=_positive_int_or_none)
    copy_env: tuple[str, ...] = attrs.field(default=DEFAULT_ENV_PATTERNS, converter=tuple)
    ssh_config_file: Path | None = attrs.field(default=None, converter=_optional_path)
    console: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))

    def __attrs_post_init__(self) -> None:
        if self.gpus is not None and self.cpu_workers is not None:
            raise ValueError(
                f"give either gpus ({self.gpus!r}) or cpu_workers ({self.cpu_workers}), not both"
            )

    @property
    def uses_gpus(self) -> bool:
        """True when workers run on GPUs (NCCL); resolved at launch when neither is given."""
        return self.gpus is not None
