"""Warp kernels of the env's own bookkeeping (episodes, actions, counters, overflow)."""

from __future__ import annotations

import warp as wp


@wp.kernel
def increment_episode_length(episode_length: wp.array(dtype=wp.int32)):
    w = wp.tid()
    episode_length[w] = episode_length[w] + 1


@wp.kernel
def episode_bookkeeping(
    reward: wp.array(dtype=float),
    terminated: wp.array(dtype=wp.bool),
    log: wp.array2d(dtype=float),
    nlog: int,
    max_steps: int,
    episode_length: wp.array(dtype=wp.int32),
    episode_return: wp.array(dtype=float),
    episode_log: wp.array2d(dtype=float),
    action: wp.array2d(dtype=float),
    nact: int,
    truncated: wp.array(dtype=wp.bool),
    done: wp.array(dtype=wp.bool),
    out_return: wp.array(dtype=float),
    out_length: wp.array(dtype=float),
    out_log: wp.array2d(dtype=float),
    last_action: wp.array2d(dtype=float),
):
    # Time limit only where the state is not terminal: a terminal state is never bootstrapped.
    w = wp.tid()
    length = episode_length[w]
    trunc = (length >= max_steps) and (not terminated[w])
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


@wp.kernel
def clamp_actions(
    raw: wp.array2d(dtype=float),
    action: wp.array2d(dtype=float),
    first_bad_world: wp.array(dtype=wp.int32),
):
    # Clamp to [-1, 1]; a non-finite value passes through unchanged (as torch.clamp does) and
    # its world is recorded for the env's deferred check.
    w, a = wp.tid()
    v = raw[w, a]
    if wp.isfinite(v):
        action[w, a] = wp.clamp(v, -1.0, 1.0)
    else:
        action[w, a] = v
        wp.atomic_min(first_bad_world, 0, w)


@wp.kernel
def reset_all_bookkeeping(
    nlog: int,
    episode_length: wp.array(dtype=wp.int32),
    episode_return: wp.array(dtype=float),
    episode_log: wp.array2d(dtype=float),
    last_action: wp.array2d(dtype=float),
    nact: int,
):
    w = wp.tid()
    episode_length[w] = 0
    episode_return[w] = 0.0
    for i in range(nlog):
        episode_log[i, w] = 0.0
    for a in range(nact):
        last_action[w, a] = 0.0


@wp.kernel
def increment_counter(counter: wp.array(dtype=wp.int32)):
    counter[0] = counter[0] + 1


@wp.kernel
def accumulate_overflow(overflow: wp.array(dtype=int), seen: wp.array(dtype=int)):
    w = wp.tid()
    seen[w] = seen[w] | overflow[w]
