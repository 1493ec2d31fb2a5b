"""MJLab 1.6.0's velocity tasks on UniLab's env layer: `{go1,g1}-velocity-{flat,rough}`.

`go1-velocity-flat` is `Mjlab-Velocity-Flat-Unitree-Go1`, `g1-velocity-flat`
`Mjlab-Velocity-Flat-Unitree-G1`, and `*-velocity-rough` their `Mjlab-Velocity-Rough-*`
(mjlab/tasks/velocity/velocity_env_cfg.py + config/{go1,g1}/env_cfgs.py): the same observation
terms in the same order, the same command, rewards (weight x value x step_dt), terminations,
events and curricula; one task class, the robots and terrains differ only in
`MjlabVelocityConfig` (rough: `terrain` set, with MJLab's terrain grid, height scans, terrain
levels and out-of-bounds time-out). The term-by-term table, with every difference and its
reason, is docs/envs-mjlab.md; the observation, reward, termination, command and event terms
(and rough's terrain-levels curriculum) are in `tasks/mjlab_terms.py`, the action and
contact-sensor kernels in the library (`unilab_envs.mdp.actions`, `unilab_envs.mdp.sensors`).
The options are `MjlabVelocityConfig` (`tasks/mjlab_config.py`, with the robots' option
sets), the task `MjlabVelocityTask` (`tasks/mjlab_task.py`, a `TermTask`); this module has
the factories the registry names.
The terms read the state as MJLab's `ManagerBasedRlEnv.step` does: rewards and terminations the
derived fields (`xmat`, `xpos`, `cvel`, `subtree_com`, `site_xpos`) the last `mujoco_warp.step`
left (one substep stale), observations after the env's `forward` (`forward_after_reset`); foot
heights are sampled at observation time and read by the next step's rewards, as MJLab's
sensor cache is.

Action: float32 [N, J] (Go1 12, G1 29 joints), unbounded (`action_bound=None`, as MJLab's):
joint target = default pose + scale * action - encoder bias.
Observations (float32; F feet: Go1 4, G1 2; S height-scan rays: 0 flat, 187 rough):
    "policy" [N, 12 + 3J + S] (Go1 48, G1 99 on flat): base_lin_vel 3 (IMU velocimeter),
        base_ang_vel 3 (IMU gyro), projected_gravity 3, joint_pos J (minus default, with the
        encoder bias), joint_vel J, actions J, command 3, rough: height_scan S ((base z - hit
        z) / 5 m); uniform noise +-0.5, 0.2, 0.05, 0.01, 1.5 on the first five, +-0.1 m on
        the height scan.
    "critic" [N, 12 + 3J + S + 6F] (Go1 72, G1 111 on flat): the same without noise and
        bias, foot_height F, foot_air_time F, foot_contact F, foot_contact_forces 3F.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from unilab_envs.tasks import robots
from unilab_envs.tasks.mjlab_config import (
    MjlabVelocityConfig,
    g1_flat_config,
    g1_rough_config,
    go1_rough_config,
)
from unilab_envs.tasks.mjlab_task import STATE_NAMES, MjlabVelocityTask
from unilab_envs.tasks.robots import RobotConfig

__all__ = [
    "STATE_NAMES",
    "MjlabVelocityConfig",
    "MjlabVelocityTask",
    "g1_flat_config",
    "g1_rough_config",
    "go1_rough_config",
    "make_g1_velocity_flat",
    "make_g1_velocity_rough",
    "make_go1_velocity_flat",
    "make_go1_velocity_rough",
]


TermOverrides = Mapping[str, Any] | None


def _terms(observations, rewards, terminations, commands, events, curricula) -> dict[str, Any]:
    """The term overrides given to a factory, as `MjlabVelocityConfig` fields (the factories
    name them so that the registry knows these tasks take them)."""
    given = {"observations": observations, "rewards": rewards, "terminations": terminations}
    given |= {"commands": commands, "events": events, "curricula": curricula}
    return {k: v for k, v in given.items() if v is not None}


def make_go1_velocity_flat(
    robot: RobotConfig | None = None,
    *,
    observations: TermOverrides = None,
    rewards: TermOverrides = None,
    terminations: TermOverrides = None,
    commands: TermOverrides = None,
    events: TermOverrides = None,
    curricula: TermOverrides = None,
    **overrides,
) -> MjlabVelocityTask:
    """`go1-velocity-flat`: MJLab's `Mjlab-Velocity-Flat-Unitree-Go1`; `observations`,
    `rewards`, `terminations`, `commands`, `events`, `curricula` change its terms (see
    `MjlabVelocityConfig`), `overrides` are
    `MjlabVelocityConfig` fields. `robot` defaults to `unilab_envs.tasks.robots.go1()`."""
    if robot is None:
        robot = robots.go1()  # RobotFileNotFoundError names the ways to provide go1.xml
    overrides.update(_terms(observations, rewards, terminations, commands, events, curricula))
    return MjlabVelocityTask(robot, MjlabVelocityConfig(**overrides), "go1-velocity-flat")


def make_g1_velocity_flat(
    robot: RobotConfig | None = None,
    *,
    observations: TermOverrides = None,
    rewards: TermOverrides = None,
    terminations: TermOverrides = None,
    commands: TermOverrides = None,
    events: TermOverrides = None,
    curricula: TermOverrides = None,
    **overrides,
) -> MjlabVelocityTask:
    """`g1-velocity-flat`: MJLab's `Mjlab-Velocity-Flat-Unitree-G1`; term overrides and
    `overrides` as `make_go1_velocity_flat`'s. `robot` defaults to `robots.g1()`."""
    if robot is None:
        robot = robots.g1()  # RobotFileNotFoundError names the ways to provide g1.xml
    overrides.update(_terms(observations, rewards, terminations, commands, events, curricula))
    return MjlabVelocityTask(robot, g1_flat_config(robot, **overrides), "g1-velocity-flat")


def make_go1_velocity_rough(
    robot: RobotConfig | None = None,
    *,
    observations: TermOverrides = None,
    rewards: TermOverrides = None,
    terminations: TermOverrides = None,
    commands: TermOverrides = None,
    events: TermOverrides = None,
    curricula: TermOverrides = None,
    **overrides,
) -> MjlabVelocityTask:
    """`go1-velocity-rough`: MJLab's `Mjlab-Velocity-Rough-Unitree-Go1` (terrain grid,
    height scans, terrain levels); term overrides and `overrides` as
    `make_go1_velocity_flat`'s."""
    if robot is None:
        robot = robots.go1()
    overrides.update(_terms(observations, rewards, terminations, commands, events, curricula))
    return MjlabVelocityTask(robot, go1_rough_config(**overrides), "go1-velocity-rough")


def make_g1_velocity_rough(
    robot: RobotConfig | None = None,
    *,
    observations: TermOverrides = None,
    rewards: TermOverrides = None,
    terminations: TermOverrides = None,
    commands: TermOverrides = None,
    events: TermOverrides = None,
    curricula: TermOverrides = None,
    **overrides,
) -> MjlabVelocityTask:
    """`g1-velocity-rough`: MJLab's `Mjlab-Velocity-Rough-Unitree-G1`; term overrides and
    `overrides` as `make_go1_velocity_flat`'s."""
    if robot is None:
        robot = robots.g1()
    overrides.update(_terms(observations, rewards, terminations, commands, events, curricula))
    return MjlabVelocityTask(robot, g1_rough_config(robot, **overrides), "g1-velocity-rough")
