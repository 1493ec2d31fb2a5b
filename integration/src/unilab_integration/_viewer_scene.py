"""The viewer's scene: a MuJoCo model's visible geoms as viser scene nodes, posed per world.

Each body that carries a visible geom becomes a viser frame; its geoms are children of that
frame at their fixed local pose (`geom_pos`, `geom_quat`), so a frame of the simulation moves
only the body frames (`xpos`, `xquat` of a host `MjData` after `mj_kinematics`). Geom types
and their viser nodes (sizes are MuJoCo's `geom_size`, in metres):

    box        add_box, dimensions 2 x half-sizes
    sphere     add_icosphere, radius
    ellipsoid  add_icosphere of radius 1 scaled by the three radii
    cylinder   add_cylinder, radius and 2 x half-length (viser's cylinder is along z, as
               MuJoCo's)
    capsule    add_mesh_simple: a cylinder of 2 x half-length with hemispherical caps
    plane      add_mesh_simple (a quad of 2 x half-sizes; an infinite plane, size 0, is drawn
               `ground_half` metres each way) with an add_grid on it (1 m cells)
    mesh       add_mesh_simple of the compiled mesh's vertices and faces (MuJoCo's compiler
               has already moved them into the geom frame)
    hfield     add_mesh_simple of the height grid: `nrow x ncol` samples over [-rx, rx] x
               [-ry, ry], row r at y = -ry + 2 ry r / (nrow - 1), height data * elevation

Geoms of groups 0-2 are drawn (MuJoCo's default visible groups; MJLab robots keep their
collision geoms in group 3) unless their alpha is 0. The color is the material's when the
geom has one (textures are not drawn), else the geom's rgba.
"""

from __future__ import annotations

from typing import Any

import attrs
import mujoco
import numpy as np

__all__ = ["GeomShape", "WorldScene", "geom_shape", "is_terrain", "static_body", "visible_geoms"]

VISIBLE_GROUPS = 3  # geom groups [0, 3) are drawn
_KINDS = {
    int(mujoco.mjtGeom.mjGEOM_PLANE): "plane",
    int(mujoco.mjtGeom.mjGEOM_HFIELD): "hfield",
    int(mujoco.mjtGeom.mjGEOM_SPHERE): "sphere",
    int(mujoco.mjtGeom.mjGEOM_CAPSULE): "capsule",
    int(mujoco.mjtGeom.mjGEOM_ELLIPSOID): "ellipsoid",
    int(mujoco.mjtGeom.mjGEOM_CYLINDER): "cylinder",
    int(mujoco.mjtGeom.mjGEOM_BOX): "box",
    int(mujoco.mjtGeom.mjGEOM_MESH): "mesh",
}
# A world body with more static geoms than this is a terrain (MJLab-style box tiles).
_TERRAIN_GEOMS = 32


@attrs.frozen(kw_only=True, eq=False)
class GeomShape:
    """What one geom looks like in its own frame.

    Attributes:
        kind: "box", "sphere", "ellipsoid", "cylinder", "capsule", "plane", "mesh" or "hfield".
        size: MuJoCo's `geom_size` (3 floats, metres; their meaning depends on `kind`).
        rgba: color, 4 floats in [0, 1].
        vertices: float32 [V, 3] in the geom frame, for the kinds drawn as a triangle mesh
            (capsule, plane, mesh, hfield); None for the others.
        faces: uint32 [F, 3] vertex indices, counter-clockwise seen from outside.
    """

    kind: str
    size: tuple[float, float, float]
    rgba: tuple[float, float, float, float]
    vertices: np.ndarray | None = None
    faces: np.ndarray | None = None


def visible_geoms(mjm: mujoco.MjModel) -> list[int]:
    """Ids of the geoms the viewer draws: groups 0-2, alpha > 0, a known type."""
    out = []
    for g in range(mjm.ngeom):
        if int(mjm.geom_group[g]) >= VISIBLE_GROUPS or int(mjm.geom_type[g]) not in _KINDS:
            continue
        if _rgba(mjm, g)[3] > 0.0:
            out.append(g)
    return out


def static_body(mjm: mujoco.MjModel, b: int) -> bool:
    """Whether body `b` never moves: the world body, or welded to it and not a mocap body."""
    return int(mjm.body_weldid[b]) == 0 and int(mjm.body_mocapid[b]) < 0


def is_terrain(mjm: mujoco.MjModel) -> bool:
    """Whether the static geoms make a terrain (a heightfield, or many of them): then the
    worlds are shown where they are, over one copy of it, instead of side by side."""
    static = [g for g in visible_geoms(mjm) if static_body(mjm, int(mjm.geom_bodyid[g]))]
    kinds = {_KINDS[int(mjm.geom_type[g])] for g in static}
    return "hfield" in kinds or len(static) > _TERRAIN_GEOMS


def _rgba(mjm: mujoco.MjModel, g: int) -> tuple[float, float, float, float]:
    mat = int(mjm.geom_matid[g])
    rgba = mjm.mat_rgba[mat] if mat >= 0 else mjm.geom_rgba[g]
    return tuple(float(x) for x in rgba)


def geom_shape(mjm: mujoco.MjModel, g: int, ground_half: float = 50.0) -> GeomShape:
    """The shape of geom `g` of `mjm` (see the module docstring for each type)."""
    kind = _KINDS.get(int(mjm.geom_type[g]))
    if kind is None:
        raise ValueError(f"geom {g}: type {int(mjm.geom_type[g])} is not drawn by the viewer")
    size = tuple(float(x) for x in mjm.geom_size[g])
    mesh: tuple[np.ndarray, np.ndarray] | None = None
    if kind == "capsule":
        mesh = capsule_mesh(size[0], size[1])
    elif kind == "plane":
        hx, hy = (s if s > 0 else ground_half for s in size[:2])
        mesh = _quad(hx, hy)
    elif kind == "mesh":
        m = int(mjm.geom_dataid[g])
        v0, nv = int(mjm.mesh_vertadr[m]), int(mjm.mesh_vertnum[m])
        f0, nf = int(mjm.mesh_faceadr[m]), int(mjm.mesh_facenum[m])
        mesh = (mjm.mesh_vert[v0 : v0 + nv], mjm.mesh_face[f0 : f0 + nf])
    elif kind == "hfield":
        mesh = hfield_mesh(mjm, int(mjm.geom_dataid[g]))
    vertices = faces = None
    if mesh is not None:
        vertices = np.ascontiguousarray(mesh[0], dtype=np.float32)
        faces = np.ascontiguousarray(mesh[1], dtype=np.uint32)
    return GeomShape(kind=kind, size=size, rgba=_rgba(mjm, g), vertices=vertices, faces=faces)


def capsule_mesh(radius: float, half: float, around: int = 24, cap: int = 6):
    """(vertices [V, 3], faces [F, 3]) of a capsule along z: a cylinder of length 2 `half`
    between two hemispheres of `radius`, centered at the origin."""
    theta = np.concatenate(
        [np.linspace(0.0, np.pi / 2, cap + 1), np.linspace(np.pi / 2, np.pi, cap + 1)]
    )
    z = radius * np.cos(theta) + np.where(np.arange(theta.size) <= cap, half, -half)
    return _lathe(radius * np.sin(theta), z, around)


def _lathe(rho: np.ndarray, z: np.ndarray, around: int):
    """A surface of revolution about z of the profile (rho, z), listed from top to bottom."""
    a = np.linspace(0.0, 2 * np.pi, around, endpoint=False)
    verts = np.stack(
        [rho[:, None] * np.cos(a), rho[:, None] * np.sin(a), np.repeat(z[:, None], around, 1)],
        axis=-1,
    ).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(rho.size - 1), np.arange(around), indexing="ij")
    p00, p10 = i * around + j, (i + 1) * around + j
    p01, p11 = i * around + (j + 1) % around, (i + 1) * around + (j + 1) % around
    faces = np.concatenate(
        [np.stack([p00, p10, p11], -1).reshape(-1, 3), np.stack([p00, p11, p01], -1).reshape(-1, 3)]
    )
    return verts, faces


def _quad(hx: float, hy: float):
    verts = np.array([[-hx, -hy, 0.0], [hx, -hy, 0.0], [hx, hy, 0.0], [-hx, hy, 0.0]])
    return verts, np.array([[0, 1, 2], [0, 2, 3]])


def hfield_mesh(mjm: mujoco.MjModel, h: int):
    """(vertices [nrow * ncol, 3], faces) of heightfield `h`'s top surface in the geom frame."""
    nrow, ncol = int(mjm.hfield_nrow[h]), int(mjm.hfield_ncol[h])
    rx, ry, top, _base = (float(x) for x in mjm.hfield_size[h])
    adr = int(mjm.hfield_adr[h])
    heights = mjm.hfield_data[adr : adr + nrow * ncol].reshape(nrow, ncol) * top
    x = np.linspace(-rx, rx, ncol)
    y = np.linspace(-ry, ry, nrow)
    xx, yy = np.meshgrid(x, y)  # [nrow, ncol]: row r at y[r]
    verts = np.stack([xx, yy, heights], axis=-1).reshape(-1, 3)
    r, c = np.meshgrid(np.arange(nrow - 1), np.arange(ncol - 1), indexing="ij")
    p00, p01 = r * ncol + c, r * ncol + c + 1
    p10, p11 = (r + 1) * ncol + c, (r + 1) * ncol + c + 1
    faces = np.concatenate(
        [np.stack([p00, p01, p11], -1).reshape(-1, 3), np.stack([p00, p11, p10], -1).reshape(-1, 3)]
    )
    return verts, faces


def add_geom(scene: Any, name: str, shape: GeomShape, position, wxyz) -> list[Any]:
    """Add `shape` as viser node(s) `name` (a plane also gets `name`/grid); return the handles."""
    rgb = tuple(round(255 * c) for c in shape.rgba[:3])
    opacity = shape.rgba[3] if shape.rgba[3] < 1.0 else None
    pose = {"position": tuple(position), "wxyz": tuple(wxyz)}
    sx, sy, sz = shape.size
    if shape.kind == "box":
        dims = (2 * sx, 2 * sy, 2 * sz)
        return [scene.add_box(name, color=rgb, dimensions=dims, opacity=opacity, **pose)]
    if shape.kind == "sphere":
        return [scene.add_icosphere(name, radius=sx, color=rgb, opacity=opacity, **pose)]
    if shape.kind == "ellipsoid":
        return [
            scene.add_icosphere(
                name, radius=1.0, color=rgb, scale=(sx, sy, sz), opacity=opacity, **pose
            )
        ]
    if shape.kind == "cylinder":
        return [
            scene.add_cylinder(name, radius=sx, height=2 * sy, color=rgb, opacity=opacity, **pose)
        ]
    # hfields and planes are seen from either side (a terrain's tile from below, a floor
    # through a transparent robot); capsules and meshes are closed and wound outward.
    side = "double" if shape.kind in ("plane", "hfield") else "front"
    handles = [
        scene.add_mesh_simple(
            name,
            vertices=shape.vertices,
            faces=shape.faces,
            color=rgb,
            opacity=opacity,
            side=side,
            flat_shading=shape.kind == "hfield",
            **pose,
        )
    ]
    if shape.kind == "plane":
        extent = shape.vertices.max(axis=0)
        handles.append(
            scene.add_grid(
                f"{name}/grid",
                width=2 * float(extent[0]),
                height=2 * float(extent[1]),
                cell_size=1.0,
                plane="xy",
                position=(0.0, 0.0, 0.002),  # just above the surface: no z-fighting
            )
        )
    return handles


class WorldScene:
    """The visible geoms of one world of `mjm` under the viser node `root` (a frame that the
    viewer places, e.g. side by side with other worlds).

    `static=True` includes the geoms of the static bodies (`static_body`: the floor, a
    terrain), which never move; `update(mjd)` sets every other body's frame from a host
    `MjData` after `mj_kinematics`.
    """

    def __init__(self, scene: Any, mjm: mujoco.MjModel, root: str, *, static: bool) -> None:
        self.root = root
        self.frame = scene.add_frame(root, show_axes=False)
        self.bodies: dict[int, Any] = {}
        self.geoms: dict[int, list[Any]] = {}
        rest = mujoco.MjData(mjm)
        mujoco.mj_kinematics(mjm, rest)  # where the static bodies are, for good
        for g in visible_geoms(mjm):
            b = int(mjm.geom_bodyid[g])
            if static_body(mjm, b) and not static:
                continue
            if b not in self.bodies:
                self.bodies[b] = scene.add_frame(
                    f"{root}/body{b}",
                    show_axes=False,
                    position=rest.xpos[b],
                    wxyz=rest.xquat[b],
                )
            self.geoms[g] = add_geom(
                scene,
                f"{root}/body{b}/geom{g}",
                geom_shape(mjm, g),
                mjm.geom_pos[g],
                mjm.geom_quat[g],
            )
        self.moving = [b for b in self.bodies if not static_body(mjm, b)]

    def update(self, mjd: mujoco.MjData) -> None:
        """Pose every moving body's frame as `mjd` has it (world frame, below `root`)."""
        for b in self.moving:
            handle = self.bodies[b]
            handle.position = mjd.xpos[b]
            handle.wxyz = mjd.xquat[b]

    def set_visible(self, visible: bool) -> None:
        self.frame.visible = visible
