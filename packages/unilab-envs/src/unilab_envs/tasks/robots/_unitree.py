"""Unitree Go1 and G1 as MJLab 1.6.0 defines them (`Mjlab-Velocity-Flat-Unitree-{Go1,G1}`).

Facts from mjlab 1.6.0: `asset_zoo/robots/unitree_go1/go1_constants.py`,
`asset_zoo/robots/unitree_g1/g1_constants.py` (actuators, initial state, collisions),
`utils/actuator.py` (reflected inertia), `tasks/velocity/velocity_env_cfg.py` and
`tasks/velocity/config/{go1,g1}/env_cfgs.py` (solver options, njmax, the 70 degree tilt
termination of the flat tasks).

Actuators are `position` actuators built from the config (the MJCF's own are removed): stiffness
= armature * w^2 and damping = 2 * zeta * armature * w, w = 10 Hz * 2 pi (pi written as
3.1415926535, as MJLab does), zeta = 2; armature = the motor's reflected inertia; action
scale = 0.25 * effort limit / stiffness. The MJCF is found by `find_mjcf` (explicit path,
the robot cache, installed mjlab, Menagerie).
"""

from __future__ import annotations

import math
import os

from unilab_envs.robot_files import find_mjcf
from unilab_envs.tasks.robots._config import RobotConfig
from unilab_envs.tasks.robots._physics import CollisionConfig, PhysicsOptions

__all__ = [
    "G1_COLLISION",
    "G1_JOINTS",
    "GO1_COLLISION",
    "GO1_JOINTS",
    "GO1_MENAGERIE_COLLISION",
    "g1",
    "go1",
]

_NATURAL_FREQ = 10 * 2.0 * 3.1415926535  # 10 Hz, MJLab's literal
_DAMPING_RATIO = 2.0


def _pd(armature: float, effort: float, velocity: float, scale: float = 1.0) -> dict[str, float]:
    """One motor's joint constants; `scale` = 2 for the joints two motors drive (G1)."""
    kp = scale * armature * _NATURAL_FREQ**2
    return {
        "kp": kp,
        "kv": scale * 2 * _DAMPING_RATIO * armature * _NATURAL_FREQ,
        "armature": scale * armature,
        "effort_limit": scale * effort,
        "velocity_limit": velocity,
        "action_scale": 0.25 * scale * effort / kp,
    }


def _per_joint(motors: list[dict[str, float]]) -> dict[str, tuple[float, ...]]:
    keys = ("kp", "kv", "armature", "effort_limit", "velocity_limit", "action_scale")
    return {k: tuple(m[k] for m in motors) for k in keys}


# ----------------------------------------------------------------------------- Go1
GO1_JOINTS = tuple(
    f"{leg}_{part}_joint" for leg in ("FR", "FL", "RR", "RL") for part in ("hip", "thigh", "calf")
)
_GO1_ROTOR_INERTIA = 0.000111842
_GO1_HIP = _pd(_GO1_ROTOR_INERTIA * 6**2, effort=23.7, velocity=30.1)  # gear 6
_GO1_KNEE = _pd(_GO1_ROTOR_INERTIA * 9**2, effort=35.55, velocity=20.06)  # gear 6 * 1.5

_GO1_FOOT = r"^[FR][LR]_foot_collision$"
_GO1_ANY = r".*_collision\d*"
# FULL_COLLISION: every *_collision geom collides (self-collisions too), hardened (solref);
# feet condim 6 with rolling friction, everything else frictionless (condim 1).
GO1_COLLISION = CollisionConfig(
    geom_names=(_GO1_ANY,),
    contype=1,
    conaffinity=1,
    solref=(0.01, 1.0),
    condim={_GO1_FOOT: 6, _GO1_ANY: 1},
    priority={_GO1_FOOT: 1, ".*": 0},
    friction={_GO1_FOOT: (1.0, 5e-3, 5e-4)},
)
# The same for Menagerie's go1.xml, whose collision geoms are unnamed (group 3) and whose feet
# are named FR/FL/RR/RL; its geom margin (0.001) and foot solimp are set to MuJoCo's defaults,
# which MJLab's go1.xml uses.
_MM_FOOT = r"^[FR][LR]$"
GO1_MENAGERIE_COLLISION = CollisionConfig(
    geom_names=(_MM_FOOT, r"^$"),
    group=3,
    contype=1,
    conaffinity=1,
    solref=(0.01, 1.0),
    condim={_MM_FOOT: 6, ".*": 1},
    priority={_MM_FOOT: 1, ".*": 0},
    friction={_MM_FOOT: (1.0, 5e-3, 5e-4)},
    solimp=(0.9, 0.95, 0.001, 0.5, 2.0),
    margin=0.0,
)
# velocity_env_cfg.make_velocity_env_cfg + unitree_go1_{rough,flat}_env_cfg.
_GO1_PHYSICS = PhysicsOptions(
    timestep=0.005,
    cone="elliptic",
    impratio=10.0,
    iterations=10,
    ls_iterations=20,
    ccd_iterations=50,
)


def go1(mjcf: str | os.PathLike | None = None) -> RobotConfig:
    """MJLab 1.6.0's Unitree Go1 (12 joints) for `VelocityTask`.

    `mjcf`: the file (MJLab's go1.xml or one with its names); None = the installed mjlab's,
    else Menagerie's `unitree_go1` (see `find_mjcf`). Joints in the file's order (FR, FL, RR,
    RL x hip, thigh, calf). No base-height or contact termination: MJLab's flat task ends an
    episode only on a tilt beyond 70 degrees (and the time limit).
    """
    source = find_mjcf("go1", mjcf)
    pd = _per_joint([_GO1_HIP, _GO1_HIP, _GO1_KNEE] * 4)
    menagerie = source.origin == "menagerie"
    feet = ("FR", "FL", "RR", "RL")
    return RobotConfig(
        name="go1",
        mjcf=source.path,
        joint_names=GO1_JOINTS,
        # INIT_STATE: ".*R_hip_joint" 0.1 (FR, RR), ".*L_hip_joint" -0.1, thigh 0.9, calf -1.8.
        default_pose=[v for leg in feet for v in (0.1 if leg[1] == "R" else -0.1, 0.9, -1.8)],
        action_scale=pd["action_scale"],
        base_body="trunk",
        foot_bodies=tuple(f"{leg}_calf" for leg in feet),
        foot_geoms=feet if menagerie else tuple(f"{leg}_foot_collision" for leg in feet),
        termination_bodies=(),
        init_height=0.278,
        min_base_height=0.0,
        max_tilt=math.radians(70.0),
        kp=pd["kp"],
        kv=pd["kv"],
        effort_limit=pd["effort_limit"],
        armature=pd["armature"],
        # MJLab's go1.xml has neither; Menagerie's has damping 1-2 and friction loss 0.2.
        damping=0.0,
        frictionloss=0.0,
        velocity_limit=pd["velocity_limit"],
        collisions=(GO1_MENAGERIE_COLLISION if menagerie else GO1_COLLISION,),
        physics=_GO1_PHYSICS,
        # MJLab's flat task: njmax 300, nconmax left to MJWarp's heuristic.
        nconmax=48,
        njmax=300,
    )


# ----------------------------------------------------------------------------- G1
G1_JOINTS = (
    *(
        f"{side}_{part}_joint"
        for side in ("left", "right")
        for part in ("hip_pitch", "hip_roll", "hip_yaw", "knee", "ankle_pitch", "ankle_roll")
    ),
    "waist_yaw_joint",
    "waist_roll_joint",
    "waist_pitch_joint",
    *(
        f"{side}_{part}_joint"
        for side in ("left", "right")
        for part in (
            "shoulder_pitch",
            "shoulder_roll",
            "shoulder_yaw",
            "elbow",
            "wrist_roll",
            "wrist_pitch",
            "wrist_yaw",
        )
    ),
)


def _two_stage(rotor: tuple[float, float, float], gear: tuple[float, float, float]) -> float:
    """Reflected inertia of a two-stage planetary gearbox (mjlab/utils/actuator.py)."""
    return rotor[0] * (gear[1] * gear[2]) ** 2 + rotor[1] * gear[2] ** 2 + rotor[2]


_G1_5020 = _two_stage((0.139e-4, 0.017e-4, 0.169e-4), (1, 1 + 46 / 18, 1 + 56 / 16))
_G1_7520_14 = _two_stage((0.489e-4, 0.098e-4, 0.533e-4), (1, 4.5, 1 + 48 / 22))
_G1_7520_22 = _two_stage((0.489e-4, 0.109e-4, 0.738e-4), (1, 4.5, 5))
_G1_4010 = _two_stage((0.068e-4, 0.0, 0.0), (1, 5, 5))
_G1_MOTORS = {
    "5020": _pd(_G1_5020, effort=25.0, velocity=37.0),
    "7520_14": _pd(_G1_7520_14, effort=88.0, velocity=32.0),
    "7520_22": _pd(_G1_7520_22, effort=139.0, velocity=20.0),
    "4010": _pd(_G1_4010, effort=5.0, velocity=22.0),
    # Waist roll/pitch and ankles: a linkage of two 5020s, taken as twice one (gear 1:1).
    "2x5020": _pd(_G1_5020, effort=25.0, velocity=37.0, scale=2.0),
}
_G1_MOTOR_OF = {
    "hip_pitch": "7520_14",
    "hip_yaw": "7520_14",
    "waist_yaw": "7520_14",
    "hip_roll": "7520_22",
    "knee": "7520_22",
    "ankle_pitch": "2x5020",
    "ankle_roll": "2x5020",
    "waist_roll": "2x5020",
    "waist_pitch": "2x5020",
    "shoulder_pitch": "5020",
    "shoulder_roll": "5020",
    "shoulder_yaw": "5020",
    "elbow": "5020",
    "wrist_roll": "5020",
    "wrist_pitch": "4010",
    "wrist_yaw": "4010",
}
# KNEES_BENT_KEYFRAME (the one get_g1_robot_cfg uses); other joints 0.
_G1_POSE = {
    "hip_pitch": -0.312,
    "knee": 0.669,
    "ankle_pitch": -0.363,
    "elbow": 0.6,
    "left_shoulder_roll": 0.2,
    "left_shoulder_pitch": 0.2,
    "right_shoulder_roll": -0.2,
    "right_shoulder_pitch": 0.2,
}

_G1_FOOT = r"^(left|right)_foot[1-7]_collision$"
# FULL_COLLISION: every *_collision geom collides (self-collisions too); the 7 foot spheres
# per foot condim 3, friction 0.6, the rest condim 1.
G1_COLLISION = CollisionConfig(
    geom_names=(".*_collision",),
    contype=1,
    conaffinity=1,
    condim={_G1_FOOT: 3, ".*_collision": 1},
    priority={_G1_FOOT: 1, ".*": 0},
    friction={_G1_FOOT: (0.6,)},
)
_G1_PHYSICS = PhysicsOptions(timestep=0.005, iterations=10, ls_iterations=20, ccd_iterations=50)


def _g1_part(joint: str) -> str:
    return joint.removesuffix("_joint").removeprefix("left_").removeprefix("right_")


def g1(mjcf: str | os.PathLike | None = None) -> RobotConfig:
    """MJLab 1.6.0's Unitree G1 (29 joints) for `VelocityTask`.

    `mjcf`: the file (MJLab's g1.xml or one with its names); None = the installed mjlab's,
    else Menagerie's `unitree_g1` entry point `g1_mjlab` (see `find_mjcf`). Joints in the
    file's order: legs (hip pitch/roll/yaw, knee, ankle pitch/roll), waist yaw/roll/pitch,
    arms (shoulder pitch/roll/yaw, elbow, wrist roll/pitch/yaw). Feet are the ankle roll
    links (MJLab's foot contact sensor: their subtrees). No base-height or contact
    termination, a 70 degree tilt limit (MJLab's flat task).
    """
    source = find_mjcf("g1", mjcf)
    pd = _per_joint([_G1_MOTORS[_G1_MOTOR_OF[_g1_part(j)]] for j in G1_JOINTS])
    pose = [
        _G1_POSE.get(j.removesuffix("_joint"), _G1_POSE.get(_g1_part(j), 0.0)) for j in G1_JOINTS
    ]
    return RobotConfig(
        name="g1",
        mjcf=source.path,
        joint_names=G1_JOINTS,
        default_pose=pose,
        action_scale=pd["action_scale"],
        base_body="pelvis",
        foot_bodies=("left_ankle_roll_link", "right_ankle_roll_link"),
        termination_bodies=(),
        init_height=0.76,
        min_base_height=0.0,
        max_tilt=math.radians(70.0),
        kp=pd["kp"],
        kv=pd["kv"],
        effort_limit=pd["effort_limit"],
        armature=pd["armature"],
        velocity_limit=pd["velocity_limit"],
        collisions=(G1_COLLISION,),
        physics=_G1_PHYSICS,
        # MJLab: nconmax 70 on rough terrain (left to MJWarp's heuristic on flat), njmax 300.
        nconmax=70,
        njmax=300,
    )
