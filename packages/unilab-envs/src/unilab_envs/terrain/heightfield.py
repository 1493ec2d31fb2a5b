"""Sub-terrain types made of one heightfield per tile: slopes, random roughness, waves.

Heights are computed on a vertex grid of `horizontal_scale` metres (a 8 m tile at 0.1 m is
81 x 81 vertices) and rounded to multiples of `vertical_scale` metres, as MJLab's int16
heightfields are. A `border_width` frame of the tile stays at z = 0, so neighbouring tiles
meet at ground level.
"""

from __future__ import annotations

import attrs
import numpy as np
from attrs import validators as v

from unilab_envs.terrain.tiles import Tile, grid_points, lerp, ordered_pair, positive

_SLOPE_RGBA = (0.55, 0.45, 0.35, 1.0)
_ROUGH_RGBA = (0.45, 0.5, 0.4, 1.0)
_WAVE_RGBA = (0.4, 0.45, 0.55, 1.0)


@attrs.frozen(kw_only=True)
class HeightfieldTerrain:
    """Fields shared by the heightfield types (not a type itself)."""

    name: str
    proportion: float = attrs.field(default=1.0, validator=v.ge(0.0))
    border_width: float = attrs.field(default=0.25, validator=v.ge(0.0))
    horizontal_scale: float = attrs.field(default=0.1, validator=positive)
    vertical_scale: float = attrs.field(default=0.005, validator=positive)
    base_thickness_ratio: float = attrs.field(default=1.0, validator=v.ge(0.0))

    def grid(self, size: tuple[float, float]):
        """(xs, ys, inner mask (ny, nx)) of the tile's vertex grid; inner = off the border."""
        xs = grid_points(size[0], self.horizontal_scale)
        ys = grid_points(size[1], self.horizontal_scale)
        eps = 1e-9
        bw = self.border_width
        in_x = (xs >= bw - eps) & (xs <= size[0] - bw + eps)
        in_y = (ys >= bw - eps) & (ys <= size[1] - bw + eps)
        return xs, ys, in_y[:, None] & in_x[None, :]

    def quantize(self, heights: np.ndarray) -> np.ndarray:
        return np.rint(heights / self.vertical_scale) * self.vertical_scale


@attrs.frozen(kw_only=True)
class PyramidSlopeTerrain(HeightfieldTerrain):
    """A four-sided pyramid (or, `inverted`, a pit) with a flat square platform in the middle.

    Slope (rise over run) grows from `slope_range[0]` to `[1]` with difficulty. The surface
    is `slope * half_inner_width * u(x) * v(y)` with u, v tent functions (1 at the centre, 0
    at the border), clipped at the height of the platform's corner. Spawn: platform centre.
    """

    slope_range: tuple[float, float] = attrs.field(default=(0.0, 0.7), validator=ordered_pair)
    platform_width: float = attrs.field(default=2.0, validator=v.ge(0.0))
    inverted: bool = False

    def build(self, tile: Tile, rng: np.random.Generator) -> tuple[float, float, float]:
        del rng
        sx, sy = tile.size
        slope = lerp(self.slope_range, tile.difficulty) * (-1.0 if self.inverted else 1.0)
        xs, ys, inner = self.grid(tile.size)
        hx, hy = sx / 2 - self.border_width, sy / 2 - self.border_width
        u = np.clip(1.0 - np.abs(xs - sx / 2) / hx, 0.0, 1.0)
        w = np.clip(1.0 - np.abs(ys - sy / 2) / hy, 0.0, 1.0)
        peak = slope * hx
        z_platform = (
            peak * (1.0 - self.platform_width / 2 / hx) * (1.0 - self.platform_width / 2 / hy)
        )
        heights = np.clip(
            peak * w[:, None] * u[None, :], min(0.0, z_platform), max(0.0, z_platform)
        )
        heights = self.quantize(np.where(inner, heights, 0.0))
        tile.heightfield(heights, self.base_thickness_ratio, _SLOPE_RGBA)
        return (sx / 2, sy / 2, float(self.quantize(np.asarray(z_platform))))


@attrs.frozen(kw_only=True)
class RandomUniformTerrain(HeightfieldTerrain):
    """Every inner vertex an independent uniform draw from the multiples of `noise_step` in
    `noise_range` (metres). MJLab ignores the difficulty here unless
    `scale_with_difficulty` (then the range is scaled by it). Spawn: tile centre, at the
    highest height drawn within 0.5 m of it."""

    noise_range: tuple[float, float] = attrs.field(default=(0.02, 0.10), validator=ordered_pair)
    noise_step: float = attrs.field(default=0.02, validator=positive)
    scale_with_difficulty: bool = False

    def build(self, tile: Tile, rng: np.random.Generator) -> tuple[float, float, float]:
        sx, sy = tile.size
        scale = tile.difficulty if self.scale_with_difficulty else 1.0
        lo, hi = self.noise_range[0] * scale, self.noise_range[1] * scale
        levels = np.arange(lo, hi + self.noise_step * 0.5, self.noise_step)
        xs, ys, inner = self.grid(tile.size)
        heights = rng.choice(levels, size=inner.shape)
        heights = self.quantize(np.where(inner, heights, 0.0))
        tile.heightfield(heights, self.base_thickness_ratio, _ROUGH_RGBA)
        near = (np.abs(xs - sx / 2)[None, :] <= 0.5) & (np.abs(ys - sy / 2)[:, None] <= 0.5)
        return (sx / 2, sy / 2, float(heights[near].max()))


@attrs.frozen(kw_only=True)
class WaveTerrain(HeightfieldTerrain):
    """`0.5 * A * (cos(k y) + sin(k x))` on the inner square, A (metres) from
    `amplitude_range` by difficulty, k = 2 pi `num_waves` / inner length. Spawn: tile centre
    on the surface."""

    amplitude_range: tuple[float, float] = attrs.field(default=(0.0, 0.2), validator=ordered_pair)
    num_waves: int = attrs.field(default=4, validator=v.ge(1))
    base_thickness_ratio: float = attrs.field(default=0.25, validator=v.ge(0.0))

    def build(self, tile: Tile, rng: np.random.Generator) -> tuple[float, float, float]:
        del rng
        sy = tile.size[1]
        amplitude = lerp(self.amplitude_range, tile.difficulty)
        xs, ys, inner = self.grid(tile.size)
        k = 2 * np.pi * self.num_waves / (sy - 2 * self.border_width)
        xi, yi = xs - self.border_width, ys - self.border_width
        heights = 0.5 * amplitude * (np.cos(k * yi)[:, None] + np.sin(k * xi)[None, :])
        heights = self.quantize(np.where(inner, heights, 0.0))
        tile.heightfield(heights, self.base_thickness_ratio, _WAVE_RGBA)
        cy, cx = len(ys) // 2, len(xs) // 2
        return (float(xs[cx]), float(ys[cy]), float(heights[cy, cx]))
