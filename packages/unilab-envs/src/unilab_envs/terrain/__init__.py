"""Procedural rough terrain (a grid of sub-terrains by difficulty and type) and height scans.

import mujoco
from unilab_envs.terrain import TerrainConfig, add_terrain
spec = mujoco.MjSpec()
layout = add_terrain(spec, TerrainConfig(seed=0))   # MJLab 1.6.0's rough grid: 10 x 7 tiles
model = spec.compile()                               # layout.origins: float64 [10, 7, 3]

A terrain made elsewhere enters as `TerrainGeometry` (its compiled geoms and heightfields,
e.g. `TerrainGeometry.from_model(model, layout)`), which `add_terrain` adds instead.
"""

from unilab_envs.terrain.boxes import FlatTerrain as FlatTerrain
from unilab_envs.terrain.boxes import PyramidStairsTerrain as PyramidStairsTerrain
from unilab_envs.terrain.boxes import SteppingStonesTerrain as SteppingStonesTerrain
from unilab_envs.terrain.generator import SubTerrain as SubTerrain
from unilab_envs.terrain.generator import TerrainConfig as TerrainConfig
from unilab_envs.terrain.generator import TerrainLayout as TerrainLayout
from unilab_envs.terrain.generator import add_terrain as add_terrain
from unilab_envs.terrain.generator import rough_sub_terrains as rough_sub_terrains
from unilab_envs.terrain.geometry import TerrainGeometry as TerrainGeometry
from unilab_envs.terrain.heightfield import PyramidSlopeTerrain as PyramidSlopeTerrain
from unilab_envs.terrain.heightfield import RandomUniformTerrain as RandomUniformTerrain
from unilab_envs.terrain.heightfield import WaveTerrain as WaveTerrain
from unilab_envs.terrain.levels import TerrainLevels as TerrainLevels
from unilab_envs.terrain.levels import proportional_counts as proportional_counts
from unilab_envs.terrain.scan import GridPattern as GridPattern
from unilab_envs.terrain.scan import HeightScan as HeightScan
from unilab_envs.terrain.scan import RayScene as RayScene
from unilab_envs.terrain.scan import RingPattern as RingPattern
from unilab_envs.terrain.tiles import Tile as Tile

__all__ = [
    "FlatTerrain",
    "GridPattern",
    "HeightScan",
    "RayScene",
    "PyramidSlopeTerrain",
    "PyramidStairsTerrain",
    "RandomUniformTerrain",
    "RingPattern",
    "SteppingStonesTerrain",
    "SubTerrain",
    "TerrainConfig",
    "TerrainGeometry",
    "TerrainLayout",
    "TerrainLevels",
    "Tile",
    "WaveTerrain",
    "add_terrain",
    "proportional_counts",
    "rough_sub_terrains",
]
