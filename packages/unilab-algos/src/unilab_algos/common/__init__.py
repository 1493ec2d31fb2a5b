"""Shared math of the UniLab learners: normalizers, network builders, Gaussian policy helpers."""

from .config import GaussianConfig as GaussianConfig
from .config import NetworkConfig as NetworkConfig
from .models import GaussianActor as GaussianActor
from .models import Memory as Memory
from .models import ValueCritic as ValueCritic
from .models import convert_rsl_rl_state_dict as convert_rsl_rl_state_dict
from .networks import ACTIVATIONS as ACTIVATIONS
from .networks import activation_module as activation_module
from .networks import mlp as mlp
from .normalizer import EmpiricalNormalizer as EmpiricalNormalizer
from .normalizer import ReduceSum as ReduceSum

__all__ = [
    "ACTIVATIONS",
    "EmpiricalNormalizer",
    "GaussianActor",
    "GaussianConfig",
    "Memory",
    "NetworkConfig",
    "ReduceSum",
    "ValueCritic",
    "activation_module",
    "convert_rsl_rl_state_dict",
    "mlp",
]
