"""Imported through `runner.imports` in the terms test: a walking task of UniLab's quadruped
written from terms in this module, with a reward term and an observation term of its own."""

import warp as wp

import unilab_envs
from unilab_envs import mdp, terms
from unilab_envs.tasks import robots
from unilab_envs.tasks.term_task import TermTask, TermTaskConfig, with_overrides
from unilab_envs.terms import EnvState
from unilab_integration import TrainConfig, register_task_defaults


@wp.struct
class HeightParams:
    target: float


@wp.func
def base_height_error(w: int, s: EnvState, p: HeightParams) -> float:
    e = s.xpos[w, s.root_body][2] - p.target
    return e * e


@terms.term(size=1)
@wp.func
def base_height(w: int, k: int, s: EnvState) -> float:
    return s.xpos[w, s.root_body][2]


def config() -> TermTaskConfig:
    policy = {
        "base_ang_vel": terms.ObservationTerm(func=mdp.base_ang_vel),
        "projected_gravity": terms.ObservationTerm(func=mdp.projected_gravity),
        "base_height": terms.ObservationTerm(func=base_height, scale=2.0),
        "joint_pos": terms.ObservationTerm(func=mdp.joint_pos_rel),
        "actions": terms.ObservationTerm(func=mdp.last_action),
    }
    return TermTaskConfig(
        episode_length_s=0.2,
        observations={
            "policy": terms.ObservationGroup(terms=policy),
            "critic": terms.ObservationGroup(
                terms={**policy, "base_lin_vel": terms.ObservationTerm(func=mdp.base_lin_vel)}
            ),
        },
        rewards={
            "height": terms.RewardTerm(
                func=base_height_error, weight=-10.0, params={"target": 0.3}
            ),
            "action_rate_l2": terms.RewardTerm(func=mdp.action_rate_l2, weight=-0.01),
            "alive": terms.RewardTerm(func=mdp.is_alive, weight=1.0),
        },
        terminations={
            "time_out": terms.TerminationTerm(func=mdp.time_out, time_out=True),
            "fell_over": terms.TerminationTerm(
                func=mdp.bad_orientation, params={"limit_angle": 1.2}
            ),
        },
    )


def make_user_walker(**overrides) -> TermTask:
    """`overrides`: dotted term settings, e.g. {"rewards.alive.weight": 2.0}."""
    return TermTask(robots.quadruped(), with_overrides(config(), overrides), "user-walker")


def small(cfg: TrainConfig) -> TrainConfig:
    import attrs

    return attrs.evolve(
        cfg,
        env=attrs.evolve(cfg.env, num_envs=4),
        runner=attrs.evolve(cfg.runner, num_steps_per_env=8),
    )


unilab_envs.register_task("user-walker", make_user_walker, overwrite=True)
register_task_defaults("user-walker", small, overwrite=True)
