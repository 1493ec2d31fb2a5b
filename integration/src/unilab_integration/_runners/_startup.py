"""The startup line: one line per run (rank 0) with what explains most "it is slow" reports:
the GPU, driver and CUDA versions, torch / warp / mujoco-warp versions, whether the env step
and the learner run in CUDA graphs (and if not, why), and warp's memory-pool state.

    system: GPU NVIDIA H200 (sm_90, 140 GiB), NVIDIA driver 580.159.03, CUDA driver 13.0 |
    torch 2.13.0+cu130 (CUDA 13.0), warp 1.19.0 (CUDA 12.9), mujoco-warp 4.0.0, mujoco 4.0.0 |
    env step in a CUDA graph | update and rollout in CUDA graphs | warp mempool on (release
    threshold 0 B)

(one line in the log; wrapped here). The learner's capture is read by `learner_capture` alone.
"""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path
from typing import Any

import torch

from unilab_algos import CaptureMode, Learner

from .._env_features import env_features

__all__ = ["NVIDIA_VERSION_FILE", "env_capture", "learner_capture", "startup_line"]

NVIDIA_VERSION_FILE = Path("/proc/driver/nvidia/version")  # the kernel driver's own line


def startup_line(device: torch.device, env: Any, learner: Any) -> str:
    """The startup line of a runner on `device` with `env` and `learner` (no newline in it)."""
    parts = [
        _part("hardware", _hardware, device),
        _part("versions", _versions, device),
        "env step " + _part("capture", env_capture, env),
    ]
    try:
        parts += learner_capture(learner)
    except Exception as e:  # a report must never stop the run it reports on
        parts.append(f"learner capture unknown ({type(e).__name__}: {e})")
    if device.type == "cuda":
        parts.append(_part("warp mempool", _mempool, device))
    return " ".join(("system: " + " | ".join(parts)).split())


def _part(name: str, fn: Any, arg: Any) -> str:
    """`fn(arg)`, or "<name> unknown (<error>)" when a driver or library query fails: the
    line is informational, and a failed query must not stop the training it describes."""
    try:
        return fn(arg)
    except Exception as e:
        return f"{name} unknown ({type(e).__name__}: {e})"


def env_capture(env: Any) -> str:
    """How the env's control step runs, from its features (`env_features`): "in a CUDA graph"
    (a unilab_envs `VecEnv` on CUDA with `cuda_graph`, captured at its first steps) or
    "eager (<why>)"."""
    features = env_features(env)
    if features.cuda_graph:
        return "in a CUDA graph"
    return f"eager ({features.eager_reason or 'the env reports no CUDA graph'})"


def learner_capture(learner: Learner) -> list[str]:
    """How the learner runs, from its `capture_status`: part ("update", "rollout") ->
    `unilab_algos.CaptureStatus`. One text per part, or one for two parts that agree; none for
    a learner that captures nothing (an empty status)."""
    parts: list[tuple[str, str]] = []
    for label, status in learner.capture_status.items():
        if status.active:
            parts.append((label, "in CUDA graphs"))
        elif status.mode is CaptureMode.FALLBACK:
            parts.append((label, f"eager (CUDA graphs off: {status.reason})"))
        elif status.reason:
            parts.append((label, f"eager ({status.reason})"))
        else:
            parts.append((label, "eager (capture off in the algorithm's config)"))
    if len(parts) == 2 and parts[0][1] == parts[1][1]:  # one reason for both: say it once
        return [f"{parts[0][0]} and {parts[1][0]} {parts[0][1]}"]
    return [f"{label} {mode}" for label, mode in parts]


def _hardware(device: torch.device) -> str:
    if device.type != "cuda":
        return "cpu"
    props = torch.cuda.get_device_properties(device)
    gib = props.total_memory / 2**30
    text = f"GPU {props.name} (sm_{props.major}{props.minor}, {gib:.0f} GiB)"
    driver = _nvidia_driver()
    if driver is not None:
        text += f", NVIDIA driver {driver}"
    cuda_driver = _warp_cuda_version("get_cuda_driver_version")
    if cuda_driver is not None:
        text += f", CUDA driver {cuda_driver}"
    return text


def _nvidia_driver() -> str | None:
    """The NVIDIA kernel driver's version, from /proc (Linux; no nvidia-smi, no NVML)."""
    try:
        text = NVIDIA_VERSION_FILE.read_text()
    except OSError:
        return None
    match = re.search(r"Kernel Module\b.*?\s(\d+\.\d+(?:\.\d+)?)\s", text)
    return match.group(1) if match else None


def _warp_cuda_version(getter: str) -> str | None:
    """A CUDA version from warp (`get_cuda_driver_version` or `get_cuda_toolkit_version`),
    "major.minor", or None where warp has no CUDA."""
    try:
        import warp as wp

        value = getattr(wp, getter)()
    except Exception:  # no warp, or warp without CUDA: the line omits it
        return None
    if isinstance(value, tuple):
        return ".".join(str(v) for v in value[:2]) if value and value[0] else None
    if isinstance(value, int) and value > 0:  # CUDA's encoding: 1000 * major + 10 * minor
        return f"{value // 1000}.{value % 1000 // 10}"
    return None


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _versions(device: torch.device) -> str:
    torch_text = f"torch {torch.__version__}"
    warp_text = f"warp {_version('warp-lang')}"
    if device.type == "cuda":
        torch_text += f" (CUDA {torch.version.cuda})"
        toolkit = _warp_cuda_version("get_cuda_toolkit_version")
        if toolkit is not None:
            warp_text += f" (CUDA {toolkit})"
    return (
        f"{torch_text}, {warp_text}, mujoco-warp {_version('mujoco-warp')}, "
        f"mujoco {_version('mujoco')}"
    )


def _mempool(device: torch.device) -> str:
    """warp's stream-ordered memory pool on `device`: on/off and its release threshold."""
    import warp as wp

    name = f"cuda:{device.index if device.index is not None else torch.cuda.current_device()}"
    if not wp.is_mempool_supported(name):
        return "warp mempool unsupported on this GPU"
    if not wp.is_mempool_enabled(name):
        return "warp mempool off"
    return f"warp mempool on (release threshold {_bytes(wp.get_mempool_release_threshold(name))})"


def _bytes(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    value = n / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
