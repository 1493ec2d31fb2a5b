"""FastSAC: soft actor-critic for massively parallel simulation (Holosoma's FastSAC), with
replay shards per rank and injected gradient synchronization."""

from .config import FastSACConfig as FastSACConfig
from .learner import FastSAC as FastSAC
from .loss import actor_loss as actor_loss
from .loss import categorical_projection as categorical_projection
from .loss import distributional_critic_loss as distributional_critic_loss
from .loss import polyak_update as polyak_update
from .loss import scalar_critic_loss as scalar_critic_loss
from .loss import soft_scalar_target as soft_scalar_target
from .loss import temperature_loss as temperature_loss
from .networks import DeterministicPolicy as DeterministicPolicy
from .networks import QEnsemble as QEnsemble
from .networks import SquashedGaussianActor as SquashedGaussianActor

__all__ = [
    "DeterministicPolicy",
    "FastSAC",
    "FastSACConfig",
    "QEnsemble",
    "SquashedGaussianActor",
    "actor_loss",
    "categorical_projection",
    "distributional_critic_loss",
    "polyak_update",
    "scalar_critic_loss",
    "soft_scalar_target",
    "temperature_loss",
]
