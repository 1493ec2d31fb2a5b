"""`VecEnv`: N worlds of one task in one `mujoco_warp` model/data, TensorDict in and out.

Step output (TensorDict, batch_size [N], on `env.device`):
    ("obs", group)        float32 [N, D_group]  observation after the step (after auto-reset)
    "reward"              float32 [N]
    "terminated"          bool    [N]           terminal state (not a time limit)
    "truncated"           bool    [N]           time limit reached and not terminated
    "done"                bool    [N]           terminated | truncated; these worlds were reset
    ("final_obs", group)  float32 [N, D_group]  observation before the auto-reset (= obs where
                                                not done)
    ("episode", "return") float32 [N]           finished episode's undiscounted return (0 where
                                                not done)
    ("episode", "length") float32 [N]           its length in control steps (0 where not done)
    ("episode", term)     float32 [N]           episode sum of each task log term (0 where not done)
    ("log", term)         float32 [N]           per-step value of each task log term
`reset()` returns ("obs", group) only. Actions: float32 [N, A] in [-1, 1] (clamped).

The control step (task hooks, physics substeps, bookkeeping, resets) is a fixed sequence of
warp launches on persistent arrays, so on CUDA it is captured once into a CUDA graph and
replayed with `wp.capture_launch`; on CPU it runs eagerly on warp's CPU device.

Profiling: while a torch profiler records (`torch.profiler.profile`, or
`torch.autograd.profiler.emit_nvtx` under Nsight Systems), each `step` is a range
`unilab/env_step`; an eager step holds its two parts as ranges, `unilab/env_physics` (action,
`apply_action`, pushes, substeps) and `unilab/env_evaluate` (`post_physics`, rewards,
terminations, bookkeeping, resets, observations). A captured step replays one CUDA graph: one
range. Without a profiler no range is opened.

Streams (CUDA): the graph is captured on the env's own stream, but replayed on the caller's
current torch stream, in order with the torch work around `step()` (the action's producer, the
output copy, the trainer's next kernels) and without a cross-stream wait per step. Work that is
not a replay (reset, eager steps, restores) runs on the env's stream, fenced on both sides by
waits with the caller's stream.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Mapping
from typing import Any, Literal

import attrs
import mujoco_warp as mjw
import numpy as np
import torch
import warp as wp
from tensordict import TensorDict
from torch.profiler import record_function

from unilab_envs._core import kernels
from unilab_envs._core.compile_notice import CompileNotice
from unilab_envs._core.randomization import DomainRandomization, Randomizer
from unilab_envs._core.reset import needs_full_reset, reset_arrays, reset_state
from unilab_envs._core.task import Task, TaskContext
from unilab_envs.features import EnvFeatures

_OVERFLOW_NAMES = {
    int(f): f.name for f in mjw._src.types.OverflowType if f.name not in ("NONE", "ALL")
}
# The solver stopping at its iteration limit is not a capacity overflow: nothing was dropped,
# the step is only less converged. MJWarp would print one line per world from inside the
# captured step; UniLab turns that off and reports these worlds once, apart from capacity.
_SOLVER_LIMITS = int(mjw.OverflowType.ITERATIONS) | int(mjw.OverflowType.LS_ITERATIONS)


def check_broadphase(task: str, broadphase: str, mjm: Any, on_cuda: bool) -> None:
    """Refuse a sweep-and-prune broadphase for a model with heightfields on a CUDA device.

    With MuJoCo Warp 4.0.0 on CUDA both "sap_tile" and "sap_segmented" made the first
    `forward` of MJLab's rough Go1 grid fail with an illegal memory access, which leaves the
    CUDA context unusable (docs/benchmarks/rough-terrain.md); the same models run with them on
    warp's CPU device, and flat models train with them on CUDA."""
    if on_cuda and broadphase.startswith("sap") and mjm.nhfield > 0:
        raise ValueError(
            f"task {task!r}: broadphase {broadphase!r} with heightfield terrain "
            f"({mjm.nhfield} heightfields) fails on CUDA (MuJoCo Warp 4.0.0: an illegal memory "
            "access in the first forward, which ends the process's CUDA context; "
            "docs/envs.md). Leave broadphase unset (MuJoCo Warp's own choice) or give 'nxn'."
        )


@attrs.frozen(kw_only=True)
class EnvConfig:
    """Options of the env layer (not of the task).

    Attributes:
        num_envs: N, worlds in this process.
        device: "cpu", "cuda" or "cuda:k" (torch and warp use the same device).
        seed: determines every random draw of the env (initial states, randomization, pushes).
        randomization: "task" = the task's default, None = off, or a `DomainRandomization`.
        check_actions: validate that actions are finite. On CPU before each step; on CUDA a
            kernel inside the captured step flags non-finite actions and the flag is read at
            every periodic check (`overflow_check_interval` steps), so a NaN action raises
            within that many steps and costs no host sync per step (with
            overflow_check_interval=0, before each step: one host sync each). The shape, dtype
            and device checks are always done and cost no sync.
        cuda_graph: capture the control step into a CUDA graph (CUDA only).
        copy_outputs: clone output tensors (True) or return views of the env's buffers that
            the next step overwrites (False; faster, for callers that copy anyway).
        on_overflow: what `check_overflow` does when a world overflowed MJWarp's contact or
            constraint capacity: "raise" (RuntimeError), "warn" (RuntimeWarning) or "ignore".
        overflow_check_interval: control steps between automatic `check_overflow` calls (one
            host sync each); 0 disables the automatic check.
    """

    num_envs: int = attrs.field(validator=attrs.validators.ge(1))
    device: str = "cpu"
    seed: int = attrs.field(default=0, validator=attrs.validators.instance_of(int))
    randomization: DomainRandomization | Literal["task"] | None = "task"
    check_actions: bool = True
    cuda_graph: bool = True
    copy_outputs: bool = True
    on_overflow: Literal["raise", "warn", "ignore"] = attrs.field(
        default="warn", validator=attrs.validators.in_(("raise", "warn", "ignore"))
    )
    overflow_check_interval: int = attrs.field(default=100, validator=attrs.validators.ge(0))


def _profiler_range(name: str) -> contextlib.AbstractContextManager:
    """A torch profiler range `name` while a profiler records, else a no-op: an unobserved
    `record_function` still costs a few microseconds of host time per call."""
    if torch.autograd._profiler_enabled():
        return record_function(name)
    return contextlib.nullcontext()


def _normalize_device(device: str | torch.device) -> torch.device:
    dev = torch.device(device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} requested but CUDA is not available")
        return torch.device("cuda", torch.cuda.current_device() if dev.index is None else dev.index)
    if dev.type != "cpu":
        raise ValueError(f"device must be 'cpu' or 'cuda[:k]', got {device!r}")
    return dev


class VecEnv:
    """A vectorized MuJoCo Warp environment running `task` in `cfg.num_envs` worlds.

    Attributes: `num_envs`, `device` (torch.device), `action_dim`, `observation_shapes`
    ({group: (D,)}), `max_episode_steps`, `step_dt` (s), `success_threshold`, `task`,
    `curriculum` (or None), `ctx` (the `TaskContext` with the warp model/data), `features`
    (the optional features it offers, an `EnvFeatures`).
    """

    def __init__(self, task: Task, cfg: EnvConfig) -> None:
        self.task, self.cfg = task, cfg
        spec = task.spec
        self.device = _normalize_device(cfg.device)
        self.num_envs = cfg.num_envs
        self.action_dim = spec.action_dim
        self.observation_shapes = {g: (d,) for g, d in spec.observation_dims.items()}
        self.max_episode_steps = spec.max_episode_steps
        self.step_dt = spec.step_dt
        self.success_threshold = spec.success_threshold
        self.curriculum = task.curriculum()
        dr = task.domain_randomization() if cfg.randomization == "task" else cfg.randomization
        self.randomization: DomainRandomization | None = dr
        wp.init()
        self._wp_device = wp.get_device(str(self.device))
        self._stream: torch.cuda.Stream | None = None
        self._wp_stream = None
        if self.device.type == "cuda":
            self._stream = torch.cuda.Stream(self.device)
            self._wp_stream = wp.stream_from_torch(self._stream)
        # Construction, the first reset and the first step launch the env's kernels for the
        # first time: where warp compiles them (a cold cache), one log line says so, and when.
        self._compile_notice = CompileNotice(spec.name)
        with self._scope(), self._compile_notice.phase():
            self._build(spec, dr)
        self._graph = None
        self._caller_streams: dict[int, wp.Stream] = {}
        self._eager_steps = 0
        self._steps = 0
        self._level_cache: float | None = None
        self._has_reset = False

    # ------------------------------------------------------------------ construction
    def _scope(self):
        if self._wp_stream is not None:
            return wp.ScopedStream(self._wp_stream)
        return wp.ScopedDevice(self._wp_device)

    def _build(self, spec, dr: DomainRandomization | None) -> None:
        n, dev = self.num_envs, self._wp_device
        mjm = self.task.build_model()
        if mjm.nu < 1:
            raise ValueError(f"task {spec.name!r}: the model has no actuators")
        mjm.opt.timestep = spec.physics_dt
        self.mjm = mjm
        self._full_reset = needs_full_reset(mjm)
        batch_sizes = dr.batch_sizes(n) if dr is not None else {}
        batch_sizes.update({name: n for name in spec.model_batch_fields})
        model = mjw.put_model(mjm, batch_sizes=batch_sizes)
        model.opt.warn_overflow = int(model.opt.warn_overflow) & ~_SOLVER_LIMITS
        if spec.broadphase is not None:
            check_broadphase(spec.name, spec.broadphase, mjm, dev.is_cuda)
            model.opt.broadphase = mjw.BroadphaseType[spec.broadphase.upper()]
        data = mjw.make_data(
            mjm, nworld=n, nconmax=spec.capacity.nconmax, njmax=spec.capacity.njmax
        )
        a = spec.action_dim
        self.ctx = TaskContext(
            mjm=mjm,
            model=model,
            data=data,
            num_envs=n,
            device=dev,
            seed=int(self.cfg.seed) & 0x7FFFFFFF,
            rng_counter=wp.zeros(1, dtype=wp.int32, device=dev),
            episode_length=wp.zeros(n, dtype=wp.int32, device=dev),
            action=wp.zeros((n, a), dtype=float, device=dev),
            last_action=wp.zeros((n, a), dtype=float, device=dev),
            curriculum_level=wp.zeros(1, dtype=float, device=dev),
            time_out=wp.zeros(n, dtype=wp.bool, device=dev),
            spec=spec,
        )
        nlog = len(spec.log_terms)
        # Every step output lives in one flat device byte buffer, carved into contiguous
        # per-output segments, so that handing the trainer a copy costs one device copy, not
        # one per output (about 20).
        self._out = _OutputBuffers(spec, n, self.device)
        self._obs = {g: self._out.warp("obs", g) for g in spec.observation_dims}
        self._final_obs = {g: self._out.warp("final_obs", g) for g in spec.observation_dims}
        self._reward = self._out.warp("reward")
        self._terminated = self._out.warp("terminated")
        self._truncated = self._out.warp("truncated")
        self._done = self._out.warp("done")
        self._log = self._out.warp("log")
        self._out_return = self._out.warp("episode", "return")
        self._out_length = self._out.warp("episode", "length")
        self._out_log = self._out.warp("episode", "terms")
        self._all = wp.array(np.ones(n, dtype=bool), dtype=wp.bool, device=dev)
        self._episode_return = wp.zeros(n, dtype=float, device=dev)
        self._episode_log = wp.zeros((nlog, n), dtype=float, device=dev)
        self._overflow_seen = wp.zeros(n, dtype=int, device=dev)
        self._solver_limit_reported = False
        # The caller's action lands here (one device copy); a kernel inside the captured step
        # clamps it into ctx.action and records the first world with a non-finite value.
        self._raw_action = wp.zeros((n, a), dtype=float, device=dev)
        self._bad_action_world = wp.array([n], dtype=wp.int32, device=dev)
        self._defer_action_check = (
            self.device.type == "cuda" and self.cfg.overflow_check_interval > 0
        )
        self._last_action_check = 0
        self.randomizer = (
            Randomizer(dr, mjm, model, data, n, spec.step_dt, dev) if dr is not None else None
        )
        self._reset_arrays = reset_arrays(model, data)
        bound = spec.action_bound
        self._action_bound = float("inf") if bound is None else float(bound)
        # the hook runs after every physics substep only for tasks that define it
        self._post_substep = type(self.task).post_substep is not Task.post_substep
        self.task.bind(self.ctx)
        self._raw_action_t = wp.to_torch(self._raw_action)
        self._level_t = wp.to_torch(self.ctx.curriculum_level)
        self._views = self._out.views(self._out.buffer)

    # ------------------------------------------------------------------ device sequences
    def _reset_masked(self, mask: wp.array, state_reset: bool = False) -> None:
        """Reset the worlds in `mask` and observe every world. `state_reset`: the MJWarp state
        of those worlds was already reset (by the bookkeeping kernel)."""
        ctx = self.ctx
        if not state_reset:
            reset_state(ctx.model, ctx.data, mask, self._full_reset, self._reset_arrays)
        if self.randomizer is None and not self.task.spec.forward_after_reset:
            self.task.reset_and_observe(ctx, mask, self._obs)
            return
        self.task.reset_worlds(ctx, mask)
        if self.randomizer is not None:
            self.randomizer.on_reset(ctx.seed, ctx.rng_counter, mask)
        if self.task.spec.forward_after_reset:
            mjw.forward(ctx.model, ctx.data)
        self.task.observe(ctx, self._obs)

    def _control_step(self) -> None:
        with _profiler_range("unilab/env_physics"):
            self._physics_part()
        with _profiler_range("unilab/env_evaluate"):
            self._evaluate_part()

    def _physics_part(self) -> None:
        """The control step's first part: action, task action hook, pushes, physics substeps."""
        ctx, dev, spec, n = self.ctx, self._wp_device, self.task.spec, self.num_envs
        wp.launch(
            kernels.begin_step,
            dim=(n, spec.action_dim),
            inputs=[self._raw_action, self._action_bound, ctx.rng_counter, ctx.episode_length],
            outputs=[ctx.action, self._bad_action_world],
            device=dev,
        )
        self.task.apply_action(ctx)
        if self.randomizer is not None:
            self.randomizer.push(ctx.seed, ctx.rng_counter, self._all)
        for _ in range(spec.decimation):
            mjw.step(ctx.model, ctx.data)
            if self._post_substep:
                self.task.post_substep(ctx)

    def _evaluate_part(self) -> None:
        """The control step's second part: the task's post-physics hook, rewards, terminations,
        final observations, bookkeeping, resets and observations."""
        ctx, dev, spec, n = self.ctx, self._wp_device, self.task.spec, self.num_envs
        self.task.post_physics(ctx)
        # The final observation is written before the bookkeeping, which zeroes the episode
        # length and the action history of the worlds that are done: it sees them as they were.
        self.task.evaluate_and_observe(
            ctx, self._reward, self._terminated, self._log, self._final_obs
        )
        wp.launch(
            kernels.episode_bookkeeping,
            dim=n,
            inputs=[
                self._reward,
                self._terminated,
                ctx.time_out,
                self._log,
                len(spec.log_terms),
                spec.max_episode_steps,
                ctx.episode_length,
                self._episode_return,
                self._episode_log,
                ctx.action,
                spec.action_dim,
                ctx.data.overflow,
            ],
            outputs=[
                self._overflow_seen,
                self._truncated,
                self._done,
                self._out_return,
                self._out_length,
                self._out_log,
                ctx.last_action,
                int(not self._full_reset),
                self._reset_arrays,
            ],
            device=dev,
        )
        self._reset_masked(self._done, state_reset=not self._full_reset)
        if spec.forward_after_reset:
            # final_obs was observed before the forward; where no reset happened the
            # observation after it is the state's final one (final_obs == obs there).
            for g, d in spec.observation_dims.items():
                wp.launch(
                    kernels.copy_where_not_done,
                    dim=(n, d),
                    inputs=[self._done, self._obs[g]],
                    outputs=[self._final_obs[g]],
                    device=dev,
                )

    # ------------------------------------------------------------------ public API
    def reset(self) -> TensorDict:
        """Reset every world (randomized initial states); return {("obs", group): [N, D]}."""
        ctx = self.ctx
        with self._compile_notice.phase(), self._stream_ctx(), self._scope():
            self._sync_curriculum()
            mjw.reset_data(ctx.model, ctx.data)  # once per reset(): every field, not only state
            wp.launch(
                kernels.reset_all_bookkeeping,
                dim=self.num_envs,
                inputs=[
                    ctx.rng_counter,
                    len(self.task.spec.log_terms),
                    ctx.episode_length,
                    self._episode_return,
                    self._episode_log,
                    ctx.last_action,
                    self.action_dim,
                ],
                device=self._wp_device,
            )
            self._reset_masked(self._all)
        self._has_reset = True
        self._wait_for_env()
        return self.get_observations() if self.cfg.copy_outputs else self._outputs(("obs",))

    def randomize_episode_lengths(self) -> None:
        """Move each world to a random step of its current episode, uniform in [0,
        `max_episode_steps`): the worlds' time limits then fall on different steps instead of
        all on one (RSL-RL's `init_at_random_ep_len`, which MJLab's train script sets; the
        runner calls this at the start of a run with `runner.random_episode_start`).

        Only the step counters change (not the state or the observations); each world's first
        episode then ends at its time limit sooner, and the length it reports counts from the
        drawn step. Drawn per world from the env's seed. Call it after `reset()`."""
        if not self._has_reset:
            raise RuntimeError("call env.reset() before env.randomize_episode_lengths()")
        ctx = self.ctx
        with self._stream_ctx(), self._scope():
            wp.launch(
                kernels.draw_episode_lengths,
                dim=self.num_envs,
                inputs=[ctx.seed, ctx.rng_counter, self.max_episode_steps, ctx.episode_length],
                device=self._wp_device,
            )
        self._wait_for_env()

    def step(self, action: torch.Tensor) -> TensorDict:
        """Advance every world by one control step; see the module docstring for the output
        (and for the profiler ranges it opens)."""
        with _profiler_range("unilab/env_step"):
            if self._compile_notice.finished:
                return self._step(action)
            with self._compile_notice.phase():
                out = self._step(action)
            self._compile_notice.finish()
            return out

    def _step(self, action: torch.Tensor) -> TensorDict:
        self._check_action(action)
        if not self._has_reset:
            raise RuntimeError("call env.reset() before env.step()")
        if self._graph is not None:
            # The replay goes on the caller's stream: ordered after the action's producer and
            # before the output copy below, with no wait between two streams.
            self._stage_action(action)
            wp.capture_launch(self._graph, stream=self._caller_stream())
        else:
            with self._stream_ctx():
                self._stage_action(action)
                with self._scope():
                    self._control_step()
                    self._eager_steps += 1
                    if self._want_graph():
                        with wp.ScopedCapture(
                            device=self._wp_device, stream=self._wp_stream
                        ) as cap:
                            self._control_step()
                        self._graph = cap.graph
            self._wait_for_env()
        self._after_step()
        return self._outputs()

    def get_observations(self) -> TensorDict:
        """The current observations {("obs", group): [N, D]} (a copy)."""
        obs = self._out.copy_obs()
        return TensorDict({"obs": obs}, batch_size=[self.num_envs], device=self.device)

    @property
    def episode_length(self) -> torch.Tensor:
        """int32 [N] view: control steps taken in each world's current episode."""
        return wp.to_torch(self.ctx.episode_length)

    @property
    def features(self) -> EnvFeatures:
        """What this env offers beyond the step contract (docs/envs.md, "Optional features"):
        its curriculum and that curriculum's mode, `state_dict` / `load_state_dict`,
        `randomize_episode_lengths`, whether its step runs as a CUDA graph,
        the task's success threshold and action bound."""
        captured = self.device.type == "cuda" and self.cfg.cuda_graph
        if self.device.type != "cuda":
            reason = f"CUDA graphs need a CUDA device, got {self.device}"
        else:
            reason = None if captured else "cuda_graph=False in the env's EnvConfig"
        spec = self.task.spec
        return EnvFeatures.of_curriculum(
            self.curriculum,
            state=True,
            random_episode_start=True,
            cuda_graph=captured,
            eager_reason=reason,
            success_threshold=spec.success_threshold,
            action_bound=spec.action_bound,
        )

    @property
    def uses_cuda_graph(self) -> bool:
        """Whether steps replay the captured CUDA graph of the control step."""
        return self._graph is not None

    def check_overflow(self) -> int:
        """Report worlds that overflowed MJWarp capacity since the last check; return their count.

        Reads the accumulated per-world overflow bitmask (one host sync), clears it, and acts
        per `cfg.on_overflow`. Raise the task's `Capacity` (nconmax / njmax) to fix it.
        """
        seen = wp.to_torch(self._overflow_seen)
        self._synchronize()
        bits = seen.cpu().numpy().copy()  # .cpu() is a no-op on CPU: copy before zeroing
        seen.zero_()
        limited = np.flatnonzero(bits & _SOLVER_LIMITS)
        if limited.size and not self._solver_limit_reported:
            self._solver_limit_reported = True
            opt = self.mjm.opt
            warnings.warn(
                f"{limited.size} of {self.num_envs} worlds of task {self.task.spec.name!r} hit "
                f"the constraint solver's iteration limit (opt.iterations={opt.iterations}, "
                f"opt.ls_iterations={opt.ls_iterations}; first worlds {limited[:5].tolist()}): "
                "their steps ended short of the solver's tolerance. Tasks that keep the solver's "
                "budget small for speed hit it routinely (MJLab's do); a task that needs tighter "
                "contacts raises the limits in its model. Reported once.",
                RuntimeWarning,
                stacklevel=2,
            )
        bad = np.flatnonzero(bits & ~_SOLVER_LIMITS)
        if bad.size == 0:
            return 0
        union = int(np.bitwise_or.reduce(bits[bad] & ~_SOLVER_LIMITS))
        kinds = [name for bit, name in _OVERFLOW_NAMES.items() if union & bit]
        cap = self.task.spec.capacity
        msg = (
            f"{bad.size} of {self.num_envs} worlds overflowed MJWarp capacity ({', '.join(kinds)}) "
            f"in task {self.task.spec.name!r} (nconmax={cap.nconmax}, njmax={cap.njmax}; "
            f"first worlds {bad[:5].tolist()}): contacts or constraints were dropped; raise the "
            "task's Capacity"
        )
        if self.cfg.on_overflow == "raise":
            raise RuntimeError(msg)
        if self.cfg.on_overflow == "warn":
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
        return int(bad.size)

    def state_dict(self) -> dict[str, Any]:
        """Everything that determines the env's future, copied to the host (torch tensors).

        Holds every warp array of the MJWarp data (state, ctrl, warm start, time, ...), the
        per-world randomized model fields, the task context (RNG counter, episode lengths,
        actions), the env's bookkeeping and output buffers, the task's and the randomizer's
        arrays, the curriculum and the step counter. Quantities that every step recomputes
        from the state (contacts, constraint rows) are not saved. Restoring it into an env made
        with the same task and config (`load_state_dict`) continues bit for bit.
        """
        if not self._has_reset:
            raise RuntimeError("call env.reset() before env.state_dict()")
        self._synchronize()
        arrays = {
            k: wp.to_torch(a).detach().to("cpu", copy=True) for k, a in self._state_arrays().items()
        }
        return {
            "task": self.task.spec.name,
            "num_envs": self.num_envs,
            "arrays": arrays,
            "steps": self._steps,
            "curriculum": self.curriculum.state_dict() if self.curriculum is not None else None,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a `state_dict()` of an env of the same task, env count and config.

        ValueError naming the difference when it does not fit. The arrays are written in place,
        so a captured CUDA graph stays valid.
        """
        for key in ("task", "num_envs", "arrays", "steps", "curriculum"):
            if key not in state:
                raise ValueError(f"env state lacks '{key}' (not a VecEnv.state_dict())")
        if state["task"] != self.task.spec.name or state["num_envs"] != self.num_envs:
            raise ValueError(
                f"env state of task {state['task']!r} with {state['num_envs']} envs does not fit "
                f"this env (task {self.task.spec.name!r}, {self.num_envs} envs)"
            )
        arrays = self._state_arrays()
        saved = state["arrays"]
        if set(saved) != set(arrays):
            diff = sorted(set(saved) ^ set(arrays))[:5]
            raise ValueError(f"env state arrays differ from this env's (e.g. {diff})")
        for key, array in arrays.items():
            target = wp.to_torch(array)
            if tuple(saved[key].shape) != tuple(target.shape) or saved[key].dtype != target.dtype:
                raise ValueError(
                    f"env state {key}: {tuple(saved[key].shape)} {saved[key].dtype}, this env "
                    f"{tuple(target.shape)} {target.dtype} (another config?)"
                )
        if (state["curriculum"] is None) != (self.curriculum is None):
            raise ValueError("env state and this env disagree on having a curriculum")
        with self._stream_ctx():
            for key, array in arrays.items():
                wp.to_torch(array).copy_(saved[key])
        self._wait_for_env()
        if self.curriculum is not None:
            self.curriculum.load_state_dict(state["curriculum"])
        self._level_cache = None
        self._steps = int(state["steps"])
        self._last_action_check = self._steps
        self._has_reset = True

    def _state_arrays(self) -> dict[str, wp.array]:
        """The warp arrays that `state_dict` saves, by a stable name."""
        out: dict[str, wp.array] = {}
        batched = self.randomization.batch_sizes(self.num_envs) if self.randomization else {}
        batched = {**batched, **dict.fromkeys(self.task.spec.model_batch_fields, 1)}
        for name in sorted(batched):
            out[f"model.{name}"] = getattr(self.ctx.model, name)
        # The output buffer whole (the per-output warp views alias it).
        out["env.outputs"] = wp.from_torch(self._out.buffer, dtype=wp.uint8)
        owners = {"data": self.ctx.data, "env": self, "task": self.task}
        if self.randomizer is not None:
            owners["randomizer"] = self.randomizer
        for prefix, owner in owners.items():
            for name, value in sorted(vars(owner).items()):
                if not isinstance(value, wp.array) or value.size == 0:
                    continue
                if id(value) not in self._out.warp_views:
                    out[f"{prefix}.{name}"] = value
        for name, value in sorted(self.task.state_arrays().items()):
            out[f"task.{name}"] = value
        for field in attrs.fields(type(self.ctx)):
            value = getattr(self.ctx, field.name)
            if isinstance(value, wp.array) and value.size > 0:
                out[f"ctx.{field.name}"] = value
        return out

    def memory_bytes(self) -> dict[str, int]:
        """Device bytes held: {"model", "data", "env", "total", "per_env"} (model shared)."""
        model = _warp_bytes(self.ctx.model)
        data = _warp_bytes(self.ctx.data)
        own = [self._all, self._episode_return, self._episode_log, self._overflow_seen]
        own += [self._raw_action, self._bad_action_world]
        own += [self.ctx.action, self.ctx.last_action, self.ctx.episode_length]
        env = sum(a.capacity for a in own) + self._out.nbytes() + _warp_bytes(self.task)
        if self.randomizer is not None:
            env += _warp_bytes(self.randomizer)
        total = model + data + env
        return {
            "model": model,
            "data": data,
            "env": env,
            "total": total,
            "per_env": total // self.num_envs,
        }

    # ------------------------------------------------------------------ helpers
    def _want_graph(self) -> bool:
        return self.device.type == "cuda" and self.cfg.cuda_graph and self._eager_steps >= 1

    def _stream_ctx(self):
        if self._stream is None:
            return _null()
        self._stream.wait_stream(torch.cuda.current_stream(self.device))
        return torch.cuda.stream(self._stream)

    def _wait_for_env(self) -> None:
        if self._stream is not None:
            torch.cuda.current_stream(self.device).wait_stream(self._stream)

    def _caller_stream(self) -> wp.Stream:
        """The caller's current torch stream as a warp stream (cached per stream handle)."""
        current = torch.cuda.current_stream(self.device)
        stream = self._caller_streams.get(current.cuda_stream)
        if stream is None:
            stream = wp.stream_from_torch(current)
            self._caller_streams[current.cuda_stream] = stream
        return stream

    def _synchronize(self) -> None:
        """Wait on the host for the env's work: its own stream and the caller's (replays)."""
        if self._stream is not None:
            self._stream.synchronize()
            torch.cuda.current_stream(self.device).synchronize()

    def _stage_action(self, action: torch.Tensor) -> None:
        """The step's inputs, as torch ops on the current stream: the action into the env's
        buffer (one device copy) and the curriculum level, if it changed."""
        self._raw_action_t.copy_(action.detach())
        self._sync_curriculum()

    def _sync_curriculum(self) -> None:
        if self.curriculum is None:
            return
        level = float(self.curriculum.level)
        if level != self._level_cache:
            self._level_cache = level
            # A torch op: on the current torch stream, the one the step runs on next.
            self._level_t.fill_(level)

    def _after_step(self) -> None:
        """Step counting and the periodic host-side checks (one host sync each)."""
        self._steps += 1
        interval = self.cfg.overflow_check_interval
        if interval and self._steps % interval == 0:
            self._check_deferred_actions()
            self.check_overflow()

    def _outputs(self, keys: tuple[str, ...] | None = None) -> TensorDict:
        """The step's outputs as a TensorDict: a copy (one device copy) or live views."""
        if self.cfg.copy_outputs:
            views = self._out.views(self._out.buffer.clone())
        else:
            views = self._views
        if keys is not None:
            views = {k: views[k] for k in keys}
        return TensorDict(views, batch_size=[self.num_envs], device=self.device)

    def _check_deferred_actions(self) -> None:
        """On CUDA: raise if a non-finite action was stepped since the last check."""
        if not (self.cfg.check_actions and self._defer_action_check):
            return
        self._synchronize()
        first = int(self._bad_action_world.numpy()[0])
        since, self._last_action_check = self._last_action_check, self._steps
        if first < self.num_envs:
            # On the caller's stream, ordered before the next step (replayed there, or run
            # on the env's stream after a wait on this one).
            wp.to_torch(self._bad_action_world).fill_(self.num_envs)
            raise ValueError(
                f"a non-finite action (NaN or inf) was passed to env.step in steps {since + 1}-"
                f"{self._steps} (first world {first}); on CUDA actions are checked every "
                f"overflow_check_interval={self.cfg.overflow_check_interval} steps without a "
                "host sync per step"
            )

    def _check_action(self, action: torch.Tensor) -> None:
        if not isinstance(action, torch.Tensor):
            raise TypeError(f"action must be a torch.Tensor, got {type(action).__name__}")
        if action.shape != (self.num_envs, self.action_dim):
            raise ValueError(
                f"action shape {tuple(action.shape)} != (num_envs, action_dim) = "
                f"({self.num_envs}, {self.action_dim})"
            )
        if not action.is_floating_point():
            raise TypeError(f"action dtype must be floating point, got {action.dtype}")
        if action.device != self.device:
            raise ValueError(f"action is on {action.device}, the env on {self.device}")
        if self.cfg.check_actions and not self._defer_action_check:
            if bool(torch.isfinite(action).all()):
                return
            bad = (~torch.isfinite(action)).any(dim=1).nonzero().flatten()[:5].tolist()
            raise ValueError(f"action contains NaN or inf (first worlds {bad})")


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _OutputBuffers:
    """The step outputs, carved as contiguous segments out of one flat device byte buffer.

    `buffer` (uint8) holds, in order, the float32 segments obs/<group> [N, D],
    final_obs/<group> [N, D], reward [N], episode/return [N], episode/length [N],
    episode/terms [nlog, N], log [nlog, N], then the bool segments terminated, truncated,
    done [N] each. The warp kernels write into warp views of the segments; `views(buffer)` lays
    the same segments over any buffer of the same size (the live one, or a copy), so handing
    the trainer a copy of every output is one device copy.
    """

    def __init__(self, spec, n: int, device: torch.device) -> None:
        nlog = len(spec.log_terms)
        self.log_terms = tuple(spec.log_terms)
        self.groups = tuple(spec.observation_dims)
        floats: list[tuple[tuple[str, ...], tuple[int, ...]]] = []
        for top in ("obs", "final_obs"):
            floats += [((top, g), (n, d)) for g, d in spec.observation_dims.items()]
        floats += [(("reward",), (n,)), (("episode", "return"), (n,))]
        floats += [(("episode", "length"), (n,)), (("episode", "terms"), (nlog, n))]
        floats += [(("log",), (nlog, n))]
        bools = [((k,), (n,)) for k in ("terminated", "truncated", "done")]
        self._floats, self._bools = floats, bools
        self._float_sizes = [int(np.prod(shape)) for _, shape in floats]
        self._bool_sizes = [int(np.prod(shape)) for _, shape in bools]
        # The float segments come first, so every one starts 4-byte aligned.
        self._float_bytes = 4 * sum(self._float_sizes)
        self._bool_bytes = sum(self._bool_sizes)
        self._obs_sizes = [
            size for (key, _), size in zip(floats, self._float_sizes) if key[0] == "obs"
        ]
        self.obs_end = 4 * sum(self._obs_sizes)
        self.buffer = torch.zeros(
            max(4, self._float_bytes + self._bool_bytes), dtype=torch.uint8, device=device
        )
        self._live = self._carve(self.buffer)
        self.warp_views: set[int] = set()  # ids of the views handed out (state_dict skips them)

    def _carve(self, flat: torch.Tensor) -> dict:
        # Two splits and a reshape per 2-D segment: env.step carves every copy it hands out,
        # so this runs once per control step (one slice + two views per segment cost ~3x more
        # host time).
        fb = self._float_bytes
        out = {}
        segments = flat[:fb].view(torch.float32).split(self._float_sizes)
        for (key, shape), seg in zip(self._floats, segments, strict=True):
            out[key] = seg.view(shape) if len(shape) > 1 else seg
        segments = flat[fb : fb + self._bool_bytes].view(torch.bool).split(self._bool_sizes)
        for (key, _), seg in zip(self._bools, segments, strict=True):
            out[key] = seg
        return out

    def warp(self, *key: str) -> wp.array:
        """A warp view (no copy) of one segment of the live buffer."""
        tensor = self._live[key]
        view = wp.from_torch(tensor, dtype=wp.bool if tensor.dtype == torch.bool else wp.float32)
        self.warp_views.add(id(view))
        return view

    def views(self, buffer: torch.Tensor) -> dict:
        """The nested output dict of `env.step` over `buffer` (the live one or a copy)."""
        seg = self._carve(buffer)
        out: dict = {
            "obs": {g: seg["obs", g] for g in self.groups},
            "final_obs": {g: seg["final_obs", g] for g in self.groups},
            "reward": seg["reward",],
            "terminated": seg["terminated",],
            "truncated": seg["truncated",],
            "done": seg["done",],
            "episode": {"return": seg["episode", "return"], "length": seg["episode", "length"]},
            "log": {},
        }
        if self.log_terms:
            terms, log = seg["episode", "terms"].unbind(0), seg["log",].unbind(0)
            for i, name in enumerate(self.log_terms):
                out["episode"][name] = terms[i]
                out["log"][name] = log[i]
        return out

    def copy_obs(self) -> dict[str, torch.Tensor]:
        """One copy of every observation group (the groups are adjacent at the front)."""
        flat = self.buffer[: self.obs_end].clone().view(torch.float32).split(self._obs_sizes)
        keys = [(key, shape) for key, shape in self._floats if key[0] == "obs"]
        return {key[1]: seg.view(shape) for (key, shape), seg in zip(keys, flat, strict=True)}

    def nbytes(self) -> int:
        return self.buffer.numel()


def _warp_bytes(obj) -> int:
    seen: set[int] = set()
    total = 0
    for value in vars(obj).values():
        if isinstance(value, wp.array) and id(value) not in seen:
            seen.add(id(value))
            total += value.capacity
    return total


__all__ = ["EnvConfig", "VecEnv"]
