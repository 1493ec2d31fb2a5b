"""What the commands that read a policy (play, eval, export) share."""

from __future__ import annotations

import argparse
import logging
import sys

from .._envs import check_named_imports, import_modules

__all__ = ["env_output", "policy_checkpoint"]


def env_output() -> None:
    """What a command that builds an env in this process prints: not warp's per-module load
    lines (they would bury the results), but unilab_envs' INFO lines (the first compilation of
    a task's kernels) on stderr (training workers log those to the run's logs)."""
    from .._train import quiet_warp

    quiet_warp()

    env_logger = logging.getLogger("unilab_envs")
    if not env_logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        env_logger.addHandler(handler)
    env_logger.setLevel(logging.INFO)


def policy_checkpoint(args: argparse.Namespace) -> dict:
    """The checkpoint that play, eval or export read: the modules named with --import are
    imported first, and a saved config that lists others is refused."""
    from .._mjlab import load_policy_checkpoint

    import_modules(args.imports)
    device = getattr(args, "device", "cpu")
    ckpt = load_policy_checkpoint(args.checkpoint, task=getattr(args, "task", None), device=device)
    saved = ckpt["config"].get("runner", {}).get("imports") or ()
    check_named_imports(saved, args.imports, ckpt["path"])
    return ckpt
