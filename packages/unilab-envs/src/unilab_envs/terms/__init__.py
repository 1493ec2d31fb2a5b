"""Tasks as compositions of terms: each term a `warp.func` the user may write in their own
module, compiled by the env into one kernel per hook of its captured step.

Term signatures (`s: EnvState`, `p`: an optional `@wp.struct` of the term's parameters):

    observation   (w: int, k: int, s: EnvState[, p]) -> float   value k of the term's size
    reward        (w: int, s: EnvState[, p]) -> float
    termination   (w: int, s: EnvState[, p]) -> bool
    command       (w: int, col: int, resample: bool, rng: wp.uint32, s: EnvState[, p]) -> None
    event         (w: int, rng: wp.uint32, s: EnvState[, p]) -> wp.uint32
    curriculum    (w: int, rng: wp.uint32, s: EnvState[, p]) -> wp.uint32

A term whose size, per-world state or default parameters the env needs declares them with
`@term(size=..., state=..., defaults=...)` above its `@wp.func`. Parameters resolve by field
type: float, int, warp vectors, arrays (a scalar broadcast over the joints, a sequence,
`Joints({regex: value})` per joint, or `Joints`/`Bodies`/`Sites` names for ids). The library of
terms is `unilab_envs.mdp`.
"""

from unilab_envs.terms.compiled import CompiledTerms as CompiledTerms
from unilab_envs.terms.compiled import Scene as Scene
from unilab_envs.terms.config import Bodies as Bodies
from unilab_envs.terms.config import CommandTerm as CommandTerm
from unilab_envs.terms.config import CurriculumTerm as CurriculumTerm
from unilab_envs.terms.config import EventTerm as EventTerm
from unilab_envs.terms.config import GaussianNoise as GaussianNoise
from unilab_envs.terms.config import Joints as Joints
from unilab_envs.terms.config import ObservationGroup as ObservationGroup
from unilab_envs.terms.config import ObservationTerm as ObservationTerm
from unilab_envs.terms.config import Ref as Ref
from unilab_envs.terms.config import RewardTerm as RewardTerm
from unilab_envs.terms.config import Sensors as Sensors
from unilab_envs.terms.config import Sites as Sites
from unilab_envs.terms.config import TermFunction as TermFunction
from unilab_envs.terms.config import TerminationTerm as TerminationTerm
from unilab_envs.terms.config import UniformNoise as UniformNoise
from unilab_envs.terms.config import term as term
from unilab_envs.terms.state import EnvState as EnvState
from unilab_envs.terms.state import robot_state as robot_state

__all__ = [
    "Bodies",
    "CommandTerm",
    "CompiledTerms",
    "CurriculumTerm",
    "EnvState",
    "EventTerm",
    "GaussianNoise",
    "Joints",
    "ObservationGroup",
    "ObservationTerm",
    "Ref",
    "RewardTerm",
    "Scene",
    "Sensors",
    "Sites",
    "TermFunction",
    "TerminationTerm",
    "UniformNoise",
    "robot_state",
    "term",
]
