"""PPO: config, networks, loss and the runner-facing learner."""

from ._step import apply_update as apply_update
from ._step import forward_backward as forward_backward
from ._step import sync_grads as sync_grads
from ._step import trainable_params as trainable_params
from .config import PPOConfig as PPOConfig
from .config import RNDConfig as RNDConfig
from .large_batch import LargeBatch as LargeBatch
from .large_batch import scale_for_envs as scale_for_envs
from .learner import PPO as PPO
from .loss import gaussian_kl as gaussian_kl
from .loss import ppo_loss as ppo_loss
from .schedule import adaptive_lr as adaptive_lr
from .schedule import adaptive_lr_tensor as adaptive_lr_tensor

__all__ = [
    "LargeBatch",
    "PPO",
    "PPOConfig",
    "RNDConfig",
    "adaptive_lr",
    "adaptive_lr_tensor",
    "apply_update",
    "forward_backward",
    "gaussian_kl",
    "ppo_loss",
    "scale_for_envs",
    "sync_grads",
    "trainable_params",
]
