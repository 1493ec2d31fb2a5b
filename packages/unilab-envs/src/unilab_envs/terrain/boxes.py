"""Sub-terrain types made of boxes: flat ground, pyramid stairs, stepping stones."""

from __future__ import annotations

import attrs
import numpy as np
from attrs import validators as v

from unilab_envs.terrain.tiles import MIN_SLAB, Tile, lerp, ordered_pair, positive

_FLAT_RGBA = (0.5, 0.5, 0.5, 1.0)
_STAIR_RGBA = (0.3, 0.45, 0.75, 1.0)
_BORDER_RGBA = (0.25, 0.35, 0.55, 1.0)
_STONE_RGBA = (0.3, 0.65, 0.4, 1.0)
_PIT_RGBA = (0.1, 0.1, 0.1, 1.0)


@attrs.frozen(kw_only=True)
class FlatTerrain:
    """One slab with its top at z = 0. Spawn: tile centre."""

    name: str
    proportion: float = attrs.field(default=1.0, validator=v.ge(0.0))

    def build(self, tile: Tile, rng: np.random.Generator) -> tuple[float, float, float]:
        del rng
        sx, sy = tile.size
        tile.slab(0.0, sx, 0.0, sy, 0.0, -MIN_SLAB, _FLAT_RGBA)
        return (sx / 2, sy / 2, 0.0)


@attrs.frozen(kw_only=True)
class PyramidStairsTerrain:
    """Square rings of steps around a central platform, climbing (or, `inverted`,
    descending) `step_height` per ring from the `border_width` frame at z = 0.

    Step height grows from `step_height_range[0]` to `[1]` with difficulty; each step is
    `step_width` deep; the number of rings is the most that leave `platform_width` in the
    middle. Each ring is four boxes (two full-length along x, two between them), plus one
    platform box and four frame boxes: 4 n + 5 geoms. Spawn: platform centre, on top.
    """

    name: str
    proportion: float = attrs.field(default=1.0, validator=v.ge(0.0))
    step_height_range: tuple[float, float] = attrs.field(default=(0.0, 0.2), validator=ordered_pair)
    step_width: float = attrs.field(default=0.3, validator=positive)
    platform_width: float = attrs.field(default=3.0, validator=v.ge(0.0))
    border_width: float = attrs.field(default=1.0, validator=v.ge(0.0))
    inverted: bool = False

    def num_steps(self, size: tuple[float, float]) -> int:
        inner = min(size) - 2 * self.border_width - self.platform_width
        return max(0, int(inner / (2 * self.step_width)))

    def build(self, tile: Tile, rng: np.random.Generator) -> tuple[float, float, float]:
        del rng
        sx, sy = tile.size
        h = lerp(self.step_height_range, tile.difficulty)
        sign = -1.0 if self.inverted else 1.0
        n = self.num_steps(tile.size)
        top_center = sign * (n + 1) * h
        bottom = min(0.0, top_center) - max(h, MIN_SLAB)
        tile.frame(self.border_width, 0.0, -max(h, MIN_SLAB), _BORDER_RGBA)
        x0, y0 = self.border_width, self.border_width
        x1, y1 = sx - self.border_width, sy - self.border_width
        w = self.step_width
        for k in range(n):
            top = sign * (k + 1) * h
            a0, a1, b0, b1 = x0 + k * w, x1 - k * w, y0 + k * w, y1 - k * w
            tile.slab(a0, a1, b0, b0 + w, top, bottom, _STAIR_RGBA)
            tile.slab(a0, a1, b1 - w, b1, top, bottom, _STAIR_RGBA)
            tile.slab(a0, a0 + w, b0 + w, b1 - w, top, bottom, _STAIR_RGBA)
            tile.slab(a1 - w, a1, b0 + w, b1 - w, top, bottom, _STAIR_RGBA)
        tile.slab(x0 + n * w, x1 - n * w, y0 + n * w, y1 - n * w, top_center, bottom, _STAIR_RGBA)
        return (sx / 2, sy / 2, top_center)


@attrs.frozen(kw_only=True)
class SteppingStonesTerrain:
    """Square stones over a pit `floor_depth` deep, around a central platform at z = 0.

    The stones sit on a grid of fixed pitch (`stone_size_range[1] + stone_gap`), so their
    count never changes with difficulty; the stone side shrinks from `stone_size_range[1]`
    (difficulty 0) to `[0]` (difficulty 1), widening the gaps. With difficulty d each stone
    is also moved by up to `displacement * d`, resized by up to `size_variation * d` and
    raised or lowered by up to `height_variation * d`. Stones that would overlap the
    platform are left out. Spawn: platform centre.
    """

    name: str
    proportion: float = attrs.field(default=1.0, validator=v.ge(0.0))
    stone_size_range: tuple[float, float] = attrs.field(default=(0.4, 0.8), validator=ordered_pair)
    stone_gap: float = attrs.field(default=0.2, validator=v.ge(0.0))
    height_variation: float = attrs.field(default=0.1, validator=v.ge(0.0))
    size_variation: float = attrs.field(default=0.2, validator=v.ge(0.0))
    displacement: float = attrs.field(default=0.1, validator=v.ge(0.0))
    floor_depth: float = attrs.field(default=2.0, validator=positive)
    platform_width: float = attrs.field(default=1.0, validator=v.ge(0.0))
    border_width: float = attrs.field(default=0.25, validator=v.ge(0.0))

    def build(self, tile: Tile, rng: np.random.Generator) -> tuple[float, float, float]:
        sx, sy = tile.size
        d = tile.difficulty
        bottom = -self.floor_depth
        tile.frame(self.border_width, 0.0, bottom, _BORDER_RGBA)
        tile.slab(0.0, sx, 0.0, sy, bottom, bottom - MIN_SLAB, _PIT_RGBA)
        p = self.platform_width / 2
        tile.slab(sx / 2 - p, sx / 2 + p, sy / 2 - p, sy / 2 + p, 0.0, bottom, _FLAT_RGBA)
        side = self.stone_size_range[1] - d * (self.stone_size_range[1] - self.stone_size_range[0])
        pitch = self.stone_size_range[1] + self.stone_gap
        bw = self.border_width
        for cx in np.arange(bw + pitch / 2, sx - bw - pitch / 2 + 1e-9, pitch):
            for cy in np.arange(bw + pitch / 2, sy - bw - pitch / 2 + 1e-9, pitch):
                px, py = np.array([cx, cy]) + rng.uniform(-1, 1, 2) * self.displacement * d
                hx, hy = (side + rng.uniform(-1, 1, 2) * self.size_variation * d) / 2
                top = rng.uniform(-1, 1) * self.height_variation * d
                if abs(px - sx / 2) < p + hx and abs(py - sy / 2) < p + hy:
                    continue
                tile.slab(px - hx, px + hx, py - hy, py + hy, top, bottom, _STONE_RGBA)
        return (sx / 2, sy / 2, 0.0)
