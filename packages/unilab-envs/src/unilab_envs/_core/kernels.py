"""Warp kernels of the env's own bookkeeping (episodes, actions, counters, overflow)."""

from __future__ import annotations

import warp as wp

from unilab_envs._core.reset import ResetArrays, reset_world
from unilab_envs._core.rng import STREAM_EPISODE_START, world_rng


@wp.kernel
def episode_bookkeeping(
    reward: wp.array(dtype=float),
    terminated: wp.array(dtype=wp.bool),
    time_out: wp.array(dtype=wp.bool),
    log: wp.array2d(dtype=float),
    nlog: int,
    max_steps: int,
    episode_length: wp.array(dtype=wp.int32),
    episode_return: wp.array(dtype=float),
    episode_log: wp.array2d(dtype=float),
    action: wp.array2d(dtype=float),
    nact: int,
    overflow: wp.array(dtype=int),
    overflow_seen: wp.array(dtype=int),
    truncated: wp.array(dtype=wp.bool),
    done: wp.array(dtype=wp.bool),
    out_return: wp.array(dtype=float),
    out_length: wp.array(dtype=float),
    out_log: wp.array2d(dtype=float),
    last_action: wp.array2d(dtype=float),
    reset_physics: int,
    physics: ResetArrays,
):
    # Time limit (or the task's own time-out) only where the state is not terminal: a
    # terminal state is never bootstrapped.
    w = wp.tid()
    # MJWarp's overflow bits of this step's physics, accumulated for the periodic check (read
    # before the reset below zeroes them).
    overflow_seen[w] = overflow_seen[w] | overflow[w]
    length = episode_length[w]
    trunc = (length >= max_steps or time_out[w]) and (not terminated[w])
    d = terminated[w] or trunc
    truncated[w] = trunc
    done[w] = d
    ret = episode_return[w] + reward[w]
    if d:
        out_return[w] = ret
        out_length[w] = float(length)
        episode_return[w] = 0.0
        episode_length[w] = 0
    else:
        out_return[w] = 0.0
        out_length[w] = 0.0
        episode_return[w] = ret
    for i in range(nlog):
        s = episode_log[i, w] + log[i, w]
        if d:
            out_log[i, w] = s
            episode_log[i, w] = 0.0
        else:
            out_log[i, w] = 0.0
            episode_log[i, w] = s
    # The action history: cleared where the world is about to be reset.
    for a in range(nact):
        if d:
            last_action[w, a] = 0.0
        else:
            last_action[w, a] = action[w, a]
    # The MJWarp state of a finished world back to the model's defaults, here rather than in a
    # launch of its own (`reset_physics` = 0: the env calls `mujoco_warp.reset_data` instead).
    if d and reset_physics != 0:
        reset_world(w, physics)


@wp.kernel
def begin_step(
    raw: wp.array2d(dtype=float),
    bound: float,
    counter: wp.array(dtype=wp.int32),
    episode_length: wp.array(dtype=wp.int32),
    action: wp.array2d(dtype=float),
    first_bad_world: wp.array(dtype=wp.int32),
):
    # The first kernel of a control step (the step's counters here save separate launches).
    # Clamps the actions to [-bound, bound] (the task's action_bound); a non-finite value passes through unchanged (as
    # torch.clamp does) and its world is recorded for the env's deferred check. Thread (0, 0)
    # advances the RNG counter: every later kernel of the step (pushes, resets, observation
    # noise) reads the new value, so each step draws new numbers. Thread (w, 0) counts the
    # step in world w's episode length. Nothing before this kernel reads either.
    w, a = wp.tid()
    if a == 0:
        episode_length[w] = episode_length[w] + 1
        if w == 0:
            counter[0] = counter[0] + 1
    v = raw[w, a]
    if wp.isfinite(v):
        action[w, a] = wp.clamp(v, -bound, bound)
    else:
        action[w, a] = v
        wp.atomic_min(first_bad_world, 0, w)


@wp.kernel
def reset_all_bookkeeping(
    counter: wp.array(dtype=wp.int32),
    nlog: int,
    episode_length: wp.array(dtype=wp.int32),
    episode_return: wp.array(dtype=float),
    episode_log: wp.array2d(dtype=float),
    last_action: wp.array2d(dtype=float),
    nact: int,
):
    # Starts `env.reset()`; thread 0 advances the RNG counter (as `begin_step` does for a step).
    w = wp.tid()
    if w == 0:
        counter[0] = counter[0] + 1
    episode_length[w] = 0
    episode_return[w] = 0.0
    for i in range(nlog):
        episode_log[i, w] = 0.0
    for a in range(nact):
        last_action[w, a] = 0.0


@wp.kernel
def draw_episode_lengths(
    seed: int,
    counter: wp.array(dtype=wp.int32),
    max_steps: int,
    episode_length: wp.array(dtype=wp.int32),
):
    # `env.randomize_episode_lengths()`: each world's step count in its current episode,
    # uniform in [0, max_steps), from the env's seed and the current RNG counter.
    w = wp.tid()
    state = world_rng(seed, counter[0], w, STREAM_EPISODE_START)
    episode_length[w] = wp.int32(wp.randu(state) % wp.uint32(max_steps))


@wp.kernel
def copy_where_not_done(
    done: wp.array(dtype=wp.bool), src: wp.array2d(dtype=float), dst: wp.array2d(dtype=float)
):
    # final_obs = obs for the worlds that go on (their observation after the step's forward).
    w, k = wp.tid()
    if not done[w]:
        dst[w, k] = src[w, k]
