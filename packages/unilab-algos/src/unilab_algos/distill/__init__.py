"""Student-teacher distillation: config, loss and learner."""

from .config import DistillationConfig as DistillationConfig
from .learner import Distillation as Distillation
from .loss import behavior_loss as behavior_loss

__all__ = ["Distillation", "DistillationConfig", "behavior_loss"]
