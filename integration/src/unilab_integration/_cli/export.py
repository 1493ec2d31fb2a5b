"""`unilab export`: a checkpoint's policy as ONNX, with the task's deployment metadata."""

from __future__ import annotations

import argparse

from .common import policy_checkpoint

__all__ = ["export_command"]


def export_command(args: argparse.Namespace) -> int:
    """`unilab export`: writes the file and prints its inputs and outputs."""
    from .._export import export_onnx, read_onnx_metadata

    path = export_onnx(policy_checkpoint(args), args.out, opset=args.opset)
    meta = read_onnx_metadata(path)
    state = "".join(f", {n} [L, B, H]" for n in meta["inputs"][1:])
    bound = meta["action_bound"]
    clip = f"clamped to [-{bound:g}, {bound:g}]" if meta["action_clipped"] else "unclamped"
    print(
        f"wrote {path}: input obs [B, {meta['obs_dim']}]{state}, output actions "
        f"[B, {meta['action_dim']}] {clip}" + "".join(f", {n}" for n in meta["outputs"][1:])
    )
    return 0
