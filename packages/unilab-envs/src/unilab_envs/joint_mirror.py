"""Left/right mirror of a robot's joints, derived from its compiled MuJoCo model.

`mirror_name(name)` swaps left and right in a name: the tokens (split at "_") "left"/"right",
"l"/"r" in any case, and leg codes of two upper-case letters ending in L or R ("FL" <-> "FR",
"RL" <-> "RR"). `joint_mirror(model, joints)` pairs each joint with the joint of the mirrored
name (itself when none) and derives the sign from the joint axes in the world frame at
`qpos0`, for the reflection y -> -y (M = diag(1, -1, 1)): a hinge axis is a pseudovector, so
the mirror of a rotation by q about a is a rotation by q about -M a; a slide axis is a vector,
mirrored to M a. The sign is +1 when the partner's axis is that mirrored axis, -1 when it is
its opposite; any other axis is refused (the model is not left/right symmetric there).
"""

from __future__ import annotations

from collections.abc import Sequence

import mujoco
import numpy as np

__all__ = ["joint_mirror", "mirror_name"]

_SWAP = {"left": "right", "right": "left", "l": "r", "r": "l"}
_REFLECT = np.array([1.0, -1.0, 1.0])


def _swap_token(token: str) -> str:
    low = token.lower()
    if low in _SWAP:
        out = _SWAP[low]
        if token.isupper():
            return out.upper()
        return out.capitalize() if token[0].isupper() else out
    if len(token) == 2 and token.isupper() and token[1] in "LR":
        return token[0] + ("R" if token[1] == "L" else "L")
    return token


def mirror_name(name: str) -> str:
    """`name` with left and right swapped (unchanged when it names neither side)."""
    return "_".join(_swap_token(t) for t in name.split("_"))


def joint_mirror(
    model: mujoco.MjModel, joints: Sequence[str]
) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """`(index, sign)` with `mirrored_q[i] = sign[i] * q[index[i]]` over `joints` (hinge or
    slide joints of `model`, in action order)."""
    names = list(joints)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    index, sign = [], []
    for name in names:
        partner = mirror_name(name)
        if partner not in names:
            partner = name
        j = model.joint(name).id
        p = model.joint(partner).id
        hinge = model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE
        mirrored = (-1.0 if hinge else 1.0) * _REFLECT * data.xaxis[j]
        dot = float(np.dot(mirrored, data.xaxis[p]))
        if abs(abs(dot) - 1.0) > 1e-6:
            raise ValueError(
                f"joint {name!r} and its mirror {partner!r} have axes that are not reflections "
                "of each other; the model is not left/right symmetric there"
            )
        index.append(names.index(partner))
        sign.append(1.0 if dot > 0 else -1.0)
    return tuple(index), tuple(sign)
