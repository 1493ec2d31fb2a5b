"""The joint-position action: MJLab's `JointPositionAction` (mjlab/envs/mdp/actions), as a
warp kernel and the launch a task's `apply_action` makes of it.

Not a term (terms are `warp.func`s over `EnvState` that the env compiles): a task launches it
once per control step, before the physics substeps. The target of driven joint j is
default pose + scale * action - encoder bias (rad or m); the bias is the `encoder_bias` event's
per-world offset, or zeros for a task without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import warp as wp

if TYPE_CHECKING:
    from unilab_envs._core.task import TaskContext


@wp.kernel
def joint_position_action(
    action: wp.array2d(dtype=float),
    act_id: wp.array(dtype=wp.int32),
    q0: wp.array(dtype=float),
    scale: wp.array(dtype=float),
    bias: wp.array2d(dtype=float),
    ctrl: wp.array2d(dtype=float),
):
    """ctrl[w, act_id[j]] = q0[j] + scale[j] * action[w, j] - bias[w, j]; dim (N, J).

    action [N, J] (the policy's), act_id [J] (the position actuator of joint j), q0 [J]
    (default pose), scale [J], bias [N, J] (encoder bias), ctrl [N, nu] (MuJoCo Warp's)."""
    # JointPositionAction: target = default + scale * action - encoder bias.
    w, j = wp.tid()
    ctrl[w, act_id[j]] = q0[j] + scale[j] * action[w, j] - bias[w, j]


def apply_joint_position_action(
    ctx: TaskContext, act_id: wp.array, default_pos: wp.array, scale: wp.array, bias: wp.array
) -> None:
    """One launch of `joint_position_action` over `ctx`'s worlds and the J = len(act_id)
    driven joints: `ctx.action` [N, J] to `ctx.data.ctrl`. For a task's `apply_action`."""
    wp.launch(
        joint_position_action,
        dim=(ctx.num_envs, act_id.shape[0]),
        inputs=[ctx.action, act_id, default_pos, scale, bias],
        outputs=[ctx.data.ctrl],
        device=ctx.device,
    )
