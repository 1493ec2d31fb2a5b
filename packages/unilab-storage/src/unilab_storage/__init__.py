"""Rollout storage, returns and GAE, mini-batch generators and replay shards, all TensorDicts
preallocated on the training device."""

from ._feedforward import FeedForwardBatcher as FeedForwardBatcher
from ._feedforward import feed_forward_batches as feed_forward_batches
from ._feedforward import timestep_batches as timestep_batches
from ._gae import compute_gae as compute_gae
from ._gae import normalize_advantages as normalize_advantages
from ._recurrent import RecurrentBatcher as RecurrentBatcher
from ._recurrent import recurrent_batches as recurrent_batches
from ._recurrent import split_and_pad_trajectories as split_and_pad_trajectories
from ._recurrent import trajectory_starts as trajectory_starts
from ._recurrent import unpad_trajectories as unpad_trajectories
from ._replay import ReplayShard as ReplayShard
from ._rollout import RolloutStorage as RolloutStorage
from ._split import split_global as split_global

__version__ = "0.1.0"

__all__ = [
    "FeedForwardBatcher",
    "RecurrentBatcher",
    "ReplayShard",
    "RolloutStorage",
    "__version__",
    "compute_gae",
    "feed_forward_batches",
    "normalize_advantages",
    "recurrent_batches",
    "split_and_pad_trajectories",
    "split_global",
    "timestep_batches",
    "trajectory_starts",
    "unpad_trajectories",
]
