"""On-policy (PPO, Student-Teacher Distillation) and off-policy (FastSAC) learners whose
distributed behaviour is injected (`grad_sync`, reducers); `None` means one process. What a
runner drives is written once as protocols: `Learner`, `OnPolicyLearner`, `OffPolicyLearner`."""

from . import _siblings  # noqa: F401 (first: siblings outside the declared ranges fail here)
from .common import CaptureMode as CaptureMode
from .common import CaptureStatus as CaptureStatus
from .common import EmpiricalNormalizer as EmpiricalNormalizer
from .common import GaussianConfig as GaussianConfig
from .common import Learner as Learner
from .common import NetworkConfig as NetworkConfig
from .common import OffPolicyLearner as OffPolicyLearner
from .common import OnPolicyLearner as OnPolicyLearner
from .common import convert_rsl_rl_state_dict as convert_rsl_rl_state_dict
from .common import mlp as mlp
from .distill import Distillation as Distillation
from .distill import DistillationConfig as DistillationConfig
from .fastsac import FastSAC as FastSAC
from .fastsac import FastSACConfig as FastSACConfig
from .ppo import PPO as PPO
from .ppo import PPOConfig as PPOConfig
from .ppo import RNDConfig as RNDConfig

__version__ = "0.1.0"

__all__ = [
    "PPO",
    "CaptureMode",
    "CaptureStatus",
    "Distillation",
    "DistillationConfig",
    "EmpiricalNormalizer",
    "FastSAC",
    "FastSACConfig",
    "GaussianConfig",
    "Learner",
    "NetworkConfig",
    "OffPolicyLearner",
    "OnPolicyLearner",
    "PPOConfig",
    "RNDConfig",
    "__version__",
    "convert_rsl_rl_state_dict",
    "mlp",
]
