"""Compare UniLab's converted MJLab policy with MJLab's own on the same observations.

Reads the JSON `mjlab_policy_actions.py` wrote (MJLab's venv) and the same checkpoint, loads it
the way `unilab play CKPT --task TASK` does (`load_policy_checkpoint`, `policy_from_checkpoint`)
and prints the largest absolute action difference; exits 1 above `--atol`.

    python tools/parity/compare_mjlab_policy.py --task go1-velocity-flat \
        --checkpoint logs/.../model_1.pt --actions go1.json
"""

from __future__ import annotations

import argparse
import json
import sys

import torch


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--task", required=True, help="UniLab task name, e.g. go1-velocity-flat")
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--actions", required=True, help="JSON from mjlab_policy_actions.py")
    p.add_argument("--atol", type=float, default=1e-5)
    args = p.parse_args()

    from unilab_integration import load_policy_checkpoint, policy_from_checkpoint

    with open(args.actions) as f:
        ref = json.load(f)
    policy, _, _ = policy_from_checkpoint(load_policy_checkpoint(args.checkpoint, args.task))
    obs = torch.tensor(ref["obs"], dtype=torch.float32)
    want = torch.tensor(ref["actions"], dtype=torch.float32)
    with torch.no_grad():
        got = policy(obs)
    err = float((got - want).abs().max())
    print(f"{len(obs)} observations, {want.shape[1]} actions: max |UniLab - MJLab| = {err:.3g}")
    return 0 if err <= args.atol else 1


if __name__ == "__main__":
    sys.exit(main())
