"""Height scans: a grid of downward rays under a body, cast with `mujoco_warp.rays`.

`HeightScan.cast(m, d)` is three warp launches on arrays it allocated once (ray origins and
directions from the body pose, `mujoco_warp.rays`, heights from the distances), with no host
synchronization, so it can sit inside a captured control step.
"""

from __future__ import annotations

from typing import Literal

import attrs
import mujoco_warp as mjw
import numpy as np
import warp as wp
from attrs import validators as v

from unilab_envs.terrain.tiles import positive

_ALIGN = {"world": 0, "yaw": 1, "base": 2}
# mujoco_warp.rays' geom-group mask (-1 = include); its vec6 type is not exported.
_vec6 = wp.types.vector(length=6, dtype=float)


@attrs.frozen(kw_only=True)
class GridPattern:
    """MJLab's `terrain_scan`: a grid of rays `size` (x, y) metres, `resolution` apart,
    centred under the body; defaults are MJLab 1.6.0's velocity task (1.6 x 1.0 m at 0.1 m:
    17 x 11 = 187 rays, yaw-aligned, 5 m).

    alignment: "yaw" turns the grid with the body's heading only (rays stay vertical),
      "world" keeps it fixed, "base" turns grid and rays with the full body orientation.
    max_distance: hits farther than this count as misses (metres).
    """

    size: tuple[float, float] = (1.6, 1.0)
    resolution: float = attrs.field(default=0.1, validator=positive)
    alignment: Literal["world", "yaw", "base"] = attrs.field(
        default="yaw", validator=v.in_(tuple(_ALIGN))
    )
    max_distance: float = attrs.field(default=5.0, validator=positive)

    def offsets(self) -> np.ndarray:
        """float32 [nray, 3] ray origins in the body's (aligned) frame, z = 0; x varies
        fastest: ray i is (x[i % nx], y[i // nx]) with x, y from -size/2 to size/2."""
        r = self.resolution
        x = np.arange(-self.size[0] / 2, self.size[0] / 2 + r * 0.5, r)
        y = np.arange(-self.size[1] / 2, self.size[1] / 2 + r * 0.5, r)
        gx, gy = np.meshgrid(x, y, indexing="xy")
        return np.stack([gx.ravel(), gy.ravel(), np.zeros(gx.size)], axis=1).astype(np.float32)


@wp.kernel
def _ray_origins(
    xpos: wp.array2d(dtype=wp.vec3),
    xmat: wp.array2d(dtype=wp.mat33),
    body: int,
    alignment: int,
    offsets: wp.array(dtype=wp.vec3),
    pnt: wp.array2d(dtype=wp.vec3),
    vec: wp.array2d(dtype=wp.vec3),
):
    w, i = wp.tid()
    r = xmat[w, body]
    rot = wp.identity(n=3, dtype=float)
    if alignment == 1:
        c = r[0, 0]
        s = r[1, 0]
        n = wp.sqrt(c * c + s * s)
        if n < 1.0e-6:  # body x axis vertical: take the heading from its y axis
            c = r[1, 1]
            s = -r[0, 1]
            n = wp.sqrt(c * c + s * s)
        c = c / n
        s = s / n
        rot = wp.mat33(c, -s, 0.0, s, c, 0.0, 0.0, 0.0, 1.0)
    elif alignment == 2:
        rot = r
    pnt[w, i] = xpos[w, body] + rot * offsets[i]
    vec[w, i] = rot * wp.vec3(0.0, 0.0, -1.0)


@wp.kernel
def _ray_heights(
    xpos: wp.array2d(dtype=wp.vec3),
    body: int,
    max_distance: float,
    pnt: wp.array2d(dtype=wp.vec3),
    vec: wp.array2d(dtype=wp.vec3),
    dist: wp.array2d(dtype=float),
    heights: wp.array2d(dtype=float),
    hit_z: wp.array2d(dtype=float),
):
    w, i = wp.tid()
    frame_z = xpos[w, body][2]
    dd = dist[w, i]
    if dd < 0.0 or dd > max_distance:
        heights[w, i] = max_distance
        hit_z[w, i] = frame_z - max_distance
    else:
        z = pnt[w, i][2] + vec[w, i][2] * dd
        heights[w, i] = frame_z - z
        hit_z[w, i] = z


class HeightScan:
    """A `GridPattern` of rays under body `body` (id) in each of `nworld` worlds.

    Outputs (warp arrays on the model's device, float32 [nworld, nray], rewritten by every
    `cast`): `heights` = body z - hit z (MJLab's `height_scan` observation before its
    scale; a miss gives `max_distance`), `hit_z` = the world z of the hit (body z -
    max_distance on a miss), `dist` = MJWarp's distance along the ray (-1 = no hit; `max_distance` is
    not applied to it). Rays see only geoms in `geom_groups` (the
    terrain's group, so robots in other groups are invisible) and, with `exclude_body`,
    never the body itself.
    """

    def __init__(
        self,
        nworld: int,
        body: int,
        pattern: GridPattern | None = None,
        *,
        geom_groups: tuple[int, ...] = (0,),
        exclude_body: bool = True,
        device: wp.context.Devicelike = None,
    ) -> None:
        self.pattern = pattern or GridPattern()
        self.body = int(body)
        offsets = self.pattern.offsets()
        self.num_rays = nray = len(offsets)
        groups = [0] * 6
        for g in geom_groups:
            if not 0 <= g < 6:
                raise ValueError(f"geom groups must be in [0, 6), got {g}")
            groups[g] = -1
        self.geomgroup = _vec6(*groups)
        shape = (nworld, nray)
        self.offsets = wp.array(offsets, dtype=wp.vec3, device=device)
        self.bodyexclude = wp.full(
            nray, self.body if exclude_body else -1, dtype=int, device=device
        )
        self.pnt = wp.zeros(shape, dtype=wp.vec3, device=device)
        self.vec = wp.zeros(shape, dtype=wp.vec3, device=device)
        self.dist = wp.zeros(shape, dtype=float, device=device)
        self.geomid = wp.zeros(shape, dtype=int, device=device)
        self.normal = wp.zeros(shape, dtype=wp.vec3, device=device)
        self.heights = wp.zeros(shape, dtype=float, device=device)
        self.hit_z = wp.zeros(shape, dtype=float, device=device)

    def cast(self, m: mjw.Model, d: mjw.Data) -> wp.array:
        """Cast from the body pose in `d.xpos`/`d.xmat` (as last computed: after
        `mujoco_warp.step` that is the start of its last substep) against the geom poses in
        `d.geom_xpos`; returns `heights`. Warp launches only."""
        shape = self.pnt.shape
        wp.launch(
            _ray_origins,
            dim=shape,
            inputs=[d.xpos, d.xmat, self.body, _ALIGN[self.pattern.alignment], self.offsets],
            outputs=[self.pnt, self.vec],
        )
        mjw.rays(
            m,
            d,
            self.pnt,
            self.vec,
            self.geomgroup,
            True,
            self.bodyexclude,
            self.dist,
            self.geomid,
            self.normal,
        )
        wp.launch(
            _ray_heights,
            dim=shape,
            inputs=[d.xpos, self.body, self.pattern.max_distance, self.pnt, self.vec, self.dist],
            outputs=[self.heights, self.hit_z],
        )
        return self.heights
