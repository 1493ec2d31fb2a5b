"""`check_vec_env(env)`: a conformance check for environments following UniLab's env contract.

Usable by third parties: any object with `num_envs`, `device`, `action_dim`,
`observation_shapes`, `max_episode_steps`, `step_dt`, `reset()` and `step(action)` returning
TensorDicts as documented in `unilab_envs.VecEnv` passes. Raises `EnvContractError` (an
`AssertionError`) naming the first violation: the key and the shape, dtype, device or values
that differ. Pass `make_env` (a zero-argument factory of a fresh env with the same seed)
to also check determinism: two envs driven by the same actions must give bitwise equal output.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import torch
from tensordict import TensorDict

from unilab_envs.features import EnvFeatures

__all__ = [
    "EnvContractError",
    "StepLaunches",
    "check_vec_env",
    "count_step_launches",
    "mjlab_robot",
    "mjlab_tests_required",
    "offscreen_gl_available",
    "offscreen_gl_backend",
    "render_tests_required",
]

_STEP_KEYS = ("reward", "terminated", "truncated", "done")


class EnvContractError(AssertionError):
    """An env output that breaks UniLab's env contract; the message names the key and what
    differs (shape, dtype, device or values). An `AssertionError`, so test runners report it as
    a failed check, but raised explicitly: it also fires under `python -O`."""


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise EnvContractError(message)


def _check_tensor(
    td: TensorDict, key: Any, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device
) -> torch.Tensor:
    """`td[key]`, which must exist with exactly this shape, dtype and device."""
    name = _name(key)
    _require(key in td.keys(include_nested=True), f"env output lacks {name!r}")
    x = td[key]
    got = (tuple(x.shape), x.dtype, x.device)
    if got != (shape, dtype, device):
        raise EnvContractError(
            f"{name}: got shape {got[0]} {got[1]} on {got[2]}, expected shape {shape} {dtype} "
            f"on {device}"
        )
    return x


def _name(key: Any) -> str:
    return "/".join(key) if isinstance(key, tuple) else str(key)


def _actions(env: Any, steps: int, seed: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [
        (torch.rand(env.num_envs, env.action_dim, generator=gen) * 2 - 1).to(env.device)
        for _ in range(steps)
    ]


def _check_obs(env: Any, td: TensorDict, key: str) -> None:
    _require(key in td.keys(), f"env output lacks {key!r}")  # noqa: SIM118
    for group, shape in env.observation_shapes.items():
        x = _check_tensor(td, (key, group), (env.num_envs, *shape), torch.float32, env.device)
        _require(bool(torch.isfinite(x).all()), f"{key}/{group}: non-finite values")


def _check_step(env: Any, td: TensorDict) -> None:
    n, dev = env.num_envs, env.device
    _require(tuple(td.batch_size) == (n,), f"batch_size {tuple(td.batch_size)}, expected ({n},)")
    _check_obs(env, td, "obs")
    _check_obs(env, td, "final_obs")
    reward = _check_tensor(td, "reward", (n,), torch.float32, dev)
    _require(bool(torch.isfinite(reward).all()), "reward: non-finite values")
    for key in ("terminated", "truncated", "done"):
        _check_tensor(td, key, (n,), torch.bool, dev)
    _require(
        torch.equal(td["done"], td["terminated"] | td["truncated"]),
        "done: differs from terminated | truncated",
    )
    for key in ("return", "length"):
        x = _check_tensor(td, ("episode", key), (n,), torch.float32, dev)
        _require(bool((x[~td["done"]] == 0).all()), f"episode/{key}: nonzero where not done")
    length = td["episode", "length"][td["done"]]
    _require(bool((length >= 1).all()), "episode/length: a finished episode shorter than 1 step")
    _require(
        bool((length <= env.max_episode_steps).all()),
        f"episode/length: longer than max_episode_steps={env.max_episode_steps}",
    )
    trunc_len = td["episode", "length"][td["truncated"]]
    _require(
        bool((trunc_len == env.max_episode_steps).all()),
        f"truncated: before the time limit (episode/length {trunc_len.tolist()[:4]})",
    )
    not_done = ~td["done"]
    for group in env.observation_shapes:
        _require(
            torch.equal(td["final_obs", group][not_done], td["obs", group][not_done]),
            f"final_obs/{group}: differs from obs/{group} where not done",
        )


def check_vec_env(
    env: Any,
    *,
    steps: int = 50,
    make_env: Callable[[], Any] | None = None,
    seed: int = 0,
) -> dict[str, int]:
    """Check `env` against the contract for `steps` random-action steps; return counts.

    Checks: attribute types; `reset()` output keys/shapes/dtypes/devices; every step's keys,
    shapes, dtypes, devices, finiteness, `done == terminated | truncated`, episode statistics
    zero where not done and within [1, max_episode_steps] where done, truncation only at the
    time limit, `final_obs == obs` where not done, the returned episode return equal to the sum
    of that world's rewards since its last reset; a wrong action shape raises ValueError; an
    env's `features`, where it reports them, are an `EnvFeatures`; when they say `state`, that
    a restored state continues bitwise like the original; and, with `make_env`, bitwise
    determinism of two fresh envs under the same actions.
    Returns {"steps", "episodes", "terminated", "truncated"} counts seen. Raises
    `EnvContractError` at the first violation, naming the key and what differs.
    """
    n = env.num_envs
    _require(isinstance(n, int) and n >= 1, f"num_envs: must be a positive int, got {n!r}")
    _require(
        isinstance(env.device, torch.device),
        f"device: must be a torch.device, got {type(env.device).__name__}",
    )
    _require(
        isinstance(env.action_dim, int) and env.action_dim >= 1,
        f"action_dim: must be an int >= 1, got {env.action_dim!r}",
    )
    _require(bool(env.observation_shapes), "observation_shapes: empty")
    _require(env.step_dt > 0, f"step_dt: must be > 0, got {env.step_dt!r}")
    features = _reported_features(env)
    td = env.reset()
    _check_obs(env, td, "obs")
    try:
        env.step(torch.zeros(n + 1, env.action_dim, device=env.device))
    except ValueError:
        pass
    else:
        raise EnvContractError(
            f"step: an action of shape ({n + 1}, {env.action_dim}) did not raise ValueError"
        )
    running = torch.zeros(n, dtype=torch.float64, device=env.device)
    counts = {"steps": 0, "episodes": 0, "terminated": 0, "truncated": 0}
    for action in _actions(env, steps, seed):
        out = env.step(action)
        _check_step(env, out)
        running += out["reward"].double()
        done = out["done"]
        if bool(done.any()):
            expected = running[done].float()
            got = out["episode", "return"][done]
            _require(
                torch.allclose(got, expected, rtol=1e-4, atol=1e-3),
                f"episode/return: {got.tolist()[:4]} differs from the summed rewards "
                f"{expected.tolist()[:4]}",
            )
            running[done] = 0
        counts["steps"] += 1
        counts["episodes"] += int(done.sum())
        counts["terminated"] += int(out["terminated"].sum())
        counts["truncated"] += int(out["truncated"].sum())
    if features is not None and features.state:
        _check_state_round_trip(env, steps=min(steps, 10), seed=seed)
    if make_env is not None:
        _check_determinism(make_env, steps=min(steps, 20), seed=seed)
    return counts


def _reported_features(env: Any) -> EnvFeatures | None:
    """The env's `features` (docs/envs.md, "Optional features"); None where it reports none."""
    features = getattr(env, "features", None)
    _require(
        features is None or isinstance(features, EnvFeatures),
        f"features: must be a unilab_envs.EnvFeatures, got {type(features).__name__}",
    )
    return features


def _check_state_round_trip(env: Any, *, steps: int, seed: int) -> None:
    state = env.state_dict()
    actions = _actions(env, steps, seed + 2)
    first = [env.step(a.clone()).clone() for a in actions]  # clones: outputs may be views
    env.load_state_dict(state)
    for t, action in enumerate(actions):
        again = env.step(action.clone())
        for key in first[t].keys(include_nested=True, leaves_only=True):
            _require(
                torch.equal(first[t][key], again[key]),
                f"{_name(key)}: differs at step {t} after load_state_dict(state_dict()) (not bitwise)",
            )


def _check_determinism(make_env: Callable[[], Any], *, steps: int, seed: int) -> None:
    envs = [make_env(), make_env()]
    outs = [[e.reset()] for e in envs]
    for action in _actions(envs[0], steps, seed + 1):
        for e, o in zip(envs, outs):
            o.append(e.step(action.clone()))
    for t, (a, b) in enumerate(zip(*outs)):
        for key in a.keys(include_nested=True, leaves_only=True):
            _require(
                torch.equal(a[key], b[key]),
                f"{_name(key)}: differs at step {t} between two envs under the same actions "
                "(not deterministic)",
            )


@functools.cache
def offscreen_gl_available(backend: str = "osmesa") -> bool:
    """Whether MuJoCo can render offscreen with `MUJOCO_GL=backend` on this machine.

    MuJoCo reads `MUJOCO_GL` once, at import, so the probe renders one tiny frame in a
    subprocess. `osmesa` is software OpenGL on the CPU (`apt-get install -y libosmesa6`);
    `egl` needs a GPU driver or Mesa's EGL.
    """
    probe = (
        "import mujoco; m = mujoco.MjModel.from_xml_string('<mujoco/>'); "
        "r = mujoco.Renderer(m, 8, 8); r.render(); r.close()"
    )
    env = {**os.environ, "MUJOCO_GL": backend}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", probe], env=env, capture_output=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


OFFSCREEN_GL_FIX = (
    "no offscreen OpenGL: install software rendering (`apt-get install -y libosmesa6`) or, "
    "with a GPU driver's EGL, set MUJOCO_GL=egl"
)
"""The skip reason of a rendering test on a machine where no offscreen backend works."""


def offscreen_gl_backend() -> str | None:
    """The `MUJOCO_GL` backend a rendering test uses here: `MUJOCO_GL` itself when it names an
    offscreen backend (egl, osmesa) that works, else osmesa, else egl, else None (none works).

    Under `UNILAB_REQUIRE_RENDER=1` it returns a backend even when none works ("osmesa", or the
    one `MUJOCO_GL` names), so that the test fails with the renderer's own error.
    """
    offscreen = ("osmesa", "egl")
    chosen = os.environ.get("MUJOCO_GL", "").lower()
    order = [chosen] if chosen in offscreen else list(offscreen)
    for backend in order:
        if offscreen_gl_available(backend):
            return backend
    return order[0] if render_tests_required() else None


def render_tests_required() -> bool:
    """True when `UNILAB_REQUIRE_RENDER=1`: rendering tests must run (CI sets it) rather than
    be skipped on a machine without offscreen OpenGL."""
    return os.environ.get("UNILAB_REQUIRE_RENDER") == "1"


def mjlab_tests_required() -> bool:
    """True when `UNILAB_REQUIRE_MJLAB=1`: tests that need MJLab's robot files (go1.xml,
    g1.xml, found by `unilab_envs.tasks.robots.find_mjcf`) must run rather than be skipped
    (CI and the nox sessions set it and install the mjlab wheel without its dependencies)."""
    return os.environ.get("UNILAB_REQUIRE_MJLAB") == "1"


def mjlab_robot(name: str) -> Any:
    """`unilab_envs.tasks.robots.go1()` or `g1()` (`name` "go1", "g1") for a pytest test.

    When no MJCF is found (no installed mjlab, no Menagerie) the test is skipped with the
    reason, or fails with `RobotFileNotFoundError` under `UNILAB_REQUIRE_MJLAB=1`.
    """
    import pytest

    from unilab_envs.tasks import robots

    try:
        return getattr(robots, name)()
    except robots.RobotFileNotFoundError as e:
        if mjlab_tests_required():
            raise
        pytest.skip(f"MJLab's {name} MJCF not found (`pip install --no-deps mjlab==1.6.0`): {e}")


@attrs.frozen(kw_only=True)
class StepLaunches:
    """What one control step launches on the device, as a CUDA graph of it would hold.

    Attributes:
        kernels: warp kernel launches (`wp.launch`, `wp.launch_tiled`) per kernel, named
            `<python module>:<kernel key>`.
        memory_ops: warp memsets and copies (`array.zero_`, `array.fill_`, `wp.copy`).
        loops: `wp.capture_while` loops (MuJoCo Warp's solver iterations); each loop body's
            launches are counted once, as a CUDA graph holds them in one conditional node.
        torch_ops: torch operators run around the graph (the action copy, the output copy).
    """

    kernels: collections.Counter
    memory_ops: int
    loops: int
    torch_ops: int

    @property
    def total_kernels(self) -> int:
        return sum(self.kernels.values())

    def kernels_of(self, package: str) -> int:
        """Kernel launches of kernels defined in `package` (e.g. "unilab_envs")."""
        return sum(c for k, c in self.kernels.items() if k.split(".")[0].split(":")[0] == package)


def count_step_launches(env: Any, action: torch.Tensor) -> StepLaunches:
    """Run `env.step(action)` eagerly (warp's CPU device, or CUDA without graph capture) and
    count the device work it issues (`StepLaunches`). The step runs for real: the env advances.

    A guard for what a CUDA graph of the step replays; the solver's iteration loop runs a
    data-dependent number of times eagerly, so only its first pass is counted.
    """
    import warp as wp
    from torch.utils._python_dispatch import TorchDispatchMode

    kernels: collections.Counter = collections.Counter()
    counts = {"memory_ops": 0, "loops": 0, "torch_ops": 0}
    state = {"counting": True, "depth": 0}

    def launch(orig):
        def wrapper(kernel, *args, **kwargs):
            if state["counting"] and state["depth"] == 0:
                kernels[kernel_name(kernel)] += 1
            state["depth"] += 1  # launch_tiled calls launch: count the outermost call
            try:
                return orig(kernel, *args, **kwargs)
            finally:
                state["depth"] -= 1

        return wrapper

    def memory_op(orig):
        def wrapper(*args, **kwargs):
            # zero_ of a strided array calls fill_ (which may launch): the outermost call
            if state["counting"] and state["depth"] == 0:
                counts["memory_ops"] += 1
            state["depth"] += 1
            try:
                return orig(*args, **kwargs)
            finally:
                state["depth"] -= 1

        return wrapper

    def capture_while(orig):
        def wrapper(condition, while_body, stream=None, **kwargs):
            if state["counting"]:
                counts["loops"] += 1
            passes = iter(range(1 << 62))

            def body(**kw):
                outer = state["counting"]
                state["counting"] = outer and next(passes) == 0
                try:
                    return while_body(**kw)
                finally:
                    state["counting"] = outer

            return orig(condition, body, stream=stream, **kwargs)

        return wrapper

    class TorchOps(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            counts["torch_ops"] += 1
            return func(*args, **(kwargs or {}))

    patches = [
        (wp, "launch", launch),
        (wp, "launch_tiled", launch),
        (wp, "capture_while", capture_while),
        (wp, "copy", memory_op),
        (wp.array, "zero_", memory_op),
        (wp.array, "fill_", memory_op),
    ]
    with contextlib.ExitStack() as stack:
        for owner, name, wrap in patches:
            stack.enter_context(_patched(owner, name, wrap(getattr(owner, name))))
        with TorchOps():
            env.step(action)
    return StepLaunches(kernels=kernels, **counts)


def kernel_name(kernel: Any) -> str:
    """`<python module>:<kernel key>` of a warp kernel."""
    func = getattr(kernel, "func", None)
    return f"{getattr(func, '__module__', '?')}:{getattr(kernel, 'key', repr(kernel))}"


@contextlib.contextmanager
def _patched(owner: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, old)
