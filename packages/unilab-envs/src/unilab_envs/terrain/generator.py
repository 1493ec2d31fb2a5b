"""The terrain grid: sub-terrain tiles by difficulty (rows) and type (columns), built once.

Rows run along world x, columns along world y, and the grid is centred at the world origin,
inside a flat frame `border_width` wide whose top is at z = 0. Building is pure host work on
an `MjSpec` (numpy and MuJoCo's spec API, no warp): every rank of a multi-GPU run calls
`add_terrain` with the same config and gets the same model, bit for bit (`seed` fixes every
random draw, and the draws are made in a fixed order: row-major over the tiles).
"""

from __future__ import annotations

from typing import Literal, Protocol

import attrs
import mujoco
import numpy as np
from attrs import validators as v

from unilab_envs.terrain.boxes import FlatTerrain, PyramidStairsTerrain
from unilab_envs.terrain.heightfield import (
    PyramidSlopeTerrain,
    RandomUniformTerrain,
    WaveTerrain,
)
from unilab_envs.terrain.tiles import Tile, ordered_pair, positive

_OUTER_RGBA = (0.2, 0.2, 0.2, 1.0)


class SubTerrain(Protocol):
    """A sub-terrain type: a frozen config with a name, a proportion and a `build`.

    `build(tile, rng)` adds the tile's geoms through `tile` (tile coordinates, corner at
    (0, 0)) and returns the spawn point (x, y, z) in tile coordinates. It may draw from
    `rng` (and must draw only from it).
    """

    name: str
    proportion: float

    def build(self, tile: Tile, rng: np.random.Generator) -> tuple[float, float, float]: ...


def rough_sub_terrains() -> tuple[SubTerrain, ...]:
    """MJLab 1.6.0's `ROUGH_TERRAINS_CFG` sub-terrains, with their proportions."""
    return (
        FlatTerrain(name="flat", proportion=0.2),
        PyramidStairsTerrain(name="pyramid_stairs", proportion=0.2, step_height_range=(0.0, 0.1)),
        PyramidStairsTerrain(
            name="pyramid_stairs_inv",
            proportion=0.2,
            step_height_range=(0.0, 0.1),
            inverted=True,
        ),
        PyramidSlopeTerrain(name="hf_pyramid_slope", proportion=0.1, slope_range=(0.0, 1.0)),
        PyramidSlopeTerrain(
            name="hf_pyramid_slope_inv",
            proportion=0.1,
            slope_range=(0.0, 1.0),
            inverted=True,
        ),
        RandomUniformTerrain(name="random_rough", proportion=0.1),
        WaveTerrain(name="wave_terrain", proportion=0.1),
    )


def _unique_names(_inst, _attribute, value) -> None:
    names = [s.name for s in value]
    if not names:
        raise ValueError("sub_terrains must not be empty")
    if len(set(names)) != len(names):
        raise ValueError(f"sub-terrain names must be unique, got {names}")
    if sum(s.proportion for s in value) <= 0:
        raise ValueError("the sub-terrain proportions must not all be 0")


@attrs.frozen(kw_only=True)
class TerrainConfig:
    """A grid of sub-terrains; the defaults are MJLab 1.6.0's `ROUGH_TERRAINS_CFG` as its
    rough velocity tasks use it (`curriculum=True`).

    layout: "per_type" (MJLab's curriculum mode): one column per sub-terrain type, in order,
      `num_cols` ignored; proportions are spawn weights only. "proportional" (IsaacLab and
      legged_gym's curriculum mode): `num_cols` columns shared out by proportion, column j
      being the first type whose cumulative proportion exceeds j / num_cols. In both, row i
      has difficulty lerp(difficulty_range, i / (num_rows - 1)). "random" (MJLab's
      `curriculum=False`): every tile draws its type by proportion and its difficulty
      uniformly from `difficulty_range`.
    tile_size: (x, y) metres of one tile. border_width: the flat frame around the grid,
      metres (its top at z = 0, `border_height` deep). seed: every random draw.
    geom_group: MuJoCo geom group of every terrain geom (height scans select it).
    """

    sub_terrains: tuple[SubTerrain, ...] = attrs.field(
        factory=rough_sub_terrains, converter=tuple, validator=_unique_names
    )
    layout: Literal["per_type", "proportional", "random"] = attrs.field(
        default="per_type", validator=v.in_(("per_type", "proportional", "random"))
    )
    num_rows: int = attrs.field(default=10, validator=v.ge(1))
    num_cols: int = attrs.field(default=20, validator=v.ge(1))
    tile_size: tuple[float, float] = (8.0, 8.0)
    border_width: float = attrs.field(default=20.0, validator=v.ge(0.0))
    border_height: float = attrs.field(default=1.0, validator=positive)
    difficulty_range: tuple[float, float] = attrs.field(default=(0.0, 1.0), validator=ordered_pair)
    seed: int = 0
    geom_group: int = attrs.field(default=0, validator=[v.ge(0), v.lt(6)])


@attrs.frozen(kw_only=True, eq=False)
class TerrainLayout:
    """What `add_terrain` built, for spawning and curricula (host numpy arrays).

    origins: float64 [rows, cols, 3], the spawn point of each tile in world coordinates
      (the middle of its platform or the tile centre, on the surface).
    tile_types: int64 [rows, cols], index into `type_names` of each tile's type.
    difficulty: float64 [rows, cols], the difficulty each tile was built with.
    type_names: the sub-terrain names, in config order.
    spawn_weights: float64 [cols], the normalized proportion of each column's type
      ("per_type": where to spawn how many robots; uniform for the other layouts).
    extent: (x, y) half sizes in metres of the tiled area (border excluded), centred at 0.
    """

    origins: np.ndarray
    tile_types: np.ndarray
    difficulty: np.ndarray
    type_names: tuple[str, ...]
    spawn_weights: np.ndarray
    extent: tuple[float, float]

    @property
    def num_rows(self) -> int:
        return self.origins.shape[0]

    @property
    def num_cols(self) -> int:
        return self.origins.shape[1]


def _plan(config: TerrainConfig, rng: np.random.Generator):
    """(tile_types [rows, cols], difficulty [rows, cols], spawn_weights [cols])."""
    props = np.array([s.proportion for s in config.sub_terrains], dtype=np.float64)
    props /= props.sum()
    rows = config.num_rows
    lo, hi = config.difficulty_range
    by_row = lo + (hi - lo) * np.arange(rows) / max(rows - 1, 1)
    if config.layout == "per_type":
        types = np.tile(np.arange(len(props)), (rows, 1))
        return types, np.repeat(by_row[:, None], len(props), axis=1), props.copy()
    cols = config.num_cols
    if config.layout == "proportional":
        cum = np.cumsum(props)
        col_type = np.array(
            [int(np.searchsorted(cum, j / cols, side="right")) for j in range(cols)]
        )
        col_type = np.minimum(col_type, len(props) - 1)
        types = np.tile(col_type, (rows, 1))
        return types, np.repeat(by_row[:, None], cols, axis=1), np.full(cols, 1.0 / cols)
    types = np.empty((rows, cols), dtype=np.int64)
    diff = np.empty((rows, cols))
    for r in range(rows):
        for c in range(cols):
            types[r, c] = rng.choice(len(props), p=props)
            diff[r, c] = rng.uniform(lo, hi)
    return types, diff, np.full(cols, 1.0 / cols)


def add_terrain(spec: mujoco.MjSpec, config=None) -> TerrainLayout:
    """Add the terrain grid to `spec` as a static body named "terrain" (boxes and one
    heightfield asset per heightfield tile); returns the layout (spawn origins per tile).
    `config`: a `TerrainConfig` (None: the default one), or a `TerrainGeometry`, whose
    given geoms are added instead (`TerrainGeometry.add_to`).

    Deterministic: the same config (seed included) gives an identical model on every call,
    process and rank. The spec must not already have a body named "terrain".
    """
    config = config or TerrainConfig()
    if not isinstance(config, TerrainConfig):  # a TerrainGeometry (which imports this module)
        return config.add_to(spec)
    rng = np.random.default_rng(config.seed)
    types, diff, weights = _plan(config, rng)
    rows, cols = types.shape
    sx, sy = config.tile_size
    body = spec.worldbody.add_body(name="terrain")
    origins = np.zeros((rows, cols, 3))
    for r in range(rows):
        for c in range(cols):
            corner = (-rows * sx / 2 + r * sx, -cols * sy / 2 + c * sy, 0.0)
            tile = Tile(
                spec=spec,
                body=body,
                corner=corner,
                size=(sx, sy),
                difficulty=float(diff[r, c]),
                name=f"terrain_r{r}_c{c}",
                group=config.geom_group,
            )
            spawn = config.sub_terrains[types[r, c]].build(tile, rng)
            origins[r, c] = np.asarray(corner) + np.asarray(spawn)
    ex, ey = rows * sx / 2, cols * sy / 2
    if config.border_width > 0:
        outer = Tile(
            spec=spec,
            body=body,
            corner=(-ex - config.border_width, -ey - config.border_width, 0.0),
            size=(2 * (ex + config.border_width), 2 * (ey + config.border_width)),
            difficulty=0.0,
            name="terrain_border",
            group=config.geom_group,
        )
        outer.frame(config.border_width, 0.0, -config.border_height, _OUTER_RGBA)
    return TerrainLayout(
        origins=origins,
        tile_types=types,
        difficulty=diff,
        type_names=tuple(s.name for s in config.sub_terrains),
        spawn_weights=weights,
        extent=(ex, ey),
    )
