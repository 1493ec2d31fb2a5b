"""`unilab upgrade-checkpoint`: version-1 checkpoints rewritten as plain data."""

from __future__ import annotations

import argparse

__all__ = ["upgrade_command"]


def upgrade_command(args: argparse.Namespace) -> int:
    """`unilab upgrade-checkpoint`: refused without --trust; prints what each file became."""
    from .._upgrade import upgrade_checkpoint, upgrade_targets

    files = upgrade_targets(args.checkpoint)
    if not args.trust:
        raise ValueError(
            f"reading a version-1 checkpoint unpickles it, which runs any code the file names: "
            f"give --trust if you trust the source of {args.checkpoint}"
        )
    for file in files:
        done = upgrade_checkpoint(file)
        kept = f" (version 1 kept as {file}.v1)" if done else ""
        print(f"{file}: {'upgraded to' if done else 'already'} checkpoint version 2{kept}")
    return 0
