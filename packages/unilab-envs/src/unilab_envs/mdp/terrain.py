"""Terms of MJLab 1.6.0's rough velocity tasks: height scans, the terrain plane under the
base, ground-touch sensors and the terrain's bounds. The scans' arrays and the touch sensors'
force histories are the task's, passed as `Ref`s."""

from __future__ import annotations

import warp as wp

from unilab_envs.terms.config import term
from unilab_envs.terms.state import EnvState


@wp.struct
class ScanParams:
    """heights: a height scan's per-ray values [N, S] (`Ref`)."""

    heights: wp.array2d(dtype=float)


@term(mirror="scan")
@wp.func
def height_scan(w: int, k: int, s: EnvState, p: ScanParams) -> float:
    """Ray k of a height scan: the scanning body's height above the hit (m; scale it by
    1 / max_distance as MJLab); size: the rays. Mirror: the rays swap with their mirror
    rays (rule "scan", from the scan's pattern)."""
    return p.heights[w, k]


@wp.func
def terrain_normal(
    w: int,
    pnt: wp.array2d(dtype=wp.vec3),
    vec: wp.array2d(dtype=wp.vec3),
    dist: wp.array2d(dtype=float),
    idx: wp.array(dtype=wp.int32),
    max_distance: float,
) -> wp.vec3:
    # MJLab's terrain_normal_from_sensors + fit_terrain_normal: the plane through the hits of
    # the subsampled rays `idx` (the smallest-eigenvalue eigenvector of their covariance, up),
    # or (0, 0, 1) with fewer than 3 hits or a degenerate (line- or point-like) cloud.
    n = int(0)  # noqa: UP018, RUF046 (warp: a mutable variable)
    c = wp.vec3()
    for k in range(idx.shape[0]):
        i = idx[k]
        dd = dist[w, i]
        if dd >= 0.0 and dd <= max_distance:
            c += pnt[w, i] + vec[w, i] * dd
            n += 1
    up = wp.vec3(0.0, 0.0, 1.0)
    if n < 3:
        return up
    c = c / float(n)
    cov = wp.mat33()
    for k in range(idx.shape[0]):
        i = idx[k]
        dd = dist[w, i]
        if dd >= 0.0 and dd <= max_distance:
            e = pnt[w, i] + vec[w, i] * dd - c
            cov += wp.outer(e, e)
    q = wp.mat33()
    ev = wp.vec3()
    wp.eig3(cov, q, ev)
    # sort the eigenvalues: e0 <= e1 <= e2, normal = eigenvector of e0 (a column of q)
    i0 = int(0)  # noqa: UP018, RUF046 (warp: a mutable variable)
    if ev[1] < ev[i0]:
        i0 = 1
    if ev[2] < ev[i0]:
        i0 = 2
    i2 = (i0 + 1) % 3
    j = (i0 + 2) % 3
    if ev[j] > ev[i2]:
        i2 = j
    i1 = 3 - i0 - i2
    e0, e1, e2 = ev[i0], ev[i1], ev[i2]
    nrm = wp.vec3(q[0, i0], q[1, i0], q[2, i0])
    nrm = nrm / wp.max(wp.length(nrm), 1.0e-8)
    if nrm[2] < 0.0:
        nrm = -nrm
    eps = 1.1920929e-07
    plane_like = e0 / wp.max(e1, eps) < 0.1
    spread = e1 > wp.max(e2, eps) * 1.0e-6
    if plane_like and spread and wp.isfinite(nrm[0] + nrm[1] + nrm[2]):
        return nrm
    return up


@wp.struct
class TerrainUprightParams:
    """std, body as `upright`; the terrain scan's ray origins, directions and hit distances
    [N, S] (`Ref`s), the rays fitted (`idx`) and the scan's max_distance (m)."""

    std: float
    body: int
    pnt: wp.array2d(dtype=wp.vec3)
    vec: wp.array2d(dtype=wp.vec3)
    dist: wp.array2d(dtype=float)
    idx: wp.array(dtype=wp.int32)
    max_distance: float


@wp.func
def upright_on_terrain(w: int, s: EnvState, p: TerrainUprightParams) -> float:
    """`upright` against the plane fitted to the terrain scan's hits under the base:
    exp(-t / std^2), t: the xy components of the plane's normal in `body`'s frame squared."""
    nrm = terrain_normal(w, p.pnt, p.vec, p.dist, p.idx, p.max_distance)
    g = wp.transpose(s.xmat[w, p.body]) @ nrm
    return wp.exp(-(g[0] * g[0] + g[1] * g[1]) / (p.std * p.std))


@wp.struct
class TouchParams:
    """touch: ground-touch sensors' |force| histories [N, G, H] (`Ref`); the sensors
    [first, last) that count; force_threshold (N)."""

    touch: wp.array3d(dtype=float)
    first: int
    last: int
    force_threshold: float


@wp.func
def touch_hits(w: int, p: TouchParams) -> float:
    """Substeps of the history in which any counted sensor's force is above the threshold."""
    hits = float(0.0)  # noqa: UP018 (warp: a mutable variable)
    for i in range(p.touch.shape[2]):
        hit = int(0)  # noqa: UP018, RUF046 (warp: a mutable variable)
        for g in range(p.first, p.last):
            if p.touch[w, g, i] > p.force_threshold:
                hit = 1
        hits += float(hit)
    return hits


@wp.func
def ground_contact_cost(w: int, s: EnvState, p: TouchParams) -> float:
    """MJLab's self_collision_cost on ground-touch sensors (shank, trunk/head): substeps with
    a ground contact force above the threshold."""
    return touch_hits(w, p)


@wp.func
def illegal_contact(w: int, s: EnvState, p: TouchParams) -> bool:
    """A counted sensor's force was above the threshold in a substep of the history."""
    return touch_hits(w, p) > 0.0


@wp.struct
class BoundsParams:
    """The largest |x| and |y| (m) of the base on the terrain."""

    limit_x: float
    limit_y: float


@wp.func
def out_of_terrain_bounds(w: int, s: EnvState, p: BoundsParams) -> bool:
    """The base left the terrain's area (give it `time_out=True`)."""
    b = s.xpos[w, s.root_body]
    return wp.abs(b[0]) > p.limit_x or wp.abs(b[1]) > p.limit_y


__all__ = [
    "BoundsParams",
    "ScanParams",
    "TerrainUprightParams",
    "TouchParams",
    "ground_contact_cost",
    "height_scan",
    "illegal_contact",
    "out_of_terrain_bounds",
    "terrain_normal",
    "upright_on_terrain",
]
