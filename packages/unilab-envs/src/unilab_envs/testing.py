"""`check_vec_env(env)`: a conformance check for environments following UniLab's env contract.

Usable by third parties: any object with `num_envs`, `device`, `action_dim`,
`observation_shapes`, `max_episode_steps`, `step_dt`, `reset()` and `step(action)` returning
TensorDicts as documented in `unilab_envs.VecEnv` passes. Raises AssertionError naming the
first violation. Pass `make_env` (a zero-argument factory of a fresh env with the same seed)
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

__all__ = [
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


def _actions(env: Any, steps: int, seed: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [
        (torch.rand(env.num_envs, env.action_dim, generator=gen) * 2 - 1).to(env.device)
        for _ in range(steps)
    ]


def _check_obs(env: Any, td: TensorDict, key: str) -> None:
    assert key in td.keys(include_nested=True), f"missing {key!r} in env output"
    for group, shape in env.observation_shapes.items():
        x = td[key, group]
        assert x.shape == (env.num_envs, *shape), f"{key}/{group}: shape {tuple(x.shape)}"
        assert x.dtype == torch.float32, f"{key}/{group}: dtype {x.dtype}"
        assert x.device == env.device, f"{key}/{group}: device {x.device} != {env.device}"
        assert bool(torch.isfinite(x).all()), f"{key}/{group}: non-finite values"


def _check_step(env: Any, td: TensorDict) -> None:
    n = env.num_envs
    assert tuple(td.batch_size) == (n,), f"batch_size {tuple(td.batch_size)} != ({n},)"
    _check_obs(env, td, "obs")
    _check_obs(env, td, "final_obs")
    assert td["reward"].shape == (n,) and td["reward"].dtype == torch.float32, "reward: float32 [N]"
    assert bool(torch.isfinite(td["reward"]).all()), "reward: non-finite values"
    for key in ("terminated", "truncated", "done"):
        assert td[key].shape == (n,) and td[key].dtype == torch.bool, f"{key}: bool [N]"
        assert td[key].device == env.device, f"{key}: device"
    assert torch.equal(td["done"], td["terminated"] | td["truncated"]), (
        "done != terminated | truncated"
    )
    for key in ("return", "length"):
        x = td["episode", key]
        assert x.shape == (n,) and x.dtype == torch.float32, f"episode/{key}: float32 [N]"
        assert bool((x[~td["done"]] == 0).all()), f"episode/{key} nonzero where not done"
    length = td["episode", "length"][td["done"]]
    assert bool((length >= 1).all()), "finished episode with length < 1"
    assert bool((length <= env.max_episode_steps).all()), "episode longer than max_episode_steps"
    trunc_len = td["episode", "length"][td["truncated"]]
    assert bool((trunc_len == env.max_episode_steps).all()), "truncated before the time limit"
    not_done = ~td["done"]
    for group in env.observation_shapes:
        assert torch.equal(td["final_obs", group][not_done], td["obs", group][not_done]), (
            f"final_obs/{group} differs from obs where not done"
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
    of that world's rewards since its last reset; a wrong action shape raises ValueError; when
    the env has `state_dict` / `load_state_dict`, that a restored state continues bitwise like
    the original; and, with `make_env`, bitwise determinism of two fresh envs under the same
    actions.
    Returns {"steps", "episodes", "terminated", "truncated"} counts seen.
    """
    n = env.num_envs
    assert isinstance(n, int) and n >= 1, "num_envs must be a positive int"
    assert isinstance(env.device, torch.device), "device must be a torch.device"
    assert isinstance(env.action_dim, int) and env.action_dim >= 1, "action_dim must be int >= 1"
    assert env.observation_shapes, "observation_shapes is empty"
    assert env.step_dt > 0, "step_dt must be > 0"
    td = env.reset()
    _check_obs(env, td, "obs")
    try:
        env.step(torch.zeros(n + 1, env.action_dim, device=env.device))
    except ValueError:
        pass
    else:
        raise AssertionError("a wrong action shape did not raise ValueError")
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
            assert torch.allclose(got, expected, rtol=1e-4, atol=1e-3), (
                f"episode return {got.tolist()[:4]} != summed rewards {expected.tolist()[:4]}"
            )
            running[done] = 0
        counts["steps"] += 1
        counts["episodes"] += int(done.sum())
        counts["terminated"] += int(out["terminated"].sum())
        counts["truncated"] += int(out["truncated"].sum())
    if hasattr(env, "state_dict") and hasattr(env, "load_state_dict"):
        _check_state_round_trip(env, steps=min(steps, 10), seed=seed)
    if make_env is not None:
        _check_determinism(make_env, steps=min(steps, 20), seed=seed)
    return counts


def _check_state_round_trip(env: Any, *, steps: int, seed: int) -> None:
    state = env.state_dict()
    actions = _actions(env, steps, seed + 2)
    first = [env.step(a.clone()).clone() for a in actions]  # clones: outputs may be views
    env.load_state_dict(state)
    for t, action in enumerate(actions):
        again = env.step(action.clone())
        for key in first[t].keys(include_nested=True, leaves_only=True):
            assert torch.equal(first[t][key], again[key]), (
                f"load_state_dict(state_dict()) does not continue bitwise: {key} differs at "
                f"step {t}"
            )


def _check_determinism(make_env: Callable[[], Any], *, steps: int, seed: int) -> None:
    envs = [make_env(), make_env()]
    outs = [[e.reset()] for e in envs]
    for action in _actions(envs[0], steps, seed + 1):
        for e, o in zip(envs, outs):
            o.append(e.step(action.clone()))
    for t, (a, b) in enumerate(zip(*outs)):
        for key in a.keys(include_nested=True, leaves_only=True):
            assert torch.equal(a[key], b[key]), f"not deterministic: {key} differs at step {t}"


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
