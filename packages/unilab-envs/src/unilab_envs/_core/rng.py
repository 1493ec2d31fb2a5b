"""Counter-based per-world random numbers for warp kernels.

Every draw is a pure function of (seed, counter, world, stream), so one seed determines every
environment's randomness, a replayed CUDA graph draws new numbers (the counter lives in a
device array the graph increments), and results do not depend on launch order.
"""

from __future__ import annotations

import warp as wp

# Streams 0-99 belong to the env; tasks use 100 and up.
STREAM_DR_FRICTION = 1
STREAM_DR_MASS = 2
STREAM_DR_GAIN = 3
STREAM_PUSH = 4
STREAM_PUSH_TIMER = 5
STREAM_EPISODE_START = 6
# The policy group's observation noise of `quadruped-velocity` and `humanoid-velocity` (their
# terms' observe kernel; other term tasks draw theirs from `terms.codegen.STREAM_OBS_NOISE`).
STREAM_VELOCITY_OBS_NOISE = 103


@wp.func
def _mix(x: wp.uint32) -> wp.uint32:
    # lowbias32-style integer hash; constants < 2**31 so warp's int literals stay exact.
    x = x ^ (x >> wp.uint32(16))
    x = x * wp.uint32(0x7FEB352D)
    x = x ^ (x >> wp.uint32(15))
    x = x * wp.uint32(0x5BD1E995)
    x = x ^ (x >> wp.uint32(16))
    return x


@wp.func
def world_rng(seed: int, counter: int, world: int, stream: int) -> wp.uint32:
    """Warp RNG state for (seed, counter, world, stream); draw with `wp.randf(state, lo, hi)`."""
    h = _mix(wp.uint32(seed) ^ wp.uint32(0x27D4EB2F))
    h = _mix(h ^ wp.uint32(counter))
    h = _mix(h ^ (wp.uint32(stream) * wp.uint32(0x165667B1)))
    return wp.rand_init(wp.int32(h), world)
