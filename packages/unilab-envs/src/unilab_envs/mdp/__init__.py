"""The library of terms (MJLab 1.6.0's names): `warp.func`s over `unilab_envs.terms.EnvState`
for observations, rewards and terminations. `get(name)` finds one by name; `LIBRARY` lists
them as {name: (kind, function)}.
"""

from __future__ import annotations

from typing import Any

from unilab_envs.mdp import observations as _obs
from unilab_envs.mdp import rewards as _rew
from unilab_envs.mdp import terminations as _term
from unilab_envs.mdp.observations import base_ang_vel as base_ang_vel
from unilab_envs.mdp.observations import base_lin_vel as base_lin_vel
from unilab_envs.mdp.observations import generated_commands as generated_commands
from unilab_envs.mdp.observations import joint_pos_rel as joint_pos_rel
from unilab_envs.mdp.observations import joint_vel_rel as joint_vel_rel
from unilab_envs.mdp.observations import last_action as last_action
from unilab_envs.mdp.observations import projected_gravity as projected_gravity
from unilab_envs.mdp.rewards import StdParams as StdParams
from unilab_envs.mdp.rewards import UprightParams as UprightParams
from unilab_envs.mdp.rewards import action_l2 as action_l2
from unilab_envs.mdp.rewards import action_rate_l2 as action_rate_l2
from unilab_envs.mdp.rewards import ang_vel_xy_l2 as ang_vel_xy_l2
from unilab_envs.mdp.rewards import flat_orientation_l2 as flat_orientation_l2
from unilab_envs.mdp.rewards import is_alive as is_alive
from unilab_envs.mdp.rewards import joint_pos_limits as joint_pos_limits
from unilab_envs.mdp.rewards import joint_vel_l2 as joint_vel_l2
from unilab_envs.mdp.rewards import lin_vel_z_l2 as lin_vel_z_l2
from unilab_envs.mdp.rewards import track_angular_velocity as track_angular_velocity
from unilab_envs.mdp.rewards import track_linear_velocity as track_linear_velocity
from unilab_envs.mdp.rewards import upright as upright
from unilab_envs.mdp.terminations import LimitAngleParams as LimitAngleParams
from unilab_envs.mdp.terminations import MinimumHeightParams as MinimumHeightParams
from unilab_envs.mdp.terminations import bad_orientation as bad_orientation
from unilab_envs.mdp.terminations import root_height_below_minimum as root_height_below_minimum
from unilab_envs.mdp.terminations import time_out as time_out
from unilab_envs.terms.config import closest

_KINDS = {"observation": _obs, "reward": _rew, "termination": _term}
_NAMES = {
    "observation": ("base_lin_vel", "base_ang_vel", "projected_gravity", "joint_pos_rel",
                    "joint_vel_rel", "last_action", "generated_commands"),
    "reward": ("is_alive", "lin_vel_z_l2", "ang_vel_xy_l2", "flat_orientation_l2",
               "action_rate_l2", "action_l2", "joint_vel_l2", "joint_pos_limits",
               "track_linear_velocity", "track_angular_velocity", "upright"),
    "termination": ("time_out", "bad_orientation", "root_height_below_minimum"),
}  # fmt: skip
LIBRARY: dict[str, tuple[str, Any]] = {
    name: (kind, getattr(_KINDS[kind], name)) for kind, names in _NAMES.items() for name in names
}


def get(name: str) -> Any:
    """The library term `name`; KeyError naming the closest names when there is none."""
    if name not in LIBRARY:
        raise closest(name, LIBRARY, "term")
    return LIBRARY[name][1]


__all__ = [
    "LIBRARY",
    "LimitAngleParams",
    "MinimumHeightParams",
    "StdParams",
    "UprightParams",
    *(name for names in _NAMES.values() for name in names),
    "get",
]
