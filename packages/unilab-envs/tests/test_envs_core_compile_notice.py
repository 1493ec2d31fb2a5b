"""The compile announcement: logged when warp really compiles the env's kernels, not otherwise.

Each run is a fresh process with its own kernel cache (WARP_CACHE_PATH), since a process that
already loaded a module never loads it again; cartpole compiles in about 15 s on one CPU core.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from unilab_envs._core.compile_notice import CompileNotice, shown_path

SCRIPT = textwrap.dedent(
    """
    import logging, sys, torch, unilab_envs
    logging.basicConfig(level=logging.INFO, format="LOG %(name)s %(message)s", stream=sys.stdout)
    env = unilab_envs.make("cartpole-balance", num_envs=2, seed=0)
    env.reset()
    for _ in range(3):
        env.step(torch.zeros(2, env.action_dim))
    env.reset()
    unilab_envs.make("cartpole-balance", num_envs=3, seed=1).reset()  # loaded: no compile
    print("DONE")
    """
)


def _run(cache: Path) -> list[str]:
    env = {**os.environ, "WARP_CACHE_PATH": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "DONE"
    return [line for line in out.stdout.splitlines() if line.startswith("LOG unilab_envs")]


@pytest.mark.slow
def test_announced_on_a_fresh_cache_and_not_on_a_warm_one(tmp_path):
    cold = _run(tmp_path / "warp")
    assert len(cold) == 2, cold
    assert cold[0].startswith(
        "LOG unilab_envs compiling MuJoCo Warp kernels for cartpole-balance (first run; "
        f"cached in {tmp_path / 'warp'}"
    )
    assert cold[0].endswith(") ...")
    seconds = re.fullmatch(
        r"LOG unilab_envs compiled MuJoCo Warp kernels for cartpole-balance in ([0-9.]+) s",
        cold[1],
    )
    assert seconds is not None and float(seconds.group(1)) > 0.5  # it did compile
    assert any((tmp_path / "warp").rglob("*.o"))  # warp's CPU binaries are there now
    assert _run(tmp_path / "warp") == []  # warm: every module from the cache, no line


def test_nothing_is_logged_when_the_cache_does_not_change(tmp_path, caplog):
    import warp as wp

    notice = CompileNotice("t")
    saved = wp.config.kernel_cache_dir
    wp.config.kernel_cache_dir = str(tmp_path)
    try:
        with caplog.at_level("INFO", logger="unilab_envs"):
            with notice.phase():
                pass
            notice.finish()
            assert caplog.records == []
            other = CompileNotice("t")
            with other.phase():
                (tmp_path / "mod_p1_t1").mkdir()  # what warp makes when a compilation starts
            other.finish()
    finally:
        wp.config.kernel_cache_dir = saved
    assert len(caplog.records) == 2 and caplog.records[0].getMessage().startswith(
        "compiling MuJoCo Warp kernels for t (first run; cached in "
    )
    assert caplog.records[1].getMessage().startswith("compiled MuJoCo Warp kernels for t in ")


def test_home_is_shown_as_tilde():
    home = os.path.expanduser("~")
    assert shown_path(os.path.join(home, ".cache", "warp")) == os.path.join("~", ".cache", "warp")
    assert shown_path("/elsewhere/warp") == "/elsewhere/warp"
