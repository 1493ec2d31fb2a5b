"""Shared math of the UniLab learners: normalizers, network builders, Gaussian policy helpers,
the CUDA-graph capture helper, and the learner contract (`Learner` and its two kinds)."""

from .config import GaussianConfig as GaussianConfig
from .config import NetworkConfig as NetworkConfig
from .cuda_graphs import CaptureMode as CaptureMode
from .cuda_graphs import CaptureStatus as CaptureStatus
from .cuda_graphs import CudaBackend as CudaBackend
from .cuda_graphs import CudaGraphs as CudaGraphs
from .cuda_graphs import GraphBackend as GraphBackend
from .cuda_graphs import RerunBackend as RerunBackend
from .models import GaussianActor as GaussianActor
from .models import Memory as Memory
from .models import ValueCritic as ValueCritic
from .models import convert_rsl_rl_state_dict as convert_rsl_rl_state_dict
from .networks import ACTIVATIONS as ACTIVATIONS
from .networks import activation_module as activation_module
from .networks import mlp as mlp
from .normalizer import EmpiricalNormalizer as EmpiricalNormalizer
from .normalizer import NormalizerUpdate as NormalizerUpdate
from .protocol import Learner as Learner
from .protocol import OffPolicyLearner as OffPolicyLearner
from .protocol import OnPolicyLearner as OnPolicyLearner
from .protocol import missing_members as missing_members
from .sync import GradSync as GradSync
from .sync import ReduceSum as ReduceSum

__all__ = [
    "ACTIVATIONS",
    "CaptureMode",
    "CaptureStatus",
    "CudaBackend",
    "CudaGraphs",
    "EmpiricalNormalizer",
    "GaussianActor",
    "GaussianConfig",
    "GradSync",
    "GraphBackend",
    "Learner",
    "Memory",
    "NetworkConfig",
    "NormalizerUpdate",
    "OffPolicyLearner",
    "OnPolicyLearner",
    "ReduceSum",
    "RerunBackend",
    "ValueCritic",
    "activation_module",
    "convert_rsl_rl_state_dict",
    "missing_members",
    "mlp",
]
