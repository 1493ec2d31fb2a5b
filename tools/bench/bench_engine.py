"""Raw MuJoCo Warp physics of MJLab's velocity-task scenes, on whichever MuJoCo Warp is installed.

How much of a "UniLab x MJLab" ratio is the engine version? MJLab 1.6.0 pins mujoco and
mujoco-warp 3.11 while UniLab runs 4.0. This benchmark steps the same model with each version:

  export  (where MJLab 1.6.0 imports, i.e. with mujoco / mujoco-warp 3.11): writes each task's
          scene as MJLab builds it (`mjlab.scene.Scene`: robot, terrain, contact sensors), with
          the task's MuJoCo options (`cfg.sim.mujoco`) written into the spec, to
          `DIR/<task>/scene.xml` + `assets/` (MJLab's own `Scene.write`), and the task's
          MuJoCo Warp sizes and settings to `DIR/<task>/sim.json`.
  run     (any environment with mujoco, mujoco-warp and warp): loads `DIR/<task>/scene.xml`,
          puts `--nworld` worlds at the scene's `init_state` keyframe with every position
          actuator holding that pose (a standing robot), with the task's nconmax / njmax /
          contact_sensor_maxmatch / broadphase, and times CUDA-graph launches of `--steps` env
          steps (`--steps` x decimation `mujoco_warp.step` calls) continuing one trajectory:
          one launch to warm up, then the median of `--reps` launches.

    python3 tools/bench/bench_engine.py export --dir /tmp/engine \
        --tasks Mjlab-Velocity-Flat-Unitree-Go1,Mjlab-Velocity-Flat-Unitree-G1
    python3 tools/bench/bench_engine.py run --dir /tmp/engine --nworld 4096 --label mjwarp-4.0.0

`run` prints one row per task (env-steps/s = worlds x env steps / s, and physics steps/s) and
writes `$OUT/engine_<label>.json` with the versions of mujoco, mujoco-warp and warp. Run it once
per engine version against one export; the ratio of the two rows is the engine's share.
`--quick` runs 16 worlds for 2 steps (on CPU a check of the script, not a measurement).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

DEFAULT_TASKS = (
    "Mjlab-Velocity-Flat-Unitree-Go1,Mjlab-Velocity-Flat-Unitree-G1,"
    "Mjlab-Velocity-Rough-Unitree-Go1,Mjlab-Velocity-Rough-Unitree-G1"
)

# MJLab's MujocoCfg field -> (MjSpec option attribute, MuJoCo enum prefix or None)
_OPTION_ENUMS = {
    "integrator": "mjtIntegrator.mjINT_",
    "cone": "mjtCone.mjCONE_",
    "jacobian": "mjtJacobian.mjJAC_",
    "solver": "mjtSolver.mjSOL_",
}
_OPTION_SCALARS = (
    "timestep",
    "impratio",
    "iterations",
    "tolerance",
    "ls_iterations",
    "ls_tolerance",
    "ccd_iterations",
)


def _enum(mujoco, path: str, name: str):
    kind, prefix = path.split(".")
    return getattr(getattr(mujoco, kind), prefix + name.upper())


def export(out_dir: Path, tasks: list[str]) -> None:
    """Write each MJLab task's scene and simulation settings (needs MJLab 1.6.0)."""
    import mujoco
    from mjlab.scene import Scene
    from mjlab.tasks.registry import load_env_cfg

    for task in tasks:
        cfg = load_env_cfg(task)
        cfg.scene.num_envs = 1
        scene = Scene(cfg.scene, device="cpu")
        spec = scene.spec
        opt = cfg.sim.mujoco
        for field, path in _OPTION_ENUMS.items():
            setattr(spec.option, field, _enum(mujoco, path, getattr(opt, field)))
        for field in _OPTION_SCALARS:
            setattr(spec.option, field, getattr(opt, field))
        spec.option.gravity = list(opt.gravity)
        if opt.disableflags or opt.enableflags:
            raise SystemExit(
                f"{task}: option flags {opt.disableflags, opt.enableflags} unsupported"
            )
        task_dir = out_dir / task
        scene.write(task_dir)
        _copy_mesh_files(task_dir, task)
        sim = {
            "task": task,
            "nconmax": cfg.sim.nconmax,
            "njmax": cfg.sim.njmax,
            "contact_sensor_maxmatch": cfg.sim.contact_sensor_maxmatch,
            "broadphase": cfg.sim.broadphase,
            "decimation": cfg.decimation,
            "exported_with": _versions(),
        }
        (task_dir / "sim.json").write_text(json.dumps(sim, indent=1))
        model = mujoco.MjModel.from_xml_path(str(task_dir / "scene.xml"))
        print(
            f"{task}: nbody {model.nbody} ngeom {model.ngeom} nhfield {model.nhfield} "
            f"nsensor {model.nsensor} -> {task_dir}",
            flush=True,
        )


def _copy_mesh_files(task_dir: Path, task: str) -> None:
    """Copy the robot's mesh files that `Scene.write` leaves out (meshes MJLab loads from its
    asset folder by path rather than from the spec's in-memory assets)."""
    import shutil
    import xml.etree.ElementTree as ET

    import mjlab

    robot = task.rsplit("-", 1)[1].lower()  # Mjlab-Velocity-Flat-Unitree-Go1 -> go1
    source = Path(mjlab.__file__).parent / "asset_zoo" / "robots" / f"unitree_{robot}"
    root = ET.parse(task_dir / "scene.xml").getroot()
    for elem in root.iter():
        name = elem.get("file")
        if not name or (task_dir / "assets" / name).is_file():
            continue
        found = sorted(source.rglob(Path(name).name))
        if not found:
            raise SystemExit(f"{task}: mesh file {name!r} not found under {source}")
        dst = task_dir / "assets" / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(found[0], dst)


def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for dist in ("mujoco", "mujoco-warp", "warp-lang"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            import importlib

            mod = importlib.import_module(dist.replace("-lang", "").replace("-", "_"))
            out[dist] = getattr(mod, "__version__", "unknown")
    return out


def _standing_ctrl(mujoco, model, qpos):
    """ctrl that makes every joint position actuator hold `qpos` (0 for other actuators)."""
    import numpy as np

    ctrl = np.zeros(model.nu)
    for a in range(model.nu):
        if model.actuator_trntype[a] != mujoco.mjtTrn.mjTRN_JOINT:
            continue
        joint = model.actuator_trnid[a, 0]
        # a position servo: bias = -kp * qpos (biasprm[1] == -gainprm[0])
        if model.actuator_biasprm[a, 1] != 0.0:
            ctrl[a] = qpos[model.jnt_qposadr[joint]]
    return ctrl


def _broadphase(mjw, name: str | None):
    if name is None:
        return None
    return {
        "nxn": mjw.BroadphaseType.NXN,
        "sap_tile": mjw.BroadphaseType.SAP_TILE,
        "sap_segmented": mjw.BroadphaseType.SAP_SEGMENTED,
    }[name]


def run_task(task_dir: Path, nworld: int, steps: int, reps: int) -> dict:
    """Env-steps/s of raw `mujoco_warp.step` on one exported scene; see the module docstring."""
    import mujoco
    import mujoco_warp as mjw
    import warp as wp

    sim = json.loads((task_dir / "sim.json").read_text())
    model = mujoco.MjModel.from_xml_path(str(task_dir / "scene.xml"))
    data = mujoco.MjData(model)
    key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "init_state")
    if key >= 0:
        mujoco.mj_resetDataKeyframe(model, data, key)
    data.ctrl[:] = _standing_ctrl(mujoco, model, data.qpos)
    mujoco.mj_forward(model, data)
    wp_model = mjw.put_model(model)
    wp_model.opt.contact_sensor_maxmatch = sim["contact_sensor_maxmatch"]
    bp = _broadphase(mjw, sim["broadphase"])
    if bp is not None:
        wp_model.opt.broadphase = bp
    wp_data = mjw.put_data(model, data, nworld=nworld, nconmax=sim["nconmax"], njmax=sim["njmax"])
    physics_steps = steps * sim["decimation"]
    device = wp.get_device()

    def loop() -> None:
        for _ in range(physics_steps):
            mjw.step(wp_model, wp_data)

    graph = None
    if device.is_cuda:
        loop()  # compile every kernel before capture
        with wp.ScopedCapture() as capture:
            loop()
        graph = capture.graph

    def once() -> float:
        wp.synchronize_device(device)
        t0 = time.perf_counter()
        if graph is not None:
            wp.capture_launch(graph)
        else:
            loop()
        wp.synchronize_device(device)
        return time.perf_counter() - t0

    once()  # warm-up launch
    times = [once() for _ in range(reps)]
    t = statistics.median(times)
    nacon = int(wp_data.nacon.numpy()[0]) if hasattr(wp_data, "nacon") else None
    return {
        "task": sim["task"],
        "nworld": nworld,
        "env_steps": steps,
        "decimation": sim["decimation"],
        "nconmax": sim["nconmax"],
        "njmax": sim["njmax"],
        "env_steps_per_s": nworld * steps / t,
        "physics_steps_per_s": nworld * physics_steps / t,
        "seconds_per_launch": times,
        "contacts_last_step": nacon,
        "device": str(device),
        "cuda_graph": graph is not None,
    }


def run(args) -> None:
    import warp as wp

    wp.config.quiet = True
    root = Path(args.dir)
    tasks = (
        args.tasks.split(",")
        if args.tasks
        else sorted(p.name for p in root.iterdir() if (p / "sim.json").is_file())
    )
    nworld, steps, reps = (16, 2, 2) if args.quick else (args.nworld, args.steps, args.reps)
    rows = []
    for task in tasks:
        print(f"{task}: {nworld} worlds, {steps} env steps x {reps} launches ...", flush=True)
        rows.append(run_task(root / task, nworld, steps, reps))
    versions = _versions()
    result = {"label": args.label, "versions": versions, "rows": rows}
    out = os.environ.get("OUT")
    if out:
        path = Path(out) / f"engine_{args.label}.json"
        path.write_text(json.dumps(result, indent=1))
        print(f"wrote {path}")
    print(f"\nraw MuJoCo Warp physics, {versions}")
    print(f"{'task':<34} {'worlds':>7} {'env steps/s':>12} {'physics/s':>12} {'contacts':>9}")
    for r in rows:
        print(
            f"{r['task']:<34} {r['nworld']:>7} {r['env_steps_per_s']:>12.0f} "
            f"{r['physics_steps_per_s']:>12.0f} {r['contacts_last_step']!s:>9}"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("export", help="write MJLab's task scenes (needs MJLab 1.6.0)")
    p.add_argument("--dir", required=True)
    p.add_argument("--tasks", default=DEFAULT_TASKS)
    p = sub.add_parser("run", help="time raw physics on the exported scenes")
    p.add_argument("--dir", required=True)
    p.add_argument("--tasks", default=None, help="comma-separated; default: every exported task")
    p.add_argument("--nworld", type=int, default=4096)
    p.add_argument("--steps", type=int, default=50, help="env steps per timed launch")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--label", default="engine")
    p.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "export":
        export(Path(args.dir), args.tasks.split(","))
    else:
        run(args)


if __name__ == "__main__":
    sys.exit(main())
