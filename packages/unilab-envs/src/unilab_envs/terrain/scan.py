"""Height scans: a grid of downward rays under a body, cast with `mujoco_warp.rays`.

`HeightScan.cast(m, d)` is three warp launches on arrays it allocated once (ray origins and
directions from the body pose, `mujoco_warp.rays`, heights from the distances), with no host
synchronization, so it can sit inside a captured control step.

Without a `RayScene` every ray tests every geom of its groups (the generated rough terrain has
about 550); with one, MuJoCo Warp walks a bounding-volume hierarchy over those geoms (and one
over each heightfield's triangles), so a ray tests only the few geoms whose boxes it crosses.
Both give the same hits (tests/test_envs_terrain_scan.py compares them on the rough terrain).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import attrs
import mujoco
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


@attrs.frozen(kw_only=True)
class RingPattern:
    """MJLab's `RingPatternCfg.single_ring`: a centre ray and `num_samples` rays evenly
    spaced on a circle of `radius` metres (ray i at angle 2 pi (i - 1) / num_samples), for
    per-foot clearance (MJLab's `foot_height_scan`: Go1 0.04 m x 4, G1 0.03 m x 6).
    """

    radius: float = attrs.field(default=0.1, validator=positive)
    num_samples: int = attrs.field(default=8, validator=v.ge(1))
    include_center: bool = True
    alignment: Literal["world", "yaw", "base"] = attrs.field(
        default="yaw", validator=v.in_(tuple(_ALIGN))
    )
    max_distance: float = attrs.field(default=1.0, validator=positive)

    def offsets(self) -> np.ndarray:
        """float32 [nray, 3] ray origins in the frame's (aligned) coordinates, z = 0."""
        angles = 2.0 * np.pi * np.arange(self.num_samples) / self.num_samples
        ring = np.stack(
            [self.radius * np.cos(angles), self.radius * np.sin(angles), 0 * angles], axis=1
        )
        if self.include_center:
            ring = np.concatenate([np.zeros((1, 3)), ring])
        return ring.astype(np.float32)


@wp.kernel
def _ray_origins(
    xpos: wp.array2d(dtype=wp.vec3),
    xmat: wp.array2d(dtype=wp.mat33),
    frames: wp.array(dtype=wp.int32),
    alignment: int,
    offsets: wp.array(dtype=wp.vec3),
    pnt: wp.array2d(dtype=wp.vec3),
    vec: wp.array2d(dtype=wp.vec3),
):
    # Ray i belongs to frame i // len(offsets) (frame-major, as MJLab orders them).
    w, i = wp.tid()
    nper = offsets.shape[0]
    body = frames[i // nper]
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
    pnt[w, i] = xpos[w, body] + rot * offsets[i % nper]
    vec[w, i] = rot * wp.vec3(0.0, 0.0, -1.0)


@wp.kernel
def _ray_heights(
    xpos: wp.array2d(dtype=wp.vec3),
    frames: wp.array(dtype=wp.int32),
    nper: int,
    max_distance: float,
    pnt: wp.array2d(dtype=wp.vec3),
    vec: wp.array2d(dtype=wp.vec3),
    dist: wp.array2d(dtype=float),
    heights: wp.array2d(dtype=float),
    hit_z: wp.array2d(dtype=float),
):
    w, i = wp.tid()
    frame_z = xpos[w, frames[i // nper]][2]
    dd = dist[w, i]
    if dd < 0.0 or dd > max_distance:
        heights[w, i] = max_distance
        hit_z[w, i] = frame_z - max_distance
    else:
        z = pnt[w, i][2] + vec[w, i][2] * dd
        heights[w, i] = frame_z - z
        hit_z[w, i] = z


@wp.kernel
def _clearance(
    xpos: wp.array2d(dtype=wp.vec3),
    frames: wp.array(dtype=wp.int32),
    nper: int,
    max_distance: float,
    pnt: wp.array2d(dtype=wp.vec3),
    vec: wp.array2d(dtype=wp.vec3),
    dist: wp.array2d(dtype=float),
    normal: wp.array2d(dtype=wp.vec3),
    out: wp.array2d(dtype=float),
):
    # MJLab's TerrainHeightSensor, reduction "min": per frame, the smallest of frame z - hit z
    # over its rays; a backface hit (the ray starts inside the terrain) counts 0, a miss (or a
    # hit beyond max_distance) max_distance, and a frame whose rays all miss
    # clamp(frame z, 0, max_distance).
    w, f = wp.tid()
    frame_z = xpos[w, frames[f]][2]
    best = float(1.0e30)  # noqa: UP018 (warp: mutable loop variable)
    hits = int(0)  # noqa: UP018, RUF046 (warp: a mutable variable)
    for k in range(nper):
        i = f * nper + k
        dd = dist[w, i]
        h = max_distance
        if dd >= 0.0 and dd <= max_distance:
            hits += 1
            h = frame_z - (pnt[w, i][2] + vec[w, i][2] * dd)
            if normal[w, i][2] < 0.0:
                h = 0.0
        best = wp.min(best, h)
    if hits == 0:
        best = wp.clamp(frame_z, 0.0, max_distance)
    out[w, f] = best


class RayScene:
    """The geoms of `geom_groups` in each of `nworld` worlds as one bounding-volume hierarchy
    for `HeightScan` (MuJoCo Warp's render context with no camera active).

    The boxes are computed from `mjm`'s compiled pose (a host forward pass) when the scene is
    built. `refit(m, d)` recomputes them from `d.geom_xpos` and rebuilds the tree's bounds:
    needed only when a scene geom moves, so it launches nothing when every scene geom is static
    (welded to the world, as terrain is) and `dynamic` is False. Memory: two vec3 and one int
    per geom per world, plus the trees.

    Hits equal the brute-force ones except for a ray that starts inside a heightfield's solid
    (below its surface): the hierarchy tests the heightfield's triangles only, so such a ray
    misses, where the brute-force cast reports the heightfield's base box. MJLab's ray-cast
    sensors use the same hierarchy.
    """

    def __init__(
        self,
        mjm: mujoco.MjModel,
        nworld: int,
        geom_groups: tuple[int, ...] = (0,),
        *,
        device: wp.context.Devicelike = None,
    ) -> None:
        groups = sorted({int(g) for g in geom_groups})
        if not groups or not all(0 <= g < 6 for g in groups):
            raise ValueError(f"geom groups must be in [0, 6), got {geom_groups}")
        in_scene = np.isin(mjm.geom_group, groups)
        if not in_scene.any():
            raise ValueError(f"the model has no geom in groups {groups} to cast rays against")
        self.geom_groups = tuple(groups)
        self.num_geoms = int(in_scene.sum())
        self.dynamic = bool((mjm.body_weldid[mjm.geom_bodyid[in_scene]] != 0).any())
        with wp.ScopedDevice(device):
            self.context = mjw.create_render_context(
                mjm,
                nworld=nworld,
                render_rgb=False,
                render_depth=False,
                render_seg=False,
                use_textures=False,
                enabled_geom_groups=list(groups),
                cam_active=[False] * mjm.ncam,
            )

    def refit(self, m: mjw.Model, d: mjw.Data) -> None:
        """Bring the boxes to the geoms' current poses (warp launches; none when static)."""
        if self.dynamic:
            mjw.refit_bvh(m, d, self.context)


class HeightScan:
    """A pattern of rays under body `body` (an id, or several: one pattern per frame,
    frame-major) in each of `nworld` worlds; with `frame="site"` the frames are sites and
    `xpos`/`xmat` below mean `site_xpos`/`site_xmat` (`exclude` then names each site's body,
    the one `exclude_body` hides, as MJLab's `exclude_parent_body`).

    Outputs (warp arrays on the model's device, float32 [nworld, nray], rewritten by every
    `cast`): `heights` = body z - hit z (MJLab's `height_scan` observation before its
    scale; a miss gives `max_distance`), `hit_z` = the world z of the hit (body z -
    max_distance on a miss), `dist` = MJWarp's distance along the ray (-1 = no hit; `max_distance` is
    not applied to it). Rays see only geoms in `geom_groups` (the
    terrain's group, so robots in other groups are invisible) and, with `exclude_body`,
    never the body itself. With `scene` the rays walk its hierarchy (its groups must hold
    `geom_groups`; the caller refits it when its geoms move) instead of testing every geom.
    """

    def __init__(
        self,
        nworld: int,
        body: int | Sequence[int],
        pattern: GridPattern | RingPattern | None = None,
        *,
        geom_groups: tuple[int, ...] = (0,),
        exclude_body: bool = True,
        device: wp.context.Devicelike = None,
        frame: Literal["body", "site"] = "body",
        exclude: Sequence[int] | None = None,
        scene: RayScene | None = None,
    ) -> None:
        self.pattern = pattern or GridPattern()
        if scene is not None and not set(geom_groups) <= set(scene.geom_groups):
            raise ValueError(
                f"the scan's geom groups {tuple(geom_groups)} are not all in its RayScene's "
                f"{scene.geom_groups}: build the scene with every group the scan sees"
            )
        self.scene = scene
        frames = [int(body)] if np.ndim(body) == 0 else [int(b) for b in body]
        if frame not in ("body", "site"):
            raise ValueError(f"frame must be 'body' or 'site', got {frame!r}")
        if frame == "site" and exclude_body and exclude is None:
            raise ValueError("site frames need `exclude` (each site's body id) to exclude it")
        parents = frames if exclude is None else [int(b) for b in exclude]
        if len(parents) != len(frames):
            raise ValueError(f"`exclude` needs one body per frame ({len(frames)})")
        self.body = frames[0]
        self.frame = frame
        self.num_frames = len(frames)
        offsets = self.pattern.offsets()
        self.rays_per_frame = len(offsets)
        self.num_rays = nray = len(offsets) * len(frames)
        groups = [0] * 6
        for g in geom_groups:
            if not 0 <= g < 6:
                raise ValueError(f"geom groups must be in [0, 6), got {g}")
            groups[g] = -1
        self.geomgroup = _vec6(*groups)
        shape = (nworld, nray)
        self.offsets = wp.array(offsets, dtype=wp.vec3, device=device)
        self.frames = wp.array(frames, dtype=wp.int32, device=device)
        excluded = np.repeat(parents, len(offsets)) if exclude_body else np.full(nray, -1)
        self.bodyexclude = wp.array(excluded.astype(np.int32), dtype=int, device=device)
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
        xpos, xmat = self._pose(d)
        wp.launch(
            _ray_origins,
            dim=shape,
            inputs=[xpos, xmat, self.frames, _ALIGN[self.pattern.alignment], self.offsets],
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
            rc=None if self.scene is None else self.scene.context,
        )
        wp.launch(
            _ray_heights,
            dim=shape,
            inputs=[
                xpos, self.frames, self.rays_per_frame, self.pattern.max_distance, self.pnt,
                self.vec, self.dist,
            ],
            outputs=[self.heights, self.hit_z],
        )  # fmt: skip
        return self.heights

    def _pose(self, d: mjw.Data) -> tuple[wp.array, wp.array]:
        if self.frame == "site":
            return d.site_xpos, d.site_xmat
        return d.xpos, d.xmat

    def clearance(self, d: mjw.Data, out: wp.array) -> wp.array:
        """Per-frame clearance of the last `cast` into `out` (float32 [nworld, num_frames]):
        MJLab's `TerrainHeightSensor` with reduction "min" (frame z - hit z, the smallest over
        the frame's rays; a backface hit 0, a miss `max_distance`, all rays missing
        clamp(frame z, 0, max_distance)). One warp launch."""
        xpos, _ = self._pose(d)
        wp.launch(
            _clearance,
            dim=(self.pnt.shape[0], self.num_frames),
            inputs=[
                xpos, self.frames, self.rays_per_frame, self.pattern.max_distance, self.pnt,
                self.vec, self.dist, self.normal,
            ],
            outputs=[out],
        )  # fmt: skip
        return out
