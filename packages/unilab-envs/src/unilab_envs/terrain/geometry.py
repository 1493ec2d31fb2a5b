"""A terrain given as MuJoCo geometry (boxes, planes, heightfields) instead of generated.

`TerrainGeometry` holds the compiled geoms of a terrain body and its heightfields, with the
grid layout the curriculum spawns on. A task built with `terrain=TerrainGeometry(...)` adds
exactly these geoms (the same MuJoCo model fields after compiling) where it would otherwise
generate its grid: terrain that was made elsewhere (an MJCF of your own, another
simulator's generator) is simulated, scanned and bounded like the generated one.

    model = mujoco.MjModel.from_xml_path("my_terrain.xml")   # geoms on a body "terrain"
    layout = TerrainLayout(                                   # one 20 x 20 m tile
        origins=np.zeros((1, 1, 3)), tile_types=np.zeros((1, 1), int),
        difficulty=np.zeros((1, 1)), type_names=("mine",), spawn_weights=np.ones(1),
        extent=(10.0, 10.0),
    )
    terrain = TerrainGeometry.from_model(model, layout, border_width=0.0)
    env = unilab_envs.make("go1-velocity-rough", terrain=terrain)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs
import mujoco
import numpy as np

from unilab_envs.terrain.generator import TerrainLayout

# MjModel geom fields (without "geom_") a TerrainGeometry carries; those not given keep
# MuJoCo's defaults. "dataid" is the heightfield index of an hfield geom (-1 otherwise).
GEOM_FIELDS = (
    "type", "pos", "quat", "size", "dataid", "contype", "conaffinity", "condim", "priority",
    "solmix", "solref", "solimp", "margin", "gap", "friction", "rgba",
)  # fmt: skip
_REQUIRED = ("type", "pos", "quat", "size")
_HFIELD_FIELDS = ("size", "nrow", "ncol", "data")
_SUPPORTED = {
    int(t)
    for t in (
        mujoco.mjtGeom.mjGEOM_PLANE,
        mujoco.mjtGeom.mjGEOM_HFIELD,
        mujoco.mjtGeom.mjGEOM_SPHERE,
        mujoco.mjtGeom.mjGEOM_CAPSULE,
        mujoco.mjtGeom.mjGEOM_ELLIPSOID,
        mujoco.mjtGeom.mjGEOM_CYLINDER,
        mujoco.mjtGeom.mjGEOM_BOX,
    )
}


def _check(geoms: dict[str, np.ndarray], hfields: dict[str, np.ndarray]) -> None:
    missing = [k for k in _REQUIRED if k not in geoms]
    unknown = sorted(set(geoms) - set(GEOM_FIELDS))
    if missing or unknown:
        raise ValueError(
            f"terrain geoms: missing {missing}, unknown {unknown}; fields are {GEOM_FIELDS}"
        )
    n = len(geoms["type"])
    for k, v in geoms.items():
        if len(v) != n:
            raise ValueError(f"terrain geoms: {k!r} has {len(v)} rows, 'type' {n}")
    bad = sorted({int(t) for t in geoms["type"]} - _SUPPORTED)
    if bad:
        names = [mujoco.mjtGeom(t).name for t in bad]
        raise ValueError(
            f"terrain geom types {names} are not supported (planes, heightfields and "
            "primitives are); convert meshes to a heightfield or boxes"
        )
    is_hf = geoms["type"] == int(mujoco.mjtGeom.mjGEOM_HFIELD)
    nh = len(hfields.get("size", ()))
    if is_hf.any():
        if "dataid" not in geoms or sorted(hfields) != sorted(_HFIELD_FIELDS):
            raise ValueError(f"heightfield geoms need geoms['dataid'] and hfields {_HFIELD_FIELDS}")
        ids = geoms["dataid"][is_hf]
        if ids.min() < 0 or ids.max() >= nh:
            raise ValueError(f"heightfield geoms index hfields {sorted(set(ids))}, have {nh}")
        cells = int((hfields["nrow"] * hfields["ncol"]).sum())
        if cells != len(hfields["data"]):
            raise ValueError(f"hfields: data has {len(hfields['data'])} values, nrow*ncol {cells}")


@attrs.frozen(kw_only=True, eq=False)
class TerrainGeometry:
    """A terrain as geometry: the geoms of one static body and the heightfields they use.

    geoms: MjModel geom fields by name without "geom_" (`GEOM_FIELDS`), one row per geom,
      in the body's (world-aligned, at the origin) frame: "type" (mjtGeom: plane,
      heightfield or a primitive), "pos" [G, 3], "quat" [G, 4] (w, x, y, z), "size" [G, 3]
      (ignored for heightfields: MuJoCo sizes them from the field) required; "dataid"
      (heightfield index, -1 else) required with heightfields; the contact fields
      ("friction" [G, 3], "condim", "solref", "solimp", "solmix", "priority", "margin", "gap",
      "contype", "conaffinity") and "rgba" default to MuJoCo's.
    hfields: MjModel heightfield fields without "hfield_": "size" [H, 4] (x, y half sizes,
      top, base depth, metres), "nrow" [H], "ncol" [H], "data" float32 [sum nrow*ncol]
      (elevations in [0, 1], row-major per field, fields one after another).
    layout: the tiles the curriculum spawns on (`TerrainLayout`: origins per (level, type),
      spawn weights, `extent` of the tiled area). border_width: metres of ground around
      `extent` still in bounds (out_of_terrain_bounds' limit is extent + border - margin).
    geom_group: MuJoCo geom group of every terrain geom (what height scans see). seed:
      the terrain levels' initial draws (as `TerrainConfig.seed`).
    """

    geoms: Mapping[str, np.ndarray] = attrs.field(
        converter=lambda d: {k: np.asarray(v) for k, v in d.items()}
    )
    hfields: Mapping[str, np.ndarray] = attrs.field(
        factory=dict, converter=lambda d: {k: np.asarray(v) for k, v in d.items()}
    )
    layout: TerrainLayout
    border_width: float = attrs.field(default=0.0, validator=attrs.validators.ge(0.0))
    geom_group: int = attrs.field(
        default=0, validator=[attrs.validators.ge(0), attrs.validators.lt(6)]
    )
    seed: int = 0

    def __attrs_post_init__(self) -> None:
        _check(self.geoms, self.hfields)

    @property
    def num_geoms(self) -> int:
        return len(self.geoms["type"])

    @classmethod
    def from_model(
        cls,
        model: mujoco.MjModel,
        layout: TerrainLayout,
        *,
        body: str = "terrain",
        border_width: float = 0.0,
        seed: int = 0,
    ) -> TerrainGeometry:
        """The geoms of `body` in a compiled `model` (the body at the world origin, not
        rotated) and the heightfields they use, re-indexed. Their geom group must be one."""
        bid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body)
        if bid < 0:
            raise ValueError(f"the model has no body {body!r} (name the terrain body: body=)")
        if np.any(model.body_pos[bid] != 0) or np.any(model.body_quat[bid] != [1, 0, 0, 0]):
            raise ValueError(f"body {body!r} must sit at the world origin, unrotated")
        ids = np.flatnonzero(model.geom_bodyid == bid)
        if len(ids) == 0:
            raise ValueError(f"body {body!r} has no geoms")
        geoms = {k: np.array(getattr(model, "geom_" + k)[ids]) for k in GEOM_FIELDS}
        groups = np.unique(model.geom_group[ids])
        if len(groups) != 1:
            raise ValueError(f"terrain geoms span geom groups {groups.tolist()}; use one")
        is_hf = geoms["type"] == int(mujoco.mjtGeom.mjGEOM_HFIELD)
        used = sorted(set(geoms["dataid"][is_hf].tolist()))
        geoms["dataid"] = np.where(is_hf, np.searchsorted(used, geoms["dataid"]), -1)
        adr = model.hfield_adr
        cells = model.hfield_nrow * model.hfield_ncol
        hfields = {
            "size": model.hfield_size[used],
            "nrow": model.hfield_nrow[used],
            "ncol": model.hfield_ncol[used],
            "data": np.concatenate(
                [model.hfield_data[adr[h] : adr[h] + cells[h]] for h in used]
                or [np.zeros(0, np.float32)]
            ),
        }
        return cls(
            geoms=geoms,
            hfields=hfields,
            layout=layout,
            border_width=border_width,
            geom_group=int(groups[0]),
            seed=seed,
        )

    def add_to(self, spec: mujoco.MjSpec, name: str = "terrain") -> TerrainLayout:
        """Add the geoms as a static body `name` (zero mass, named `<name>_<i>`) and the
        heightfields as `<name>_hf<h>` to `spec`; returns `layout`."""
        body = spec.worldbody.add_body(name=name)
        hf = self.hfields
        starts = np.concatenate([[0], np.cumsum(hf["nrow"] * hf["ncol"])]) if hf else []
        for h in range(len(hf.get("size", ()))):
            spec.add_hfield(
                name=f"{name}_hf{h}",
                size=hf["size"][h].tolist(),
                nrow=int(hf["nrow"][h]),
                ncol=int(hf["ncol"][h]),
                userdata=hf["data"][starts[h] : starts[h + 1]].astype(np.float32).tolist(),
            )
        g = self.geoms
        for i in range(self.num_geoms):
            kind = int(g["type"][i])
            geom = body.add_geom(
                name=f"{name}_{i}",
                type=mujoco.mjtGeom(kind),
                pos=g["pos"][i].tolist(),
                quat=g["quat"][i].tolist(),
                group=self.geom_group,
                mass=0.0,
            )
            if kind == int(mujoco.mjtGeom.mjGEOM_HFIELD):
                geom.hfieldname = f"{name}_hf{int(g['dataid'][i])}"
            else:
                geom.size = g["size"][i].tolist()
            for k in ("friction", "solref", "solimp", "rgba"):
                if k in g:
                    setattr(geom, k, g[k][i].tolist())
            for k in ("condim", "priority", "contype", "conaffinity"):
                if k in g:
                    setattr(geom, k, int(g[k][i]))
            for k in ("solmix", "margin", "gap"):
                if k in g:
                    setattr(geom, k, float(g[k][i]))
        return self.layout

    def save(self, path: str | Path) -> None:
        """Write `<path>` (.npz) that `load` reads back."""
        lay = self.layout
        np.savez_compressed(
            path,
            **{f"geom_{k}": v for k, v in self.geoms.items()},
            **{f"hfield_{k}": v for k, v in self.hfields.items()},
            origins=lay.origins,
            tile_types=lay.tile_types,
            difficulty=lay.difficulty,
            type_names=np.asarray(lay.type_names),
            spawn_weights=lay.spawn_weights,
            extent=np.asarray(lay.extent),
            border_width=self.border_width,
            geom_group=self.geom_group,
            seed=self.seed,
        )

    @classmethod
    def load(cls, path: str | Path) -> TerrainGeometry:
        """Read a file `save` wrote."""
        with np.load(path) as f:
            a = {k: f[k] for k in f.files}
        layout = TerrainLayout(
            origins=a["origins"],
            tile_types=a["tile_types"],
            difficulty=a["difficulty"],
            type_names=tuple(str(s) for s in a["type_names"]),
            spawn_weights=a["spawn_weights"],
            extent=tuple(float(x) for x in a["extent"]),
        )
        return cls(
            geoms={k[5:]: v for k, v in a.items() if k.startswith("geom_") and k != "geom_group"},
            hfields={k[7:]: v for k, v in a.items() if k.startswith("hfield_")},
            layout=layout,
            border_width=float(a["border_width"]),
            geom_group=int(a["geom_group"]),
            seed=int(a["seed"]),
        )
