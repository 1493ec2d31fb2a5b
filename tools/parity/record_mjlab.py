"""Record MJLab 1.6.0 velocity-task steps as a parity fixture for UniLab.

    PYTHONPATH=tools/parity/stubs MUJOCO_GL=disable \
      /tmp/mjvenv/bin/python tools/parity/record_mjlab.py \
      --task Mjlab-Velocity-Flat-Unitree-Go1 --num-envs 4 --steps 40 --seed 0 --device cpu \
      --out packages/unilab-envs/tests/data/mjlab/go1_flat

Rough tasks: `--terrain small` records on a 3 x 3 tile grid of MJLab's generator and keeps
its compiled geometry in the fixture (`small_terrain`); `--oob-margin`, `--nconmax`: the
README's table says which fixture sets them and why.

Runs MJLab's own `ManagerBasedRlEnv` (the env its training script builds) under a seeded
uniform random policy in [-1, 1] with the actor group's corruption (observation noise) off,
and writes `<out>.npz` (compressed arrays) and `<out>.json` (constants and term settings).
It hooks MJLab's managers to read values at the points MJLab itself computes them: per
step, the state the termination and reward terms see, every term's value, the state and
every term of the observations that step returns. tools/parity/README.md documents each
array and when in the step it is taken. Needs MJLab in its own environment (it pins
mujoco-warp 3.11); nothing in UniLab imports this file.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import inspect
import json
import math
import sys
from pathlib import Path

import numpy as np
import torch

# MJWarp data fields kept at reward time ("mid"): what MJLab's termination and reward terms
# read (entity data derives root and body velocities from xpos, xquat, subtree_com and cvel,
# and foot velocities from site_xpos; sensordata holds the builtin and contact sensors).
# These derived fields are one physics substep stale there (README), so they are kept as
# MJLab saw them rather than left to a forward pass.
DATA_FIELDS = (
    "time",
    "qpos",
    "qvel",
    "act",
    "ctrl",
    "actuator_force",
    "xpos",
    "xquat",
    "cvel",
    "subtree_com",
    "site_xpos",
    "sensordata",
)
# At observation time ("post", after the step's single forward pass): the full integration
# state the next step starts from (MuJoCo's mjSTATE_INTEGRATION set) and what the
# observation terms read. The other derived fields equal mj_forward of this state.
POST_DATA_FIELDS = (
    "time",
    "qpos",
    "qvel",
    "act",
    "ctrl",
    "qacc",
    "qacc_warmstart",
    "qfrc_applied",
    "xfrc_applied",
    "mocap_pos",
    "mocap_quat",
    "xpos",
    "xquat",
    "sensordata",
)
CONTACT_FIELDS = (
    "found",
    "force",
    "current_air_time",
    "last_air_time",
    "current_contact_time",
    "last_contact_time",
    "force_history",
)
COMMAND_FIELDS = (
    "vel_command_b",
    "vel_command_w",
    "heading_target",
    "heading_error",
    "time_left",
    "command_counter",
    "is_heading_env",
    "is_standing_env",
    "is_world_env",
    "is_forward_env",
)


def to_np(x) -> np.ndarray:
    t = torch.as_tensor(x).detach().cpu()
    if t.dtype == torch.float64:
        t = t.float()
    return t.numpy().copy()


class Capture:
    """A term function wrapper that keeps its latest output (and forwards `reset`)."""

    def __init__(self, func):
        self.func = func
        self.last: torch.Tensor | None = None
        if hasattr(func, "reset"):
            self.reset = func.reset

    def __call__(self, *args, **kwargs):
        out = self.func(*args, **kwargs)
        self.last = out.detach().clone()
        return out

    def __getattr__(self, name):
        return getattr(self.func, name)


class Recorder:
    """Hooks one MJLab env and collects per-step arrays into lists."""

    def __init__(self, env):
        self.env = env
        self.robot = env.scene["robot"]
        self.twist = env.command_manager.get_term("twist")
        self.arrays: dict[str, list[np.ndarray]] = {}
        self.sub_state: dict[str, np.ndarray] = {}
        self.enabled = True
        self._wrap_terms()
        self._wrap_managers()

    # Hooks.

    def _wrap_terms(self) -> None:
        om = self.env.observation_manager
        self.obs_caps: dict[str, dict[str, Capture]] = {}
        for group, names in om._group_obs_term_names.items():
            self.obs_caps[group] = {}
            for name, cfg in zip(names, om._group_obs_term_cfgs[group], strict=True):
                cfg.func = self.obs_caps[group][name] = Capture(cfg.func)
        rm = self.env.reward_manager
        self.rew_caps: dict[str, Capture] = {}
        for name, cfg in zip(rm._term_names, rm._term_cfgs, strict=True):
            cfg.func = self.rew_caps[name] = Capture(cfg.func)
        push = self.env.event_manager.get_term_cfg("push_robot")
        self.pushed = torch.zeros(self.env.num_envs, dtype=torch.bool)
        push_func = push.func

        def push_and_note(env, env_ids, *args, **kwargs):
            self.pushed[torch.as_tensor(env_ids).cpu()] = True
            return push_func(env, env_ids, *args, **kwargs)

        push.func = push_and_note

    def _wrap_managers(self) -> None:
        env = self.env
        term_compute = env.termination_manager.compute
        rew_compute = env.reward_manager.compute
        sim_step = env.sim.step
        self._substep = 0

        def termination_compute():
            if self.enabled:
                self.add_state("mid", self.state("mid"))
            return term_compute()

        def reward_compute(dt):
            out = rew_compute(dt=dt)
            if self.enabled:
                self.add_rewards(out)
            return out

        def step_and_note():
            self._substep += 1
            if self._substep % env.cfg.decimation == 0:
                d = env.sim.data
                self.sub_state = {f: to_np(getattr(d, f)) for f in ("qpos", "qvel", "act", "ctrl")}
            sim_step()

        env.termination_manager.compute = termination_compute
        env.reward_manager.compute = reward_compute
        env.sim.step = step_and_note

    # Snapshots.

    def state(self, where: str) -> dict[str, np.ndarray]:
        import warp as wp

        env, d = self.env, self.env.sim.wp_data
        fields = DATA_FIELDS if where == "mid" else POST_DATA_FIELDS
        out = {f"data/{f}": to_np(wp.to_torch(getattr(d, f))) for f in fields}
        am = env.action_manager
        out["action/action"] = to_np(am.action)
        out["action/prev_action"] = to_np(am.prev_action)
        out["action/prev_prev_action"] = to_np(am.prev_prev_action)
        out["action/processed"] = to_np(am.get_term("joint_pos")._processed_actions)
        for f in COMMAND_FIELDS:
            out[f"command/{f}"] = to_np(getattr(self.twist, f))
        out["episode_length"] = to_np(env.episode_length_buf)
        for name, sensor in env.scene.sensors.items():
            kind = type(sensor).__name__
            if kind == "ContactSensor":
                data = sensor.data
                for f in CONTACT_FIELDS:
                    value = getattr(data, f)
                    if value is not None:
                        out[f"sensor/{name}/{f}"] = to_np(value)
            elif kind == "TerrainHeightSensor":
                out[f"sensor/{name}/heights"] = to_np(sensor.data.heights)
        swing = self.rew_caps.get("foot_swing_height")
        if swing is not None and hasattr(swing.func, "peak_heights"):
            out["reward_state/foot_swing_height/peak_heights"] = to_np(swing.func.peak_heights)
        terrain = env.scene.terrain
        if terrain is not None and getattr(terrain, "terrain_origins", None) is not None:
            out["terrain/levels"] = to_np(terrain.terrain_levels)
            out["terrain/env_origins"] = to_np(env.scene.env_origins)
        upright = env.reward_manager.get_term_cfg("upright").params.get("terrain_sensor_names")
        if where == "mid" and upright:
            # The plane normal MJLab's upright term fits to the terrain scan it reads.
            from mjlab.tasks.velocity.mdp.terrain_utils import terrain_normal_from_sensors

            out["reward_state/upright/terrain_normal"] = to_np(
                terrain_normal_from_sensors(env, tuple(upright))
            )
        return out

    def add(self, key: str, value: np.ndarray) -> None:
        self.arrays.setdefault(key, []).append(value)

    def add_state(self, prefix: str, state: dict[str, np.ndarray]) -> None:
        for k, v in state.items():
            self.add(f"{prefix}/{k}", v)

    def add_rewards(self, reward: torch.Tensor) -> None:
        rm = self.env.reward_manager
        self.add("reward", to_np(reward))
        step_reward = to_np(rm._step_reward)
        for i, (name, cfg) in enumerate(zip(rm._term_names, rm._term_cfgs, strict=True)):
            self.add(f"rew_weighted/{name}", step_reward[:, i])
            cap = self.rew_caps[name]
            if cfg.weight == 0.0:
                # MJLab skips zero-weight terms; evaluate plain (stateless) functions here,
                # on the same state, so that their raw values are on record too.
                if inspect.isfunction(cap.func):
                    raw = to_np(cap.func(self.env, **cfg.params))
                else:
                    raw = np.full(self.env.num_envs, np.nan, np.float32)
            else:
                raw = to_np(cap.last)
            self.add(f"rew_raw/{name}", raw)
        tm = self.env.termination_manager
        for name in tm.active_terms:
            self.add(f"term/{name}", to_np(tm.get_term(name)))
        self.add("terminated", to_np(tm.terminated))
        self.add("truncated", to_np(tm.time_outs))

    def add_obs(self, obs: dict[str, torch.Tensor]) -> None:
        self.add_state("post", self.state("post"))
        for group, value in obs.items():
            self.add(f"obs/{group}", to_np(value))
            for name, cap in self.obs_caps[group].items():
                self.add(f"obs_term/{group}/{name}", to_np(cap.last))

    def stacked(self) -> dict[str, np.ndarray]:
        return {k: np.stack(v) for k, v in self.arrays.items()}


# MjModel fields of the terrain body's geoms ("terrain/geom_<field>") and heightfields
# ("terrain/hfield_<field>"): the compiled geometry a replay builds the same terrain from.
TERRAIN_GEOM_FIELDS = (
    "type", "pos", "quat", "size", "dataid", "group", "contype", "conaffinity", "condim",
    "priority", "solmix", "solref", "solimp", "margin", "gap", "friction", "rgba",
)  # fmt: skip


def terrain_geometry(env) -> dict[str, np.ndarray]:
    """The compiled terrain (geoms of the `terrain` body, heightfields) and its grid of
    spawn origins; empty on a plane. Float64 fields are kept as float64 (exact)."""
    import mujoco

    terrain = env.scene.terrain
    if terrain is None or getattr(terrain, "terrain_origins", None) is None:
        return {}
    m = env.sim.mj_model
    body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "terrain")
    assert (m.body_pos[body] == 0).all() and (m.body_quat[body] == [1, 0, 0, 0]).all()
    ids = np.flatnonzero(m.geom_bodyid == body)
    out = {
        f"terrain/geom_{f}": np.asarray(getattr(m, "geom_" + f)[ids]) for f in TERRAIN_GEOM_FIELDS
    }
    out["terrain/hfield_size"] = np.asarray(m.hfield_size)
    out["terrain/hfield_nrow"] = np.asarray(m.hfield_nrow)
    out["terrain/hfield_ncol"] = np.asarray(m.hfield_ncol)
    out["terrain/hfield_data"] = np.asarray(m.hfield_data)  # float32, row-major per field
    out["terrain/origins"] = to_np(terrain.terrain_origins)  # (rows, cols, 3)
    out["terrain/types"] = to_np(terrain.terrain_types)  # (N,) column of each env
    return out


def small_terrain(cfg, margin: float) -> None:
    """A 3 x 3 grid of 4 m tiles (stairs: boxes; random roughness and a slope: heightfields)
    in a 1 m border, instead of ROUGH_TERRAINS_CFG's 10 x 7 of 8 m in 20 m, so the fixture
    can carry the compiled geometry. Platforms of 1 m put the scans over steps and slopes;
    `margin` (MJLab: 0.3 m) moves out_of_terrain_bounds' limit in to where the robots are."""
    from mjlab.terrains import config as presets

    gen = cfg.scene.terrain.terrain_generator
    gen.size, gen.num_rows, gen.border_width, gen.seed = (4.0, 4.0), 3, 1.0, 0
    gen.sub_terrains = {
        "pyramid_stairs": presets.pyramid_stairs(
            proportion=0.2, step_height_range=(0.05, 0.15), platform_width=1.0, border_width=0.25
        ),
        "random_rough": presets.random_rough(proportion=0.1),
        "hf_pyramid_slope": presets.hf_pyramid_slope(
            proportion=0.1, slope_range=(0.0, 1.0), platform_width=1.0
        ),
    }
    cfg.terminations["out_of_terrain_bounds"].params["margin"] = margin


def model_params(env) -> dict[str, np.ndarray]:
    """Per-world model fields that MJLab's startup events randomized, and entity constants."""
    out = {}
    for f in sorted(env.sim.expanded_fields):
        out[f"model/{f}"] = to_np(getattr(env.sim.model, f))
    data = env.scene["robot"].data
    out["robot/encoder_bias"] = to_np(data.encoder_bias)
    out["robot/default_joint_pos"] = to_np(data.default_joint_pos)
    out["robot/default_joint_vel"] = to_np(data.default_joint_vel)
    out["robot/soft_joint_pos_limits"] = to_np(data.soft_joint_pos_limits)
    out["robot/gravity_vec_w"] = to_np(data.gravity_vec_w)
    out["robot/forward_vec_b"] = to_np(data.forward_vec_b)
    return out


def jsonable(x):
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        fields = (f.name for f in dataclasses.fields(x) if not f.name.startswith("_"))
        return {name: jsonable(getattr(x, name)) for name in fields}
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, (bool, int, float, str)) or x is None:
        return x
    if isinstance(x, torch.Tensor):
        return jsonable(x.tolist())
    if callable(x):
        return f"{getattr(x, '__module__', '?')}.{getattr(x, '__qualname__', repr(x))}"
    if hasattr(x, "name") and hasattr(x, "entity"):
        return {"entity": getattr(x, "entity", None), "name": x.name}
    return repr(x)


def func_ref(func) -> dict[str, str]:
    func = getattr(func, "func", func)  # unwrap Capture
    target = func if inspect.isfunction(func) or inspect.isclass(func) else type(func)
    return {
        "func": f"{target.__module__}.{target.__qualname__}",
        "source": inspect.getsourcefile(target).split("site-packages/")[-1],
    }


def noise_settings(noise) -> dict | None:
    if noise is None:
        return None
    return {"type": type(noise).__name__, **jsonable(noise)}


def metadata(env, cfg_noise: dict, args, arrays: dict[str, np.ndarray]) -> dict:
    import mujoco

    robot = env.scene["robot"]
    am = env.action_manager
    act = am.get_term("joint_pos")
    mj = env.sim.mj_model
    om = env.observation_manager
    obs = {}
    for group, names in om._group_obs_term_names.items():
        gcfg = env.cfg.observations[group]
        terms = []
        for name, cfg, dim in zip(
            names, om._group_obs_term_cfgs[group], om._group_obs_term_dim[group], strict=True
        ):
            terms.append(
                {
                    "name": name,
                    "dim": list(dim),
                    **func_ref(cfg.func),
                    "params": jsonable(cfg.params),
                    "noise_configured": cfg_noise[group][name],
                    "clip": jsonable(cfg.clip),
                    "scale": jsonable(cfg.scale),
                    "history_length": cfg.history_length,
                    "delay_max_lag": cfg.delay_max_lag,
                }
            )
        obs[group] = {
            "terms": terms,
            "dim": list(om.group_obs_dim[group]),
            "concatenate_terms": gcfg.concatenate_terms,
            "enable_corruption_configured": cfg_noise[group]["__enable_corruption__"],
            "enable_corruption_recorded": gcfg.enable_corruption,
        }
    rm = env.reward_manager
    rewards = [
        {"name": n, "weight": c.weight, **func_ref(c.func), "params": jsonable(c.params)}
        for n, c in zip(rm._term_names, rm._term_cfgs, strict=True)
    ]
    tm = env.termination_manager
    terminations = [
        {"name": n, "time_out": c.time_out, **func_ref(c.func), "params": jsonable(c.params)}
        for n, c in zip(tm._term_names, tm._term_cfgs, strict=True)
    ]
    events = {
        n: {"mode": c.mode, **func_ref(c.func), "params": jsonable(c.params)}
        | ({"interval_range_s": list(c.interval_range_s)} if c.interval_range_s else {})
        for n, c in env.cfg.events.items()
    }
    twist_cfg = env.cfg.commands["twist"]
    sensors = {}
    for name, sensor in env.scene.sensors.items():
        entry = {"type": type(sensor).__name__}
        if hasattr(sensor, "primary_names"):
            entry["primary_names"] = sensor.primary_names
        if entry["type"] in ("RayCastSensor", "TerrainHeightSensor"):
            entry["cfg"] = {
                k: v for k, v in jsonable(sensor.cfg).items() if k not in ("viz", "debug_vis")
            }
        sensors[name] = entry
    terrain_cfg = env.cfg.scene.terrain
    terrain = None
    if terrain_cfg is not None and terrain_cfg.terrain_generator is not None:
        terrain = {
            "max_init_terrain_level": terrain_cfg.max_init_terrain_level,
            "generator": jsonable(terrain_cfg.terrain_generator),
            "sub_terrain_types": {
                n: type(s).__name__ for n, s in terrain_cfg.terrain_generator.sub_terrains.items()
            },
            "override": args.terrain,
        }
    versions = {
        p: importlib.metadata.version(p)
        for p in ("mjlab", "mujoco", "mujoco-warp", "warp-lang", "torch", "numpy")
    }

    def names(kind, count):
        return [mujoco.mj_id2name(mj, kind, i) for i in range(count)]

    return {
        "format": "unilab-mjlab-parity/1",
        "task": args.task,
        "versions": versions,
        "python": sys.version.split()[0],
        "device": args.device,
        "seed": args.seed,
        "num_envs": env.num_envs,
        "steps": args.steps,
        "skip": args.skip,
        "policy": "uniform [-1, 1], torch.Generator(seed) on CPU, drawn per step as (N, A)",
        "physics_dt": env.physics_dt,
        "decimation": env.cfg.decimation,
        "step_dt": env.step_dt,
        "episode_length_s": env.cfg.episode_length_s,
        "max_episode_length": env.max_episode_length,
        "scale_rewards_by_dt": env.cfg.scale_rewards_by_dt,
        "sim": jsonable(env.cfg.sim),
        "action": {
            "joint_names": list(act.target_names),
            "scale": jsonable(act.scale if isinstance(act.scale, float) else act.scale[0]),
            "offset": jsonable(act.offset if isinstance(act.offset, float) else act.offset[0]),
            "target": "joint position target = action * scale + offset - encoder_bias",
        },
        "robot": {
            "joint_names": list(robot.joint_names),
            "body_names": list(robot.body_names),
            "site_names": list(robot.site_names),
            "actuator_names": names(mujoco.mjtObj.mjOBJ_ACTUATOR, mj.nu),
            "actuator_gainprm0": mj.actuator_gainprm[:, 0].tolist(),
            "actuator_biasprm12": mj.actuator_biasprm[:, 1:3].tolist(),
            "actuator_forcerange": mj.actuator_forcerange.tolist(),
        },
        "model_names": {
            "body": names(mujoco.mjtObj.mjOBJ_BODY, mj.nbody),
            "geom": names(mujoco.mjtObj.mjOBJ_GEOM, mj.ngeom),
            "site": names(mujoco.mjtObj.mjOBJ_SITE, mj.nsite),
            "sensor": names(mujoco.mjtObj.mjOBJ_SENSOR, mj.nsensor),
            "sensor_adr": mj.sensor_adr.tolist(),
            "sensor_dim": mj.sensor_dim.tolist(),
        },
        "observations": obs,
        "rewards": rewards,
        "terminations": terminations,
        "events": events,
        "command": {
            "name": "twist",
            **func_ref(type(env.command_manager.get_term("twist"))),
            "cfg": {
                k: v
                for k, v in jsonable(twist_cfg).items()
                if k not in ("viz", "debug_vis", "class_type")
            },
        },
        "sensors": sensors,
        "terrain": terrain,
        "arrays": {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in arrays.items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default="Mjlab-Velocity-Flat-Unitree-Go1")
    ap.add_argument("--num-envs", type=int, default=4)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--skip", type=int, default=0, help="steps run (same policy) before recording starts"
    )
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", required=True, help="output path without suffix")
    ap.add_argument(
        "--terrain",
        choices=("task", "small"),
        default="task",
        help="rough tasks: the task's terrain generator, or `small_terrain` (3 x 3 tiles)",
    )
    ap.add_argument(
        "--oob-margin", type=float, default=None, help="with --terrain small: bounds margin (m)"
    )
    ap.add_argument(
        "--nconmax", type=int, default=None, help="override the task's per-world contact capacity"
    )
    args = ap.parse_args()

    import mjlab.tasks  # noqa: F401  (fills the task registry)
    from mjlab.envs import ManagerBasedRlEnv
    from mjlab.tasks.registry import load_env_cfg

    cfg = load_env_cfg(args.task)
    cfg.scene.num_envs = args.num_envs
    cfg.seed = args.seed
    if args.nconmax is not None:
        cfg.sim.nconmax = args.nconmax
    if args.terrain == "small":
        small_terrain(cfg, 0.3 if args.oob_margin is None else args.oob_margin)
    cfg_noise = {}
    for group, gcfg in cfg.observations.items():
        cfg_noise[group] = {n: noise_settings(t.noise) for n, t in gcfg.terms.items()}
        cfg_noise[group]["__enable_corruption__"] = gcfg.enable_corruption
        gcfg.enable_corruption = False
    env = ManagerBasedRlEnv(cfg=cfg, device=args.device)
    rec = Recorder(env)
    params = model_params(env)  # after the startup events, which ran in the constructor

    obs, _ = env.reset()
    gen = torch.Generator().manual_seed(args.seed)
    n_act = sum(env.action_manager.action_term_dim)
    rec.enabled = args.skip == 0
    for step in range(args.skip):
        action = torch.rand(env.num_envs, n_act, generator=gen) * 2 - 1
        obs, _, terminated, truncated, _ = env.step(action.to(env.device))
        done = (terminated | truncated).nonzero().flatten().tolist()
        if done:
            print(f"skipped step {step}: envs {done} done")
    rec.enabled = True
    rec.add_obs(obs)
    for _ in range(args.steps):
        action = torch.rand(env.num_envs, n_act, generator=gen) * 2 - 1
        rec.pushed.zero_()
        counter = to_np(rec.twist.command_counter)
        obs, _, terminated, truncated, _ = env.step(action.to(env.device))
        rec.add("action", to_np(action))
        rec.add("pushed", rec.pushed.numpy().copy())
        done = to_np(terminated) | to_np(truncated)
        # command_counter goes to 0 then 1 on a reset; otherwise +1 per resample.
        rec.add("resampled", (to_np(rec.twist.command_counter) != counter) & ~done)
        for k, v in rec.sub_state.items():
            rec.add(f"substep_last/{k}", v)
        rec.add_obs(obs)

    arrays = rec.stacked() | params | terrain_geometry(env)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out.with_suffix(".npz"), **arrays)
    meta = metadata(env, cfg_noise, args, arrays)
    out.with_suffix(".json").write_text(json.dumps(meta, indent=1) + "\n")
    print(
        f"{args.task}: {args.steps} steps x {env.num_envs} envs, "
        f"resets {int(arrays['terminated'].sum() + arrays['truncated'].sum())}, "
        f"resamples {int(arrays['resampled'].sum())}, pushes {int(arrays['pushed'].sum())}; "
        f"wrote {out.with_suffix('.npz')} ({out.with_suffix('.npz').stat().st_size} bytes)"
    )


if __name__ == "__main__":
    main()
