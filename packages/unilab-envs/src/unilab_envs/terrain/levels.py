"""Terrain levels: MJLab's `terrain_levels_vel` curriculum, one level per world, on the device.

Every world has a terrain type (a column of the grid, fixed: MJLab assigns types by env index
in proportion to the sub-terrain proportions) and a level (a row). At each of its resets,
inside the env step, a world moves (`TerrainLevels.move`, one warp launch):

- up one level when the distance its base walked from its origin (xy) exceeds half a tile;
- down one level when it walked less than half the distance its command asked for over a
  whole episode (|command xy| * episode_length_s / 2), and it did not move up;
- not at all on the env's very first reset (before any step: the base is at its spawn);
- promoted past the top level: a random level in [0, rows); never below level 0;

then its origin becomes the spawn point of tile (level, type), before its reset pose is drawn.
The move of one world is `move_world`; the curriculum term `terrain_levels_vel` runs it in the
env's reset kernel (a task's `curriculum` terms), `TerrainLevels.move` in a launch of its own.
Each move is also counted per world ("slot": the world with local index i, which has the same
type on every rank) in `outcomes` [2, N] (ups, downs since the last sync), so that a trainer
can make the levels identical on every rank at iteration boundaries (docs/semantics.md,
"Terrain levels"): `apply_outcomes` (the all-reduced counts: net up +1, net down -1 per slot)
or `adopt_levels` (rank 0's levels). The class never performs a collective itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
import warp as wp

from unilab_envs._core.rng import world_rng
from unilab_envs.curriculum import Curriculum
from unilab_envs.terms.config import term
from unilab_envs.terms.state import EnvState
from unilab_envs.terrain.generator import TerrainLayout

STREAM_TERRAIN_INIT = 120
STREAM_TERRAIN_TOP = 121


def proportional_counts(num_envs: int, proportions: Sequence[float]) -> np.ndarray:
    """Worlds per terrain type (MJLab's `_proportional_counts`): at least one per type when
    there are enough worlds, the rest by the largest-remainder method."""
    p = np.asarray(proportions, dtype=np.float64)
    p = p / p.sum()
    n = len(p)
    counts = np.ones(n, dtype=np.int64) if num_envs >= n else np.zeros(n, dtype=np.int64)
    remaining = num_envs - int(counts.sum())
    if remaining > 0:
        ideal = p * remaining
        floor = np.floor(ideal).astype(np.int64)
        counts += floor
        leftover = remaining - int(floor.sum())
        if leftover > 0:
            counts[np.argsort(-(ideal - floor), kind="stable")[:leftover]] += 1
    return counts


@wp.kernel
def _initial(
    seed: int,
    max_init: int,
    types: wp.array(dtype=wp.int32),
    table: wp.array2d(dtype=wp.vec3),
    levels: wp.array(dtype=wp.int32),
    shared: wp.array(dtype=wp.int32),
    origin: wp.array(dtype=wp.vec3),
):
    w = wp.tid()
    state = world_rng(seed, 0, w, STREAM_TERRAIN_INIT)
    lvl = wp.min(int(wp.randf(state) * float(max_init + 1)), max_init)
    levels[w] = lvl
    shared[w] = lvl
    origin[w] = table[lvl, types[w]]


@wp.func
def move_world(
    w: int,
    rng: wp.uint32,
    base: wp.vec3,
    cmd_x: float,
    cmd_y: float,
    stepped: int,
    half_tile: float,
    half_episode_s: float,
    table: wp.array2d(dtype=wp.vec3),
    types: wp.array(dtype=wp.int32),
    levels: wp.array(dtype=wp.int32),
    origin: wp.array(dtype=wp.vec3),
    outcomes: wp.array2d(dtype=wp.int32),
):
    # World w's reset-time move (the module docstring): `base` its base position, (cmd_x,
    # cmd_y) its commanded velocity, `stepped` non-zero once the env has stepped; a promotion
    # past the top draws from `rng`.
    lvl = levels[w]
    if stepped != 0:  # MJLab: no move before the first env step
        o = origin[w]
        dx = base[0] - o[0]
        dy = base[1] - o[1]
        distance = wp.sqrt(dx * dx + dy * dy)
        asked = wp.sqrt(cmd_x * cmd_x + cmd_y * cmd_y) * half_episode_s
        if distance > half_tile:
            lvl += 1
            outcomes[0, w] = outcomes[0, w] + 1
        elif distance < asked:
            lvl -= 1
            outcomes[1, w] = outcomes[1, w] + 1
        rows = table.shape[0]
        if lvl >= rows:
            lvl = wp.min(int(wp.randf(rng) * float(rows)), rows - 1)
        lvl = wp.max(lvl, 0)
    levels[w] = lvl
    origin[w] = table[lvl, types[w]]


@wp.kernel
def _move(
    seed: int,
    counter: wp.array(dtype=wp.int32),
    mask: wp.array(dtype=wp.bool),
    first: wp.array(dtype=wp.int32),
    xpos: wp.array2d(dtype=wp.vec3),
    root: int,
    command: wp.array(dtype=wp.vec3),
    half_tile: float,
    half_episode_s: float,
    table: wp.array2d(dtype=wp.vec3),
    types: wp.array(dtype=wp.int32),
    levels: wp.array(dtype=wp.int32),
    origin: wp.array(dtype=wp.vec3),
    outcomes: wp.array2d(dtype=wp.int32),
):
    w = wp.tid()
    if not mask[w]:
        return
    rng = world_rng(seed, counter[0], w, STREAM_TERRAIN_TOP)
    c = command[w]
    move_world(
        w, rng, xpos[w, root], c[0], c[1], first[0], half_tile, half_episode_s, table, types,
        levels, origin, outcomes,
    )  # fmt: skip


@wp.struct
class TerrainLevelsParams:
    """The arrays of a `TerrainLevels` (`Ref`s of the task's: levels, origin, outcomes,
    table, types), `env_step` (int32 [1], the env's step counter: no move before the first
    step), half_tile (m), half_episode_s (s), command_col (the command's first column of
    (vx, vy))."""

    levels: wp.array(dtype=wp.int32)
    origin: wp.array(dtype=wp.vec3)
    outcomes: wp.array2d(dtype=wp.int32)
    table: wp.array2d(dtype=wp.vec3)
    types: wp.array(dtype=wp.int32)
    env_step: wp.array(dtype=wp.int32)
    half_tile: float
    half_episode_s: float
    command_col: int


@term(defaults={"command_col": 0})
@wp.func
def terrain_levels_vel(w: int, rng: wp.uint32, s: EnvState, p: TerrainLevelsParams) -> wp.uint32:
    """MJLab's terrain_levels_vel at a world's reset: up a level after walking more than half
    a tile, down after less than half the commanded distance, then its origin becomes its tile's
    spawn point (`TerrainLevels`)."""
    c = p.command_col
    move_world(
        w, rng, s.xpos[w, s.root_body], s.command[w, c], s.command[w, c + 1], p.env_step[0],
        p.half_tile, p.half_episode_s, p.table, p.types, p.levels, p.origin, p.outcomes,
    )  # fmt: skip
    return rng


class TerrainLevels(Curriculum):
    """Per-world terrain levels on a `TerrainLayout` (see the module docstring).

    Device arrays (after `bind`): `levels` int32 [N], `types` int32 [N] (columns), `origin`
    vec3 [N] (each world's spawn point: tile (level, type)), `shared` int32 [N] (each slot's
    level at the last sync), `outcomes` int32 [2, N] (ups, downs since the last sync).
    `level` (the `Curriculum` scalar) is the mean level / (rows - 1), as of the last
    `metric_sums` or sync (a host value: reading it never waits for the device).
    """

    per_world = True  # trainers sync it with the per-world protocol below

    def __init__(
        self,
        layout: TerrainLayout,
        *,
        max_init_level: int | None = None,
        episode_length_s: float,
        seed: int = 0,
    ) -> None:
        self.layout = layout
        self.rows = layout.num_rows
        self.half_tile = layout.extent[0] / layout.num_rows  # half a tile's x size (m)
        top = self.rows - 1
        self.max_init_level = top if max_init_level is None else min(int(max_init_level), top)
        self.episode_length_s = float(episode_length_s)
        self.seed = int(seed) & 0x7FFFFFFF
        self.syncs = 0
        self._level = 0.0
        self.num_envs = 0

    # ------------------------------------------------------------------ setup
    def bind(self, num_envs: int, device: Any) -> None:
        """Allocate the per-world arrays and draw the initial levels (uniform in
        [0, max_init_level], from the terrain seed: the same on every rank)."""
        n = self.num_envs = int(num_envs)
        lay = self.layout
        counts = proportional_counts(n, lay.spawn_weights)
        types = np.repeat(np.arange(lay.num_cols), counts).astype(np.int32)
        self.table = wp.array(lay.origins.astype(np.float32), dtype=wp.vec3, device=device)
        self.types = wp.array(types, dtype=wp.int32, device=device)
        self.levels = wp.zeros(n, dtype=wp.int32, device=device)
        self.shared = wp.zeros(n, dtype=wp.int32, device=device)
        self.origin = wp.zeros(n, dtype=wp.vec3, device=device)
        self.outcomes = wp.zeros((2, n), dtype=wp.int32, device=device)
        self.device = device
        wp.launch(
            _initial,
            dim=n,
            inputs=[self.seed, self.max_init_level, self.types, self.table],
            outputs=[self.levels, self.shared, self.origin],
            device=device,
        )
        self._torch = {
            k: wp.to_torch(getattr(self, k)) for k in ("levels", "shared", "outcomes", "origin")
        }
        self._types_np = types

    def move(
        self,
        seed: int,
        counter: wp.array,
        mask: wp.array,
        stepped: wp.array,
        xpos: wp.array,
        root: int,
        command: wp.array,
    ) -> None:
        """The reset-time move of the worlds in `mask` (one launch; see the module docstring).
        `stepped` int32 [1]: non-zero once the env has stepped; `xpos` the MJWarp body
        positions, `root` the base body, `command` vec3 [N] (xy: the commanded velocity)."""
        wp.launch(
            _move,
            dim=self.num_envs,
            inputs=[
                seed, counter, mask, stepped, xpos, root, command, self.half_tile,
                0.5 * self.episode_length_s, self.table, self.types,
            ],
            outputs=[self.levels, self.origin, self.outcomes],
            device=self.device,
        )  # fmt: skip

    # ------------------------------------------------------------------ Curriculum
    @property
    def level(self) -> float:
        return self._level

    def update(self, metrics: Mapping[str, float]) -> bool:
        """Levels move inside the env step, not from episode means: always False."""
        return False

    def metric_sums(self) -> dict[str, tuple[float, float]]:
        """This rank's level statistics as {name: (sum, count)} (one host read):
        "terrain_levels/mean" (the level over all worlds), "terrain_levels/level_<k>" (the
        fraction of worlds at level k) and "terrain_levels/<type name>" (the mean level of
        that type's worlds). Global values are the sums
        over ranks divided by the counts over ranks (count-weighted)."""
        levels = self._torch["levels"].to("cpu", torch.int64).numpy()
        n = float(len(levels))
        out: dict[str, tuple[float, float]] = {"terrain_levels/mean": (float(levels.sum()), n)}
        hist = np.bincount(levels, minlength=self.rows)
        for k in range(self.rows):
            out[f"terrain_levels/level_{k}"] = (float(hist[k]), n)
        for t, name in enumerate(self.layout.type_names):
            sel = self._types_np == t
            if sel.any():
                out[f"terrain_levels/{name}"] = (float(levels[sel].sum()), float(sel.sum()))
        self._level = float(levels.mean()) / max(self.rows - 1, 1) if n else 0.0
        return out

    # ------------------------------------------------------------------ sync (the trainer)
    def outcome_counts(self) -> torch.Tensor:
        """int32 [2, N] torch view of the ups and downs per slot since the last sync."""
        return self._torch["outcomes"]

    def levels_tensor(self) -> torch.Tensor:
        """int32 [N] torch view of the per-world levels (what `rank0` broadcasts)."""
        return self._torch["levels"]

    def clear_outcomes(self) -> None:
        """`local` sync: each rank keeps its own levels (they become the slots' shared
        levels, as after any sync) and forgets the counts."""
        t = self._torch
        t["shared"].copy_(t["levels"])
        t["outcomes"].zero_()
        self.syncs += 1

    def apply_outcomes(self, total: torch.Tensor) -> None:
        """`global` sync: `total` int [2, N] = the counts summed over ranks. Per slot: net up
        -> shared level + 1, net down -> - 1 (never below 0), past the top -> a level drawn
        from a generator seeded by (seed, sync index), so the same on every rank; then every
        world's level is its slot's (its next reset moves from there)."""
        t = self._torch
        net = torch.sign(total[0].to(torch.int64) - total[1].to(torch.int64))
        shared = t["shared"].to(torch.int64) + net
        gen = torch.Generator(device="cpu").manual_seed(self.seed * 1_000_003 + self.syncs)
        draw = torch.randint(0, self.rows, (self.num_envs,), generator=gen)
        shared = torch.where(shared >= self.rows, draw.to(shared.device), shared.clamp(min=0))
        t["shared"].copy_(shared)
        t["levels"].copy_(shared)
        t["outcomes"].zero_()
        self.syncs += 1

    def adopt_levels(self, levels: torch.Tensor) -> None:
        """`rank0` sync: every world's level (and its slot's shared level) is `levels`."""
        t = self._torch
        t["levels"].copy_(levels)
        t["shared"].copy_(levels)
        t["outcomes"].zero_()
        self.syncs += 1

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        t = self._torch
        return {
            "rows": self.rows,
            "types": self._types_np.tolist(),
            "levels": t["levels"].cpu().tolist(),
            "shared": t["shared"].cpu().tolist(),
            "outcomes": t["outcomes"].cpu().tolist(),
            "origin": t["origin"].cpu().tolist(),
            "syncs": self.syncs,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a `state_dict()`. Of the same world count: exactly. Of another: re-split by
        type, world k of type t taking the level of saved world (k mod n_t) of type t (n_t
        the saved worlds of that type); origins follow the levels, outcomes start at 0."""
        for key in ("rows", "types", "levels", "shared", "syncs"):
            if key not in state:
                raise ValueError(f"terrain-level state lacks {key!r} (not a TerrainLevels state)")
        if int(state["rows"]) != self.rows:
            raise ValueError(
                f"terrain-level state has {state['rows']} levels, this terrain {self.rows}"
            )
        t = self._torch
        types = np.asarray(state["types"], dtype=np.int64)
        if np.array_equal(types, self._types_np) and "origin" in state:
            t["levels"].copy_(torch.as_tensor(state["levels"], dtype=torch.int32))
            t["shared"].copy_(torch.as_tensor(state["shared"], dtype=torch.int32))
            t["outcomes"].copy_(torch.as_tensor(state["outcomes"], dtype=torch.int32))
            t["origin"].copy_(torch.as_tensor(state["origin"], dtype=torch.float32))
        else:
            levels = np.asarray(state["levels"], dtype=np.int64)
            shared = np.asarray(state["shared"], dtype=np.int64)
            new_levels = np.zeros(self.num_envs, dtype=np.int64)
            new_shared = np.zeros(self.num_envs, dtype=np.int64)
            for typ in np.unique(self._types_np):
                dst = np.flatnonzero(self._types_np == typ)
                src = np.flatnonzero(types == typ)
                if len(src) == 0:
                    continue  # a type the saved run had no world of: level 0
                pick = src[np.arange(len(dst)) % len(src)]
                new_levels[dst], new_shared[dst] = levels[pick], shared[pick]
            t["levels"].copy_(torch.as_tensor(new_levels, dtype=torch.int32))
            t["shared"].copy_(torch.as_tensor(new_shared, dtype=torch.int32))
            t["outcomes"].zero_()
            table = torch.as_tensor(self.layout.origins, dtype=torch.float32)
            t["origin"].copy_(table[torch.as_tensor(new_levels), torch.as_tensor(self._types_np)])
        self.syncs = int(state["syncs"])
        self.metric_sums()

    def load_rank_states(self, states: Sequence[Mapping[str, Any] | None], rank: int) -> None:
        """Resume from a checkpoint's per-rank states (saved at any world size): this rank
        takes saved rank `rank mod len(states)`'s, re-split by type (`load_state_dict`)."""
        state = states[rank % len(states)]
        if state is not None:
            self.load_state_dict(state)
