"""The terrain generator (plain `mujoco`, no warp): layout, defaults, determinism, origins."""

from __future__ import annotations

import attrs
import mujoco
import numpy as np
import pytest

from unilab_envs.terrain import (
    FlatTerrain,
    PyramidSlopeTerrain,
    PyramidStairsTerrain,
    SteppingStonesTerrain,
    TerrainConfig,
    add_terrain,
)


def _build(config: TerrainConfig):
    spec = mujoco.MjSpec()
    layout = add_terrain(spec, config)
    return spec.compile(), layout


def test_defaults_are_mjlab_rough():
    c = TerrainConfig()
    assert (c.num_rows, c.tile_size, c.border_width, c.border_height) == (10, (8.0, 8.0), 20.0, 1.0)
    names = [s.name for s in c.sub_terrains]
    assert names == [
        "flat",
        "pyramid_stairs",
        "pyramid_stairs_inv",
        "hf_pyramid_slope",
        "hf_pyramid_slope_inv",
        "random_rough",
        "wave_terrain",
    ]
    assert [s.proportion for s in c.sub_terrains] == [0.2, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1]
    stairs = c.sub_terrains[1]
    assert (stairs.step_height_range, stairs.step_width, stairs.platform_width) == (
        (0.0, 0.1),
        0.3,
        3.0,
    )
    assert c.sub_terrains[3].slope_range == (0.0, 1.0)
    assert c.sub_terrains[5].noise_range == (0.02, 0.10)


def test_default_grid_counts_and_origins():
    m, lay = _build(TerrainConfig())
    assert lay.origins.shape == (10, 7, 3)
    assert lay.tile_types.tolist() == [list(range(7))] * 10
    np.testing.assert_allclose(lay.difficulty[:, 0], np.linspace(0, 1, 10))
    np.testing.assert_allclose(lay.spawn_weights, [0.2, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1])
    # 20 stair tiles x (4 * 5 rings + 1 platform + 4 frame), 10 flat slabs, 40 heightfields,
    # 4 outer border boxes.
    assert m.ngeom == 20 * 25 + 10 + 40 + 4
    assert m.nhfield == 40 and m.nhfielddata == 40 * 81 * 81
    # Tile centres: rows along x, columns along y, grid centred at 0.
    np.testing.assert_allclose(lay.origins[0, 0, :2], [-36.0, -24.0])
    np.testing.assert_allclose(lay.origins[9, 6, :2], [36.0, 24.0])
    assert lay.extent == (40.0, 28.0)
    # Spawn heights: stairs (n + 1) * h with 5 rings, h = 0.1 * difficulty.
    np.testing.assert_allclose(lay.origins[:, 1, 2], 6 * 0.1 * np.linspace(0, 1, 10), atol=1e-9)
    np.testing.assert_allclose(lay.origins[:, 2, 2], -lay.origins[:, 1, 2], atol=1e-9)
    np.testing.assert_allclose(lay.origins[:, 0, 2], 0.0)


def test_same_seed_same_model_other_seed_differs():
    a, la = _build(TerrainConfig(seed=3))
    b, lb = _build(TerrainConfig(seed=3))
    for field in ("geom_pos", "geom_size", "geom_type", "hfield_data", "hfield_size"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert np.array_equal(la.origins, lb.origins)
    c, _ = _build(TerrainConfig(seed=4))
    assert not np.array_equal(a.hfield_data, c.hfield_data)  # random_rough tiles


def test_proportional_layout_columns():
    c = TerrainConfig(
        layout="proportional",
        num_rows=2,
        num_cols=10,
        border_width=0.0,
        sub_terrains=(
            FlatTerrain(name="flat", proportion=0.2),
            PyramidStairsTerrain(name="stairs", proportion=0.5),
            PyramidSlopeTerrain(name="slope", proportion=0.3),
        ),
    )
    _, lay = _build(c)
    assert lay.tile_types[0].tolist() == [0, 0, 1, 1, 1, 1, 1, 2, 2, 2]
    assert np.array_equal(lay.tile_types[0], lay.tile_types[1])


def test_random_layout_follows_proportions():
    c = TerrainConfig(
        layout="random",
        num_rows=20,
        num_cols=20,
        border_width=0.0,
        tile_size=(2.0, 2.0),
        sub_terrains=(
            FlatTerrain(name="a", proportion=0.75),
            FlatTerrain(name="b", proportion=0.25),
        ),
    )
    _, lay = _build(c)
    share = (lay.tile_types == 0).mean()
    assert 0.65 < share < 0.85
    assert lay.difficulty.min() >= 0.0 and lay.difficulty.max() <= 1.0


def test_stepping_stones_gaps_grow_with_difficulty():
    stones = SteppingStonesTerrain(name="stones")
    c = TerrainConfig(sub_terrains=(stones,), num_rows=2, border_width=0.0)
    m, lay = _build(c)
    sizes = {}
    for row in (0, 1):
        ids = [i for i in range(m.ngeom) if m.geom(i).name.startswith(f"terrain_r{row}_c0")]
        # Stones: everything but 4 frame boxes, the pit floor and the platform.
        half = m.geom_size[ids[6:], :2]
        sizes[row] = half.mean()
    assert sizes[0] == pytest.approx(0.4)  # 0.8 m stones at difficulty 0
    assert sizes[1] == pytest.approx(0.2, abs=0.03)  # 0.4 m (+- variation) at difficulty 1
    np.testing.assert_allclose(lay.origins[:, 0, 2], 0.0)


def test_config_validation():
    with pytest.raises(ValueError, match="unique"):
        TerrainConfig(sub_terrains=(FlatTerrain(name="a"), FlatTerrain(name="a")))
    with pytest.raises(ValueError):
        attrs.evolve(TerrainConfig(), layout="spiral")
    with pytest.raises(ValueError, match="lo <= hi"):
        PyramidStairsTerrain(name="s", step_height_range=(0.2, 0.1))


# ---------------------------------------------------------------- a given terrain (geometry)
_COMPILED = (
    "geom_type", "geom_pos", "geom_quat", "geom_size", "geom_rbound", "geom_aabb",
    "geom_friction", "geom_condim", "geom_solref", "geom_solimp", "geom_group", "geom_dataid",
    "hfield_size", "hfield_nrow", "hfield_ncol", "hfield_adr", "hfield_data",
)  # fmt: skip


def test_geometry_from_a_model_rebuilds_it_bit_for_bit(tmp_path):
    from unilab_envs.terrain import TerrainGeometry

    config = TerrainConfig(num_rows=2, border_width=1.0, geom_group=2)
    model, layout = _build(config)
    geometry = TerrainGeometry.from_model(model, layout, border_width=1.0, seed=3)
    assert geometry.geom_group == 2 and geometry.num_geoms == model.ngeom
    geometry.save(tmp_path / "t.npz")
    for g in (geometry, TerrainGeometry.load(tmp_path / "t.npz")):
        rebuilt, again = _build(g)  # add_terrain adds a given geometry as it is
        assert again is g.layout
        for field in _COMPILED:
            np.testing.assert_array_equal(getattr(rebuilt, field), getattr(model, field), field)
    loaded = TerrainGeometry.load(tmp_path / "t.npz")
    assert (loaded.border_width, loaded.geom_group, loaded.seed) == (1.0, 2, 3)
    assert loaded.layout.type_names == layout.type_names
    np.testing.assert_array_equal(loaded.layout.origins, layout.origins)


def test_geometry_contact_fields_and_rejections():
    from unilab_envs.terrain import TerrainGeometry

    _, layout = _build(TerrainConfig(num_rows=1))
    box = {"type": [6], "pos": [[0, 0, -0.5]], "quat": [[1, 0, 0, 0]], "size": [[5, 5, 0.5]]}
    g = TerrainGeometry(
        geoms={**box, "friction": [[0.7, 0.01, 0.001]], "condim": [4]}, layout=layout
    )
    model, _ = _build(g)
    np.testing.assert_array_equal(model.geom_friction[0], [0.7, 0.01, 0.001])
    assert model.geom_condim[0] == 4 and model.body_mass[1] == 0.0
    with pytest.raises(ValueError, match=r"missing \['size'\]"):
        TerrainGeometry(geoms={k: v for k, v in box.items() if k != "size"}, layout=layout)
    with pytest.raises(ValueError, match=r"MESH.*convert meshes"):
        TerrainGeometry(geoms={**box, "type": [7]}, layout=layout)
    with pytest.raises(ValueError, match="heightfield geoms need"):
        TerrainGeometry(geoms={**box, "type": [1]}, layout=layout)
    with pytest.raises(ValueError, match="'pos' has 2 rows"):
        TerrainGeometry(geoms={**box, "pos": [[0, 0, 0]] * 2}, layout=layout)
    spec = mujoco.MjSpec()
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[1, 1, 1])
    with pytest.raises(ValueError, match="no body 'terrain'"):
        TerrainGeometry.from_model(spec.compile(), layout)
