"""Robot configurations for the velocity task.

`quadruped()` and `humanoid()` return `RobotConfig`s pointing at UniLab's packaged MJCF files
(`unilab_envs/assets/quadruped.xml`, `humanoid.xml`). `go1(mjcf=None)` and `g1(mjcf=None)` are
MJLab 1.6.0's Unitree Go1 and G1 (actuators, pose, collisions, solver options); their MJCF
comes from `mjcf`, the robot cache (`unilab robots get`), an installed `mjlab` or MuJoCo
Menagerie (`unilab_envs.robot_files.find_mjcf`). For another robot,
build a `RobotConfig` with the path of its MJCF (see `RobotConfig`).
"""

from __future__ import annotations

import importlib.resources

from unilab_envs.robot_files import MjcfSource as MjcfSource
from unilab_envs.robot_files import RobotFileNotFoundError as RobotFileNotFoundError
from unilab_envs.robot_files import find_mjcf as find_mjcf
from unilab_envs.tasks.robots._config import RobotConfig
from unilab_envs.tasks.robots._physics import CollisionConfig as CollisionConfig
from unilab_envs.tasks.robots._physics import PhysicsOptions as PhysicsOptions
from unilab_envs.tasks.robots._physics import apply_physics as apply_physics
from unilab_envs.tasks.robots._physics import mjlab_physics_xml as mjlab_physics_xml
from unilab_envs.tasks.robots._unitree import G1_JOINTS as G1_JOINTS
from unilab_envs.tasks.robots._unitree import GO1_JOINTS as GO1_JOINTS
from unilab_envs.tasks.robots._unitree import g1 as g1
from unilab_envs.tasks.robots._unitree import go1 as go1

__all__ = [
    "G1_JOINTS",
    "GO1_JOINTS",
    "HUMANOID_JOINTS",
    "QUADRUPED_JOINTS",
    "CollisionConfig",
    "MjcfSource",
    "PhysicsOptions",
    "RobotConfig",
    "RobotFileNotFoundError",
    "apply_physics",
    "asset_path",
    "find_mjcf",
    "g1",
    "go1",
    "humanoid",
    "mjlab_physics_xml",
    "quadruped",
]

QUADRUPED_JOINTS = tuple(
    f"{leg}_{part}_joint" for leg in ("FL", "FR", "RL", "RR") for part in ("hip", "thigh", "calf")
)

HUMANOID_JOINTS = (
    *(
        f"{side}_{part}_joint"
        for side in ("left", "right")
        for part in ("hip_pitch", "hip_roll", "hip_yaw", "knee", "ankle_pitch", "ankle_roll")
    ),
    "waist_yaw_joint",
    *(
        f"{side}_{part}_joint"
        for side in ("left", "right")
        for part in ("shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow")
    ),
)


def asset_path(filename: str) -> str:
    """Filesystem path of a packaged asset, e.g. `asset_path("quadruped.xml")`."""
    return str(importlib.resources.files("unilab_envs") / "assets" / filename)


def quadruped() -> RobotConfig:
    """UniLab's Go1-sized quadruped (12 joints, ~13 kg, PD gains in the MJCF)."""
    return RobotConfig(
        name="quadruped",
        mjcf=asset_path("quadruped.xml"),
        joint_names=QUADRUPED_JOINTS,
        default_pose=(0.1, 0.9, -1.8, -0.1, 0.9, -1.8) * 2,
        action_scale=0.5,
        base_body="trunk",
        foot_bodies=("FL_calf", "FR_calf", "RL_calf", "RR_calf"),
        termination_bodies=("trunk",),
        init_height=0.29,
        min_base_height=0.12,
        max_tilt=1.0,
        # 4 feet + trunk box (4) + 4 calves x 2 when fallen; 4 rows per pyramidal contact.
        nconmax=24,
        njmax=112,
    )


def humanoid() -> RobotConfig:
    """UniLab's ~1.2 m humanoid (21 joints, ~33 kg, PD gains in the MJCF)."""
    # Arms and waist away from the default pose cost a little (keeps arms tidy while walking).
    deviation = (0.0, 0.1, 0.1, 0.0, 0.0, 0.0) * 2 + (0.1,) + (0.05,) * 8
    return RobotConfig(
        name="humanoid",
        mjcf=asset_path("humanoid.xml"),
        joint_names=HUMANOID_JOINTS,
        default_pose=(-0.2, 0.0, 0.0, 0.4, -0.2, 0.0) * 2
        + (0.0,)
        + (0.2, 0.2, 0.0, -0.3, 0.2, -0.2, 0.0, -0.3),
        action_scale=0.5,
        base_body="pelvis",
        foot_bodies=("left_foot", "right_foot"),
        termination_bodies=("pelvis", "torso"),
        init_height=0.75,
        min_base_height=0.45,
        max_tilt=1.0,
        joint_deviation=deviation,
        # 2 box feet x 4 + shins, pelvis, torso capsules x 2 + head when fallen.
        nconmax=24,
        njmax=112,
    )
