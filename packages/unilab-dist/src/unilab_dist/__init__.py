"""Distributed primitives for data-parallel RL trainers: process groups, state broadcast,
flat gradient all-reduce, reductions and exact moment merges.

Every function is the identity at world size 1 or without a process group, and importing the
package has no side effect (no process group, no CUDA).
"""

from ._accounting import CollectiveAccounting as CollectiveAccounting
from ._accounting import accounting as accounting
from ._broadcast import broadcast_module_state as broadcast_module_state
from ._broadcast import broadcast_tensors as broadcast_tensors
from ._broadcast import named_state_tensors as named_state_tensors
from ._check import ReplicaMismatchError as ReplicaMismatchError
from ._check import check_replicas as check_replicas
from ._collectives import CollectiveTimeoutError as CollectiveTimeoutError
from ._collectives import all_gather_tensor as all_gather_tensor
from ._collectives import all_reduce as all_reduce
from ._collectives import broadcast_object as broadcast_object
from ._collectives import reduce_scalars as reduce_scalars
from ._collectives import sum_reducer as sum_reducer
from ._context import DistContext as DistContext
from ._context import init_distributed as init_distributed
from ._context import is_distributed as is_distributed
from ._context import shutdown as shutdown
from ._grads import GradAllReduce as GradAllReduce
from ._moments import RunningMoments as RunningMoments
from ._seed import seed_everything as seed_everything
from ._seed import seed_for_rank as seed_for_rank

__version__ = "0.1.0"

__all__ = [
    "CollectiveAccounting",
    "CollectiveTimeoutError",
    "DistContext",
    "GradAllReduce",
    "ReplicaMismatchError",
    "RunningMoments",
    "__version__",
    "accounting",
    "all_gather_tensor",
    "all_reduce",
    "broadcast_module_state",
    "broadcast_object",
    "broadcast_tensors",
    "check_replicas",
    "init_distributed",
    "is_distributed",
    "named_state_tensors",
    "reduce_scalars",
    "seed_everything",
    "seed_for_rank",
    "shutdown",
    "sum_reducer",
]
