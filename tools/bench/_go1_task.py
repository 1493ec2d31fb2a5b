"""The benchmarks' Go1 task: UniLab's quadruped velocity task on MJLab 1.6.0's Go1 MJCF.

Imported through `runner.imports` (bench_ppo_e2e.py `--robot go1` puts tools/bench on the
workers' PYTHONPATH), it registers `GO1_TASK` with unilab_envs; the benchmark composes its
config as `make_config("quadruped-velocity", ...)` with `env.task` set to it (the quadruped's
task defaults: 4096 envs per rank, PPO 512-256-128 ...). The robot is
`unilab_envs.tasks.robots.go1` (MJLab's actuators, PD gains, default pose, collisions and
solver options) as UniLab's quadruped velocity task drives it: feet are the calf bodies, an
episode also ends on trunk contact or a base below 5 cm. Task keyword arguments (what
`env.kwargs` holds, so JSON values): `mjcf` (the go1.xml; None: `find_go1_xml`'s), `njmax`,
`nconmax`, `mjlab_physics` (False: the MJCF's own collision setup and solver options), and
any `quadruped-velocity` override.
"""

from __future__ import annotations

import os

import attrs

import unilab_envs

GO1_TASK = "bench-go1-velocity"
GO1_XML_IN_WHEEL = "mjlab/asset_zoo/robots/unitree_go1/xmls/"
MJLAB_SITE = "/tmp/site-mjlab"  # bench_mjlab.py's default --site


def go1_robot_config(mjcf: str, *, nconmax: int = 48, njmax: int = 300, mjlab_physics=True):
    """MJLab's Go1 as the quadruped velocity task drives it here (see the module docstring)."""
    from unilab_envs.tasks.robots import go1

    physics = {} if mjlab_physics else {"collisions": (), "physics": None}
    return attrs.evolve(
        go1(mjcf),
        foot_geoms=None,
        termination_bodies=("trunk",),
        min_base_height=0.05,
        nconmax=nconmax,
        njmax=njmax,
        **physics,
    )


def find_go1_xml(site: str = MJLAB_SITE) -> str:
    """go1.xml of the MJLab installed in `site` (bench_mjlab.py's `--site`), else the one
    `unilab_envs.tasks.robots.find_mjcf` finds (an importable mjlab, or Menagerie)."""
    installed = os.path.join(site, GO1_XML_IN_WHEEL, "go1.xml")
    if os.path.isfile(installed):
        return installed
    from unilab_envs.tasks.robots import find_mjcf

    return find_mjcf("go1").path


def make_go1_velocity(
    mjcf: str | None = None,
    njmax: int = 300,
    nconmax: int = 48,
    mjlab_physics: bool = True,
    **overrides,
):
    """The `GO1_TASK` factory (`unilab_envs.register_task`)."""
    from unilab_envs.tasks.velocity import make_quadruped_velocity

    robot = go1_robot_config(mjcf, njmax=njmax, nconmax=nconmax, mjlab_physics=mjlab_physics)
    return make_quadruped_velocity(robot, **overrides)


unilab_envs.register_task(GO1_TASK, make_go1_velocity, overwrite=True)
