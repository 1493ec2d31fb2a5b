"""What UniLab knows of MJLab beyond its tasks: MJLab/RSL-RL checkpoints read as UniLab's
(`checkpoint`), and the velocity-tracking evaluator of MJLab's velocity tasks (`tracking`).

Loaded only by the commands that read a policy (`unilab play`, `unilab eval`, `unilab
export`), never by `unilab train` or `unilab list`."""

from .checkpoint import convert_mjlab_checkpoint, is_rsl_rl_checkpoint, load_policy_checkpoint
from .tracking import TrackingResult, evaluate_tracking

__all__ = [
    "TrackingResult",
    "convert_mjlab_checkpoint",
    "evaluate_tracking",
    "is_rsl_rl_checkpoint",
    "load_policy_checkpoint",
]
