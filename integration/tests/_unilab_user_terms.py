"""Imported through `--import` in the term-override tests: a reward term and an observation
term of the user's, named on the command line as `_unilab_user_terms:<function>`."""

import warp as wp

from unilab_envs import terms
from unilab_envs.mdp.frames import root_lin_vel_b
from unilab_envs.terms import EnvState


@wp.func
def lin_vel_z_l2(w: int, s: EnvState) -> float:
    v = root_lin_vel_b(w, s)
    return v[2] * v[2]


@terms.term(size=1)
@wp.func
def base_height(w: int, k: int, s: EnvState) -> float:
    return s.xpos[w, s.root_body][2]


@wp.func
def tilted(w: int, s: EnvState) -> wp.vec3:
    return wp.vec3(0.0)
