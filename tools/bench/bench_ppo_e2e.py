"""PPO end to end (collection + learning) with UniLab on 1 and W GPUs: env-steps/s, phases, scaling.

    python3 tools/bench/bench_ppo_e2e.py                       # quadruped-velocity, 4096 envs/GPU
    python3 tools/bench/bench_ppo_e2e.py --robot go1 --profile # MJLab's Go1 MJCF (see below)
    python3 tools/bench/bench_ppo_e2e.py --gpus 1,2 --iterations 25 --warmup 3
    python3 tools/bench/bench_ppo_e2e.py --curve --iterations 500 --gpus 1   # learning curve
    python3 tools/bench/bench_ppo_e2e.py --quick               # CPU, tiny, gloo, profiled

Setting (MJLab's `Mjlab-Velocity-Flat-Unitree-Go1` PPO): `--num-envs` 4096 per GPU, 24 steps per
env, actor and critic 512-256-128 ELU with observation normalization, 5 epochs x 4 mini-batches,
adaptive KL (desired 0.01), lr 1e-3, clip 0.2, entropy 0.01, gamma 0.99, lambda 0.95, max grad
norm 1.0, init std 1.0. `--preset unilab` (default: `PPOConfig()` semantics, global statistics)
or `rsl_rl` (`PPOConfig.rsl_rl()`: RSL-RL 5.4.2 semantics, local statistics).

Every GPU count W in `--gpus` runs in W freshly spawned processes (rank r on cuda:r, its own
envs seeded seed+r; NCCL for W > 1 with `GradAllReduce` and `sum_reducer` injected, the learner
broadcast from rank 0 at start; W = 1 is the plain single-process path). Loop per iteration:
24 x (`PPO.act` -> `env.step` -> `PPO.process_env_step`) under inference mode, then
`compute_returns` and `update`, then one reduction of the episode statistics for the log.

Host placement (A/B knobs for the host-bound collection phases; both off by default, as the
`unilab train` launcher leaves them): `--pin-cpus` pins rank r to the r-th contiguous 1/W share
of the CPUs the process may use (`os.sched_setaffinity`), `--cpu-threads N` sets torch's
intra-op threads per rank (torch's default is every core, in every rank). The JSON records each
rank's `cpus` and `torch_threads`. `--isolate-gpus` starts rank r with `CUDA_VISIBLE_DEVICES`
set to the r-th GPU alone, so that no rank's torch, warp or NCCL creates a context on another
rank's GPU (by default every rank sees every GPU and uses cuda:r).

Measured (rank 0's host clock, the profile each rank's own; the update ends with a host sync, so
iterations are timed whole):
  - unprofiled: env-steps/s of each iteration = W * N * 24 / iteration time, median over the
    `--iterations` timed iterations after `--warmup`; and the window rate: total steps over the
    wall-clock of the timed window, opened and closed with a barrier + device synchronize;
  - `--profile`: `--profile-iters` further iterations with a device synchronize between phases,
    on every rank: physics (action copy, `apply_action`, pushes, decimation x
    `mujoco_warp.step`), obs_reward (the rest of the env step: rewards, terminations,
    bookkeeping, observations, resets, output copies), inference (`act`), storage
    (`process_env_step` less its collective, plus the episode sums), norm_sync (the observation
    normalizers' one `reduce_sum` per env step inside `process_env_step`: the normalizers get
    their own wrapper of the injected `reduce_sum`), learning (`compute_returns` + `update` less
    collectives), sync (time inside `grad_sync` and the advantage normalization's `reduce_sum`),
    other (episode statistics). A collective is timed between two synchronizes, so norm_sync and
    sync include waiting for the slower rank, and the phases still add up to the total. The
    env's captured step is replayed as two CUDA graphs split after the physics for this (same
    launches, same order). Synchronizing serializes the GPU, so the profiled total is above the
    unprofiled time. The table shows each phase's median over the profiled iterations per rank
    (one column per rank for W <= 2; rank 0, min and max over ranks for W > 2).
  - weak-scaling efficiency(W) = rate(W) / (W * rate(1)).

`--robot go1`: the Go1 MJCF of mjlab 1.6.0 (`--mjcf PATH` to go1.xml; default: found in
/tmp/site-mjlab or extracted from .kit/mjlab/mjlab-1.6.0-*.whl) with MJLab's actuators (PD gains
from rotor inertia and gear ratio, 10 Hz, damping ratio 2, armature, effort limits), action
scale 0.25 * effort / stiffness, default pose, initial height 0.278 m and 70 degree tilt limit,
driven by UniLab's quadruped velocity task (`go1_robot_config`: `unilab_envs.tasks.robots.go1`
with the task's foot and termination settings). `--mjlab-physics` (default on for go1) keeps
MJLab's solver options (dt 0.005 s, implicitfast, elliptic cone, impratio 10,
10 iterations, 20 line-search iterations) and its FULL_COLLISION geom settings; njmax 300 as in
MJLab's flat task. Matmuls in TF32 (`--matmul-precision high`) as MJLab's `mjlab.scripts.train`
sets them (`configure_torch_backends()`, TF32 on by default), unless `--matmul-precision` says
otherwise.

Writes `$OUT/ppo_e2e_<name>.json` (all numbers, per-iteration times, returns and profile rows of
every rank; per GPU count `profile_median_s` of rank 0 and `profile_median_s_per_rank`: phase ->
one median per rank) after every GPU count, and with `--curve` `$OUT/ppo_e2e_<name>_curve.json`
(return vs wall-clock per iteration). Prints progress per iteration and a table last.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import socket
import statistics
import sys
import tempfile
import time
import zipfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for _pkg in ("unilab-dist", "unilab-storage", "unilab-algos", "unilab-envs"):
    _src = str(ROOT / "packages" / _pkg / "src")
    if _src not in sys.path:
        sys.path.insert(0, _src)

import attrs  # noqa: E402
import torch  # noqa: E402

PHASES = ("physics", "obs_reward", "inference", "storage", "norm_sync", "learning", "sync", "other")
GO1_XML_IN_WHEEL = "mjlab/asset_zoo/robots/unitree_go1/xmls/"


# ----------------------------------------------------------------------------- Go1 (mjlab 1.6.0)
def go1_robot_config(mjcf: str, *, nconmax: int = 48, njmax: int = 300, mjlab_physics=True):
    """MJLab's Go1 (`unilab_envs.tasks.robots.go1`: actuators, pose, collisions, solver options)
    as UniLab's quadruped velocity task drives it here: feet are the calf bodies, and an episode
    also ends on trunk contact or a base below 5 cm. `mjlab_physics=False`: the MJCF's own
    collision setup and solver options."""
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


def find_go1_xml(workdir: str) -> str:
    """go1.xml from /tmp/site-mjlab, or extracted (with its meshes) from the mjlab wheel."""
    installed = "/tmp/site-mjlab/" + GO1_XML_IN_WHEEL + "go1.xml"
    if os.path.isfile(installed):
        return installed
    wheels = sorted(glob.glob(str(ROOT / ".kit" / "mjlab" / "mjlab-1.6.0-*.whl")))
    if not wheels:
        raise FileNotFoundError(
            "--robot go1: no go1.xml; pass --mjcf PATH, install mjlab into /tmp/site-mjlab, or "
            "stage .kit/mjlab with ../shared/tools/mjlab-kit"
        )
    with zipfile.ZipFile(wheels[-1]) as zf:
        for name in zf.namelist():
            if name.startswith(GO1_XML_IN_WHEEL) and not name.endswith("/"):
                zf.extract(name, workdir)
    return os.path.join(workdir, GO1_XML_IN_WHEEL, "go1.xml")


# ----------------------------------------------------------------------------- timing helpers
class Profiler:
    """Accumulates phase times between device synchronizations (active only with --profile)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.active = False
        self.totals: dict[str, float] = defaultdict(float)
        self.pending: dict[str, float] = defaultdict(float)  # collective time since the last lap
        self.last = 0.0

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def start(self) -> None:
        self.sync()
        self.totals = defaultdict(float)
        self.pending = defaultdict(float)
        self.last = time.perf_counter()

    def lap(self, name: str) -> None:
        """Books the time since the last lap to `name`, less the collectives timed inside it."""
        self.sync()
        now = time.perf_counter()
        self.totals[name] += now - self.last - sum(self.pending.values())
        for phase, seconds in self.pending.items():
            self.totals[phase] += seconds
        self.pending.clear()
        self.last = now


class TimedCollective:
    """Wraps a `grad_sync` / `reduce_sum` callable; when profiling, times it between syncs and
    books the time to `phase` (taken out of the phase it ran in)."""

    def __init__(self, fn, prof: Profiler, phase: str = "sync") -> None:
        self.fn, self.prof, self.phase = fn, prof, phase
        # a `sum_reducer` tells its rank and world size (the exact normalizer gives every rank
        # its own slot of the one sum); keep them visible through the wrapper
        for name in ("rank", "world_size"):
            if hasattr(fn, name):
                setattr(self, name, getattr(fn, name))

    def __call__(self, *args):
        if not self.prof.active:
            return self.fn(*args)
        self.prof.sync()
        t = time.perf_counter()
        out = self.fn(*args)
        self.prof.sync()
        self.prof.pending[self.phase] += time.perf_counter() - t
        return out


def time_norm_sync(ppo, prof: Profiler) -> int:
    """Gives the global observation normalizers their own `TimedCollective` (phase norm_sync).

    The normalizers hold the `reduce_sum` injected into `PPO` (also used by the advantage
    normalization, phase sync); `update_normalizers` fuses the normalizers that hold the same
    callable into one collective, so all of them get ONE new wrapper of the same function.
    Returns the number of normalizers rewired (0 for one process or local statistics).
    """
    wrappers: dict[int, TimedCollective] = {}
    count = 0
    for net in (ppo.actor, ppo.critic, ppo.rnd):
        for module in net.modules() if net is not None else ():
            fn = getattr(module, "reduce_sum", None)
            if isinstance(fn, TimedCollective) and fn.phase == "sync":
                if id(fn) not in wrappers:
                    wrappers[id(fn)] = TimedCollective(fn.fn, prof, "norm_sync")
                module.reduce_sum = wrappers[id(fn)]
                count += 1
    return count


class SplitStepper:
    """`env.step` for --profile: the env's control step as two parts timed separately.

    On CUDA with the env's graph, `_control_step` is captured as two graphs split at
    `task.post_physics` (physics = action, pushes, substeps, overflow bits; rest = everything
    after); otherwise it runs eagerly with a lap inside `post_physics`. Uses the env's private
    members (bench only; the sequence and buffers are the env's own).
    """

    def __init__(self, env, prof: Profiler) -> None:
        self.env, self.prof = env, prof
        self.graphs: dict[str, object] | None = None
        if env.uses_cuda_graph:
            self.graphs = self._capture()

    def _patch(self, fn):
        task = self.env.task
        saved = vars(task).get("post_physics")
        orig = task.post_physics

        def post_physics(ctx):
            fn()
            orig(ctx)

        task.post_physics = post_physics
        return lambda: (
            setattr(task, "post_physics", saved) if saved else vars(task).pop("post_physics")
        )

    def _capture(self) -> dict[str, object]:
        import warp as wp

        env = self.env
        dev, stream = env._wp_device, env._wp_stream
        graphs: dict[str, object] = {}

        def split() -> None:
            graphs["physics"] = wp.capture_end(device=dev, stream=stream)
            wp.capture_begin(device=dev, stream=stream)

        restore = self._patch(split)
        try:
            with env._stream_ctx(), env._scope():
                wp.capture_begin(device=dev, stream=stream)
                try:
                    env._control_step()
                finally:
                    graphs["rest"] = wp.capture_end(device=dev, stream=stream)
        finally:
            restore()
        return graphs

    def __call__(self, action: torch.Tensor):
        import warp as wp

        env, prof = self.env, self.prof
        with env._stream_ctx():
            env._raw_action_t.copy_(action.detach())
            with env._scope():
                env._sync_curriculum()
                if self.graphs is not None:
                    wp.capture_launch(self.graphs["physics"], stream=env._wp_stream)
                    prof.lap("physics")
                    wp.capture_launch(self.graphs["rest"], stream=env._wp_stream)
                else:
                    restore = self._patch(lambda: prof.lap("physics"))
                    try:
                        env._control_step()
                    finally:
                        restore()
        env._wait_for_env()
        env._after_step()
        out = env._outputs()
        prof.lap("obs_reward")
        return out


# ----------------------------------------------------------------------------- one rank
def make_ppo_config(args):
    import attrs

    from unilab_algos import GaussianConfig, NetworkConfig, PPOConfig

    net = NetworkConfig(hidden=tuple(args.hidden), activation="elu", normalize_obs=True)
    hp = dict(
        actor=net,
        critic=net,
        policy=GaussianConfig(init_std=1.0, std_param="std"),
        num_epochs=args.epochs,
        num_mini_batches=args.mini_batches,
        clip_param=0.2,
        entropy_coef=0.01,
        value_loss_coef=1.0,
        use_clipped_value_loss=True,
        learning_rate=1e-3,
        schedule="adaptive",
        desired_kl=0.01,
        gamma=0.99,
        lam=0.95,
        max_grad_norm=1.0,
    )
    if "capture" in attrs.fields_dict(PPOConfig):  # unilab-algos >= the captured update
        hp["capture"] = args.ppo_capture  # explicit: PPOConfig's own default is "auto"
    elif args.ppo_capture != "none":
        raise ValueError("--ppo-capture: this unilab_algos has no PPOConfig.capture")
    if "capture_rollout" in attrs.fields_dict(PPOConfig):  # unilab-algos >= the captured rollout
        hp["capture_rollout"] = args.capture_rollout
    elif args.capture_rollout and args.ppo_capture != "none":
        raise ValueError("--capture-rollout: this unilab_algos has no PPOConfig.capture_rollout")
    return PPOConfig.rsl_rl(**hp) if args.preset == "rsl_rl" else PPOConfig(**hp)


def make_env(args, rank: int, device: str):
    import unilab_envs

    kw: dict = dict(check_actions=False)
    if args.robot == "go1":
        kw["robot"] = go1_robot_config(
            args.mjcf, njmax=args.njmax, nconmax=args.nconmax, mjlab_physics=args.mjlab_physics
        )
    return unilab_envs.make(
        args.task, num_envs=args.num_envs, device=device, seed=args.seed + rank, **kw
    )


def run_rank(rank: int, world: int, args, port: int, outdir: str) -> None:
    """One process: envs + PPO on its device, `args.iterations` timed iterations; writes JSON."""
    import warp as wp

    import unilab_dist as ud
    from unilab_algos import PPO

    wp.config.log_level = wp.LOG_WARNING  # no per-module load lines
    t_launch = time.perf_counter()
    cuda = args.device == "cuda"
    gpu = 0 if args.isolate_gpus else rank  # isolated: this rank's GPU is the only one it sees
    device = torch.device("cuda", gpu) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    else:
        torch.set_num_threads(1)
    torch.set_float32_matmul_precision(args.matmul_precision)  # as `runner.matmul_precision`
    cpus = pin_cpus(rank, world) if args.pin_cpus else None
    if args.cpu_threads is not None:
        torch.set_num_threads(args.cpu_threads)
    if world > 1:
        os.environ.update(
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
            WORLD_SIZE=str(world),
            RANK=str(rank),
            LOCAL_RANK=str(rank),
            LOCAL_WORLD_SIZE=str(world),
        )
        ud.init_distributed(device=device, timeout_s=600.0)
    torch.manual_seed(args.seed + rank)
    main = rank == 0
    tag = f"[W={world}]"

    def log(msg: str) -> None:
        if main:
            print(f"{tag} {msg}", flush=True)

    prof = Profiler(device)
    grad_sync = reduce_sum = None
    if world > 1:
        grad_sync = TimedCollective(ud.GradAllReduce(), prof)
        reduce_sum = TimedCollective(ud.sum_reducer(), prof)
    env = make_env(args, rank, str(device))
    if not args.solver_warnings:
        # MJWarp prints one line per world that hits the solver's iteration limits (a printf in
        # the captured step); MJLab's 10/20 iterations hit them routinely.
        import mujoco_warp as mjw

        bits = int(mjw.OverflowType.ITERATIONS) | int(mjw.OverflowType.LS_ITERATIONS)
        env.ctx.model.opt.warn_overflow = int(env.ctx.model.opt.warn_overflow) & ~bits
    ppo = PPO(
        env.observation_shapes,
        env.action_dim,
        make_ppo_config(args),
        device=device,
        grad_sync=grad_sync,
        reduce_sum=reduce_sum,
    )
    norm_sync = time_norm_sync(ppo, prof)
    if world > 1:
        ud.broadcast_module_state(ppo.replicated_modules())
    n, t_steps = args.num_envs, args.steps
    ppo.init_storage(n, t_steps)
    ppo.train_mode()
    obs = env.reset()
    setup_s = time.perf_counter() - t_launch
    log(f"setup {setup_s:.1f} s ({env.task.spec.name}, {n} envs/rank on {device})")

    ep = torch.zeros(3, dtype=torch.float64, device=device)  # return sum, length sum, count

    def iteration(stepper, profiling: bool):
        nonlocal obs
        if profiling:
            prof.start()
        with torch.inference_mode():
            for _ in range(t_steps):
                actions = ppo.act(obs)
                if profiling:
                    prof.lap("inference")
                step = stepper(actions)
                ppo.process_env_step(step)
                done = step["done"]
                ep[0] += step["episode", "return"].sum()
                ep[1] += step["episode", "length"].sum()
                ep[2] += done.sum()
                if profiling:
                    prof.lap("storage")
                obs = step
            ppo.compute_returns(obs)
        metrics = ppo.update()
        if profiling:
            prof.lap("learning")
        stats = ep.clone()
        ep.zero_()
        if world > 1:
            stats = ud.all_reduce(stats, "sum")
        s = stats.tolist()
        if profiling:
            prof.lap("other")
        ret = s[0] / s[2] if s[2] > 0 else None
        length = s[1] / s[2] if s[2] > 0 else None
        return metrics, ret, length, int(s[2])

    def barrier() -> None:
        if world > 1:
            ud.all_reduce(torch.zeros(1, device=device), "sum")
        prof.sync()

    per_iter_steps = world * n * t_steps
    total = args.warmup + args.iterations
    times, curve, window = [], [], None
    barrier()
    t0 = time.perf_counter()
    for it in range(total):
        if it == args.warmup:
            barrier()
            t_window = time.perf_counter()
            ud.accounting.reset()  # count the timed iterations' collectives only
        t_it = time.perf_counter()
        metrics, ret, length, episodes = iteration(env.step, False)
        now = time.perf_counter()
        dt = now - t_it
        times.append(dt)
        curve.append(
            {
                "iteration": it,
                "time_s": now - t0,
                "env_steps": per_iter_steps * (it + 1),
                "mean_return": ret,
                "mean_length": length,
                "episodes": episodes,
                "kl": metrics.get("kl"),
                "learning_rate": metrics["learning_rate"],
            }
        )
        if main and (it < 5 or it % args.print_every == 0 or it == total - 1):
            r = "n/a" if ret is None else f"{ret:.3f}"
            warm = " (warm-up)" if it < args.warmup else ""
            log(
                f"it {it + 1}/{total}: {per_iter_steps / dt:,.0f} env-steps/s, "
                f"{dt * 1e3:.1f} ms{warm}, return {r}, lr {metrics['learning_rate']:.2e}"
            )
    collectives = None
    if args.iterations > 0:
        snap = ud.accounting.snapshot()
        collectives = sum(v["collectives"] for v in snap.values()) / args.iterations
        barrier()
        window = time.perf_counter() - t_window
    profile = []
    if args.profile:
        stepper = SplitStepper(env, prof)
        prof.active = True
        for it in range(args.profile_iters):
            iteration(stepper, True)
            row = {k: prof.totals.get(k, 0.0) for k in PHASES}
            row["total"] = sum(row.values())
            profile.append(row)
            log(
                f"profile {it + 1}/{args.profile_iters}: "
                + ", ".join(f"{k} {v * 1e3:.1f}" for k, v in row.items())
                + " ms"
            )
        prof.active = False
    result = {
        "rank": rank,
        "world_size": world,
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if cuda else "cpu",
        "task": env.task.spec.name,
        "obs_shapes": {k: list(v) for k, v in env.observation_shapes.items()},
        "action_dim": env.action_dim,
        "decimation": env.task.spec.decimation,
        "setup_s": setup_s,
        "startup_s": t0 - getattr(args, "process_start", t_launch),
        "iteration_s": times,
        "window_s": window,
        # per timed iteration: PPO's U + T + 1 (W > 1) plus the episode-statistics reduction
        "collectives_per_iteration": collectives,
        "curve": curve,
        "profile": profile,
        "norm_sync_normalizers": norm_sync,
        "cpus": cpus,
        "torch_threads": torch.get_num_threads(),
        "cuda_graph": env.uses_cuda_graph,
        "matmul_precision": args.matmul_precision,
        "ppo_capture_status": str(ppo.capture_status["update"]),
        "ppo_rollout_capture_status": str(ppo.capture_status["rollout"]),
        "memory_bytes_per_env": env.memory_bytes()["per_env"],
        "max_memory_allocated": torch.cuda.max_memory_allocated(device) if cuda else None,
    }
    with open(os.path.join(outdir, f"rank{rank}.json"), "w") as f:
        json.dump(result, f)
    if world > 1:
        barrier()
        ud.shutdown()


def _worker(rank: int, world: int, args_dict: dict, port: int, outdir: str) -> None:
    args_dict = dict(args_dict, process_start=time.perf_counter())
    if args_dict["isolate_gpus"] and args_dict["device"] == "cuda":  # before CUDA initializes
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = visible.split(",") if visible else [str(i) for i in range(world)]
        os.environ["CUDA_VISIBLE_DEVICES"] = ids[rank]
    run_rank(rank, world, argparse.Namespace(**args_dict), port, outdir)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pin_cpus(rank: int, world: int) -> list[int]:
    """Pins this process to its own contiguous 1/world share of the CPUs it may run on."""
    allowed = sorted(os.sched_getaffinity(0))
    share = max(1, len(allowed) // world)
    mine = allowed[rank * share : (rank + 1) * share] or allowed[-share:]
    os.sched_setaffinity(0, mine)
    return mine


def run_config(world: int, args) -> dict:
    """Spawn `world` processes for one GPU count and aggregate their results."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as outdir:
        mp.start_processes(
            _worker,
            args=(world, vars(args), _free_port(), outdir),
            nprocs=world,
            join=True,
            start_method="spawn",
        )
        ranks = []
        for r in range(world):
            with open(os.path.join(outdir, f"rank{r}.json")) as f:
                ranks.append(json.load(f))
    r0 = ranks[0]
    per_iter = world * args.num_envs * args.steps
    timed = r0["iteration_s"][args.warmup :]
    out = {
        "gpus": world,
        "env_steps_per_iteration": per_iter,
        "median_iteration_s": statistics.median(timed) if timed else None,
        "env_steps_per_s": per_iter / statistics.median(timed) if timed else None,
        "window_env_steps_per_s": (
            per_iter * len(timed) / r0["window_s"] if r0["window_s"] else None
        ),
        "per_rank_env_steps_per_s": [
            args.num_envs * args.steps / statistics.median(r["iteration_s"][args.warmup :])
            for r in ranks
            if timed
        ],
        "ranks": ranks,
    }
    if r0["profile"]:
        medians = [
            {k: statistics.median(row[k] for row in r["profile"]) for k in (*PHASES, "total")}
            for r in ranks
        ]
        out["profile_median_s"] = medians[0]
        out["profile_median_s_per_rank"] = {k: [m[k] for m in medians] for k in medians[0]}
    return out


# ----------------------------------------------------------------------------- main
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="CPU, tiny sizes, gloo")
    p.add_argument("--task", default="quadruped-velocity")
    p.add_argument("--robot", choices=("default", "go1"), default="default")
    p.add_argument("--mjcf", default=None, help="go1.xml of mjlab (with --robot go1)")
    p.add_argument("--mjlab-physics", default=None, action=argparse.BooleanOptionalAction)
    p.add_argument(
        "--solver-warnings",
        action="store_true",
        help="keep MJWarp's per-world solver-iteration printf warnings (off by default)",
    )
    p.add_argument("--njmax", type=int, default=300, help="go1 constraint rows per world")
    p.add_argument("--nconmax", type=int, default=48, help="go1 contacts per world")
    p.add_argument("--num-envs", type=int, default=4096, help="per GPU")
    p.add_argument("--steps", type=int, default=24, help="steps per env per iteration")
    p.add_argument("--hidden", default="512,256,128")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--mini-batches", type=int, default=4)
    p.add_argument("--preset", choices=("unilab", "rsl_rl"), default="unilab")
    p.add_argument(
        "--ppo-capture",
        choices=("none", "auto", "cuda_graph"),
        default="none",
        help="PPOConfig.capture (default none: the eager update, as the recorded eager runs)",
    )
    p.add_argument(
        "--capture-rollout",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="PPOConfig.capture_rollout: act/process_env_step in CUDA graphs when --ppo-capture "
        "is not none (the recorded runs before the captured rollout had none)",
    )
    p.add_argument(
        "--matmul-precision",
        choices=("highest", "high", "medium"),
        default=None,
        help="torch.set_float32_matmul_precision per rank, as `unilab train --set "
        "runner.matmul_precision=...` (high: TF32). Default: high with --robot go1 (MJLab's "
        "training script turns TF32 on), highest otherwise",
    )
    p.add_argument("--gpus", default=None, help="GPU counts, e.g. 1,2 (default: 1,2 if 2 GPUs)")
    p.add_argument("--iterations", type=int, default=25, help="timed iterations")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument(
        "--pin-cpus", action="store_true", help="pin rank r to the r-th 1/W share of the CPUs"
    )
    p.add_argument("--cpu-threads", type=int, default=None, help="torch threads per rank")
    p.add_argument(
        "--isolate-gpus", action="store_true", help="rank r sees only GPU r (CUDA_VISIBLE_DEVICES)"
    )
    p.add_argument("--profile", action="store_true")
    p.add_argument("--profile-iters", type=int, default=5)
    p.add_argument("--curve", action="store_true", help="also write the return-vs-time curve")
    p.add_argument("--print-every", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--name", default=None, help="output name (default: task or robot)")
    args = p.parse_args(argv)
    args.device = "cuda" if torch.cuda.is_available() and not args.quick else "cpu"
    if args.quick:  # tiny sizes, unless given explicitly
        quick = dict(num_envs=16, steps=4, hidden="32,32", iterations=2, warmup=1)
        quick.update(profile_iters=1, gpus="1,2")
        for key, value in quick.items():
            if getattr(args, key) == p.get_default(key):
                setattr(args, key, value)
        args.profile = True
    args.hidden = [int(x) for x in str(args.hidden).split(",")]
    if args.gpus is None:
        args.gpus = "1,2" if torch.cuda.device_count() >= 2 else "1"
    args.gpus = [int(x) for x in str(args.gpus).split(",")]
    if args.device == "cuda" and max(args.gpus) > torch.cuda.device_count():
        p.error(f"--gpus {args.gpus}: only {torch.cuda.device_count()} CUDA device(s) visible")
    if min(args.gpus) < 1:
        p.error("--gpus must be positive")
    if args.robot == "go1" and args.task != "quadruped-velocity":
        p.error("--robot go1 needs --task quadruped-velocity")
    if args.mjlab_physics is None:
        args.mjlab_physics = args.robot == "go1"
    if args.matmul_precision is None:
        args.matmul_precision = "high" if args.robot == "go1" else "highest"
    if args.warmup < 1:
        p.error("--warmup must be >= 1 (the first iteration compiles and captures)")
    args.name = args.name or (args.robot if args.robot != "default" else args.task)
    return args


def print_table(results: list[dict], args) -> None:
    base = next((r for r in results if r["gpus"] == 1), None)
    print(
        f"\nPPO end to end: {results[0]['ranks'][0]['task']}, {args.num_envs} envs/GPU x "
        f"{args.steps} steps, {'-'.join(map(str, args.hidden))} ELU, {args.epochs}x"
        f"{args.mini_batches}, preset {args.preset}, PPO capture "
        f"{results[0]['ranks'][0]['ppo_capture_status']}, rollout capture "
        f"{results[0]['ranks'][0].get('ppo_rollout_capture_status')}, matmul precision "
        f"{args.matmul_precision}, device {results[0]['ranks'][0]['device_name']}"
    )
    print(f"{'GPUs':>4} {'env-steps/s':>12} {'window':>12} {'s/iter':>8} {'weak eff.':>9}")
    for r in results:
        eff = "-"
        if base and r["env_steps_per_s"] and base["env_steps_per_s"]:
            eff = f"{r['env_steps_per_s'] / (r['gpus'] * base['env_steps_per_s']):.1%}"
        sps = r["env_steps_per_s"] or 0.0
        win = r["window_env_steps_per_s"] or 0.0
        it = r["median_iteration_s"] or 0.0
        print(f"{r['gpus']:>4} {sps:>12,.0f} {win:>12,.0f} {it:>8.3f} {eff:>9}")
    prof = [r for r in results if "profile_median_s" in r]
    if prof:
        # per GPU count: one column per rank for W <= 2, else rank 0, min and max over ranks
        cols: list[tuple[str, dict[str, float]]] = []
        for r in prof:
            w, per_rank = r["gpus"], r["profile_median_s_per_rank"]
            if w <= 2:
                cols += [(f"W={w} r{i}", {k: v[i] for k, v in per_rank.items()}) for i in range(w)]
            else:
                cols.append((f"W={w} r0", {k: v[0] for k, v in per_rank.items()}))
                cols += [
                    (f"W={w} {f.__name__}", {k: f(v) for k, v in per_rank.items()})
                    for f in (min, max)
                ]
        print(
            f"\nprofiled iteration, ms per rank (median of {args.profile_iters}; synchronized "
            "between phases)"
        )
        print(f"{'phase':<11}" + "".join(f"{name:>10}" for name, _ in cols))
        for k in (*PHASES, "total"):
            print(f"{k:<11}" + "".join(f"{col[k] * 1e3:>10.1f}" for _, col in cols))


def main(argv=None) -> None:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="unilab_e2e_") as workdir:  # extracted/patched MJCF
        run_all(args, workdir)


def run_all(args, workdir: str) -> None:
    if args.robot == "go1":
        args.mjcf = args.mjcf or find_go1_xml(workdir)
        print(f"go1 MJCF: {args.mjcf}", flush=True)
    out_dir = os.environ.get("OUT")
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    results: list[dict] = []
    for world in args.gpus:
        print(f"=== {world} process(es) on {args.device} ===", flush=True)
        t = time.perf_counter()
        results.append(run_config(world, args))
        print(f"=== {world} done in {time.perf_counter() - t:.1f} s ===", flush=True)
        summary = {"args": vars(args), "results": results}
        base = next((r for r in results if r["gpus"] == 1), None)
        if base and base["env_steps_per_s"]:
            summary["weak_scaling_efficiency"] = {
                str(r["gpus"]): r["env_steps_per_s"] / (r["gpus"] * base["env_steps_per_s"])
                for r in results
                if r["env_steps_per_s"]
            }
        if out_dir:
            with open(os.path.join(out_dir, f"ppo_e2e_{args.name}.json"), "w") as f:
                json.dump(summary, f, indent=1)
            if args.curve:
                curves = {
                    str(r["gpus"]): {
                        "setup_s": r["ranks"][0]["setup_s"],
                        "startup_s": r["ranks"][0]["startup_s"],
                        "points": r["ranks"][0]["curve"],
                    }
                    for r in results
                }
                with open(os.path.join(out_dir, f"ppo_e2e_{args.name}_curve.json"), "w") as f:
                    json.dump({"args": vars(args), "curves": curves}, f, indent=1)
    print_table(results, args)


if __name__ == "__main__":
    main()
