"""Geometry helpers shared by the sub-terrain types: boxes and heightfields on a tile.

A tile is the rectangle [0, sx] x [0, sy] of a sub-terrain in its own frame; `corner` is
where that frame's origin sits in the world. Every geom goes on the static `terrain` body
with zero mass (a static body's mass is meaningless, and thousands of dense boxes would
inflate `stat.meanmass`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import attrs
import mujoco
import numpy as np

# MuJoCo rejects non-positive sizes; a flat heightfield or a zero-height step gets this.
MIN_SIZE = 1e-3
# Depth of a box whose top is flush with the ground, so it is a solid slab, not a sheet.
MIN_SLAB = 0.05


@attrs.frozen(kw_only=True)
class Tile:
    """Where and how one sub-terrain is built: passed to `SubTerrain.build`.

    `corner` (x, y, z) is the world position of the tile's (0, 0) corner, `size` (sx, sy) its
    extent in metres, `difficulty` in the config's `difficulty_range`, `name` a unique prefix
    for its geoms and assets, `group` the geom group of terrain geoms.
    """

    spec: mujoco.MjSpec
    body: mujoco.MjsBody
    corner: tuple[float, float, float]
    size: tuple[float, float]
    difficulty: float
    name: str
    group: int
    # Geom numbering within the tile (asking the body for its geom count is O(geoms)).
    _ids: Iterator[int] = attrs.field(factory=itertools.count, init=False, repr=False)

    def box(
        self,
        center: Sequence[float],
        half: Sequence[float],
        rgba: Sequence[float],
    ) -> None:
        """One box, `center` in tile coordinates, `half` its half sizes (clamped > 0)."""
        self.body.add_geom(
            name=f"{self.name}_g{next(self._ids)}",
            type=mujoco.mjtGeom.mjGEOM_BOX,
            pos=[self.corner[i] + float(center[i]) for i in range(3)],
            size=[max(float(h), MIN_SIZE * 0.5) for h in half],
            rgba=list(rgba),
            group=self.group,
            mass=0.0,
        )

    def slab(self, x0: float, x1: float, y0: float, y1: float, top: float, bottom: float, rgba):
        """An axis-aligned box spanning [x0, x1] x [y0, y1] x [bottom, top] (tile coordinates)."""
        self.box(
            ((x0 + x1) / 2, (y0 + y1) / 2, (top + bottom) / 2),
            ((x1 - x0) / 2, (y1 - y0) / 2, (top - bottom) / 2),
            rgba,
        )

    def frame(self, width: float, top: float, bottom: float, rgba) -> None:
        """Four boxes covering the outer `width` of the tile (nothing if width <= 0)."""
        if width <= 0.0:
            return
        sx, sy = self.size
        self.slab(0.0, sx, 0.0, width, top, bottom, rgba)
        self.slab(0.0, sx, sy - width, sy, top, bottom, rgba)
        self.slab(0.0, width, width, sy - width, top, bottom, rgba)
        self.slab(sx - width, sx, width, sy - width, top, bottom, rgba)

    def heightfield(self, heights: np.ndarray, base_ratio: float, rgba) -> None:
        """A heightfield covering the whole tile with `heights` (metres, shape (ny, nx)).

        MuJoCo's layout: row r is y = r * sy / (ny - 1), column c is x = c * sx / (nx - 1);
        the surface is bilinear between those vertices (two triangles per cell). The geom
        sits at the lowest height, so the surface is exactly `heights` in world z (plus
        `corner[2]`); the solid base below it is `base_ratio` times the relief deep.
        """
        ny, nx = heights.shape
        lo, hi = float(heights.min()), float(heights.max())
        relief = hi - lo
        top = max(relief, MIN_SIZE)
        data = (heights - lo) / relief if relief > 0 else np.zeros_like(heights)
        hfield = self.spec.add_hfield(
            name=f"{self.name}_hf",
            size=[self.size[0] / 2, self.size[1] / 2, top, max(relief * base_ratio, MIN_SIZE)],
            nrow=ny,
            ncol=nx,
            userdata=data.astype(np.float32).ravel().tolist(),
        )
        self.body.add_geom(
            name=f"{self.name}_g{next(self._ids)}",
            type=mujoco.mjtGeom.mjGEOM_HFIELD,
            hfieldname=hfield.name,
            pos=[
                self.corner[0] + self.size[0] / 2,
                self.corner[1] + self.size[1] / 2,
                self.corner[2] + lo,
            ],
            rgba=list(rgba),
            group=self.group,
            mass=0.0,
        )


def positive(_inst, attribute, value) -> None:
    """attrs validator: value > 0."""
    if not value > 0:
        raise ValueError(f"{attribute.name} must be > 0, got {value}")


def ordered_pair(_inst, attribute, value) -> None:
    """attrs validator: a (lo, hi) pair with lo <= hi."""
    if len(value) != 2 or value[0] > value[1]:
        raise ValueError(f"{attribute.name} must be (lo, hi) with lo <= hi, got {value}")


def grid_points(size: float, resolution: float) -> np.ndarray:
    """Vertex coordinates 0, resolution, ..., size of a heightfield side (size/resolution + 1)."""
    n = round(size / resolution) + 1
    return np.linspace(0.0, size, n)


def lerp(value_range: tuple[float, float], t: float) -> float:
    return value_range[0] + t * (value_range[1] - value_range[0])
