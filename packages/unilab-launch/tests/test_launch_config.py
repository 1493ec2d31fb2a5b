"""Settings, host lists, targets and bad input: every error comes before any worker starts."""

from __future__ import annotations

import fnmatch
import threading
import time
from pathlib import Path

import attrs
import launch_targets
import pytest

import unilab_launch
import unilab_launch._launch as launch_mod
from unilab_launch import (
    DEFAULT_ENV_PATTERNS,
    LaunchConfig,
    launch,
    parse_gpus,
    parse_hosts,
    read_hostfile,
)
from unilab_launch._target import module_root, resolve_target
from unilab_launch.cli import main


def test_launch_public_api() -> None:
    assert unilab_launch.__version__ == "0.1.0"
    assert set(unilab_launch.__all__) == {
        "DEFAULT_ENV_PATTERNS",
        "LaunchConfig",
        "LaunchInterrupted",
        "WorkerFailedError",
        "__version__",
        "interrupt_on_signals",
        "launch",
        "parse_gpus",
        "parse_hosts",
        "read_hostfile",
        "resolve_hosts",
    }
    for name in unilab_launch.__all__:  # the lazy names resolve too
        assert getattr(unilab_launch, name) is not None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("all", "all"),
        (" ALL ", "all"),
        ("0,1", (0, 1)),
        ("3", (3,)),
        (" 2 , 0 ", (2, 0)),
        (1, (1,)),
        ([0, 1, 2], (0, 1, 2)),
        ((5,), (5,)),
    ],
)
def test_launch_parse_gpus(value: object, expected: object) -> None:
    assert parse_gpus(value) == expected


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        ("", ValueError, "malformed GPU list"),
        ("0,,1", ValueError, "malformed GPU list"),
        ("a,b", ValueError, "malformed GPU list"),
        ([], ValueError, "empty"),
        ([0, -1], ValueError, ">= 0"),
        ("1,1", ValueError, "distinct"),
        ([0, 1.5], TypeError, "sequence of ints"),
        (True, TypeError, "gpus must be"),
        (2.0, TypeError, "gpus must be"),
    ],
)
def test_launch_parse_gpus_rejects(value: object, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        parse_gpus(value)


def test_launch_parse_hosts() -> None:
    assert parse_hosts(None) is None
    assert parse_hosts("h1,h2") == ("h1", "h2")
    assert parse_hosts(" node-01.cluster , 10.0.0.7 ,::1") == ("node-01.cluster", "10.0.0.7", "::1")
    assert parse_hosts(["gpu_a"]) == ("gpu_a",)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("", "empty"),
        ("h1,,h2", "empty host name"),
        ("h1,", "empty host name"),
        ("h 1", "not a host name"),
        ("bad!host", "not a host name"),
        ("user@host", "not a host name"),
        ("-lead", "not a host name"),
        ("h1,h2,h1", r"\['h1'\] appear more than once"),
    ],
)
def test_launch_parse_hosts_rejects(value: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_hosts(value)
    with pytest.raises(TypeError, match="hosts must be"):
        parse_hosts(3)


def test_launch_read_hostfile(tmp_path: Path) -> None:
    good = tmp_path / "hosts"
    good.write_text("# cluster\nnode1\n\n  node2   # second\n10.1.2.3\n")
    assert read_hostfile(good) == ("node1", "node2", "10.1.2.3")
    bad = tmp_path / "bad"
    bad.write_text("node1\nnode2 slots=8\n")
    with pytest.raises(ValueError, match="line 2: 'node2 slots=8'"):
        read_hostfile(bad)
    empty = tmp_path / "empty"
    empty.write_text("# nothing\n\n")
    with pytest.raises(ValueError, match="lists no host"):
        read_hostfile(empty)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_hostfile(tmp_path / "missing")
    dup = tmp_path / "dup"
    dup.write_text("a\nb\na\n")
    with pytest.raises(ValueError, match="more than once"):
        read_hostfile(dup)


def test_launch_config_validation() -> None:
    cfg = LaunchConfig(cpu_workers=3, hosts="a,b", seed=7, env={"X": "1"}, log_dir="logs")
    assert (cfg.cpu_workers, cfg.hosts, cfg.seed, cfg.env) == (3, ("a", "b"), 7, {"X": "1"})
    assert cfg.log_dir == Path("logs") and cfg.gpus is None and not cfg.uses_gpus
    assert attrs.evolve(cfg, cpu_workers=None, gpus="0,1").gpus == (0, 1)
    with pytest.raises(ValueError, match=r"either gpus \(\(0,\)\) or cpu_workers \(2\)"):
        LaunchConfig(gpus="0", cpu_workers=2)
    for bad in (0, -1):
        with pytest.raises(ValueError, match=f"cpu_workers must be >= 1, got {bad}"):
            LaunchConfig(cpu_workers=bad)
    with pytest.raises(TypeError, match="cpu_workers must be an int"):
        LaunchConfig(cpu_workers="2")
    with pytest.raises(ValueError, match="seed must be in"):
        LaunchConfig(seed=-1)
    with pytest.raises(ValueError, match="timeout must be > 0"):
        LaunchConfig(timeout=0)
    with pytest.raises(ValueError, match="not a valid environment variable name"):
        LaunchConfig(env={"BAD-NAME": "1"})
    with pytest.raises(TypeError, match=r"env\['X'\] must be a str"):
        LaunchConfig(env={"X": 1})


def test_launch_default_env_patterns_cover_the_variables_that_matter() -> None:
    names = [
        "CUDA_VISIBLE_DEVICES",
        "NCCL_DEBUG",
        "MUJOCO_GL",
        "WARP_CACHE_PATH",
        "PYTHONPATH",
        "OMP_NUM_THREADS",
        "TORCH_HOME",
        "PYTORCH_CUDA_ALLOC_CONF",
        "UNILAB_FORCE_CPU",
        "PATH",
        "LD_LIBRARY_PATH",
    ]
    for name in names:
        assert any(fnmatch.fnmatch(name, p) for p in DEFAULT_ENV_PATTERNS), name
    assert not any(fnmatch.fnmatch("HOME", p) for p in DEFAULT_ENV_PATTERNS)


def test_launch_resolve_target() -> None:
    assert resolve_target("launch_targets:cli_body") is launch_targets.cli_body
    assert resolve_target(launch_targets.cli_body) is launch_targets.cli_body
    with pytest.raises(ImportError, match="cannot import target 'no_such_mod_xq:main'"):
        resolve_target("no_such_mod_xq:main")
    with pytest.raises(ValueError, match="has no 'nope'"):
        resolve_target("launch_targets:nope")
    with pytest.raises(ValueError, match="is a int, not a function"):
        resolve_target("launch_targets:NOT_CALLABLE")
    for bad in ("launch_targets", ":f", "m:"):
        with pytest.raises(ValueError, match=r"must look like 'package\.module:function'"):
            resolve_target(bad)
    with pytest.raises(TypeError, match="target must be a callable"):
        resolve_target(42)
    assert module_root(launch_targets.cli_body) == Path(launch_targets.__file__).resolve().parent
    assert module_root(resolve_target("json:dumps")) is None  # standard library
    assert module_root(attrs.evolve) is None  # installed in site-packages


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A log_dir that must still not exist after a rejected launch (nothing started)."""
    return tmp_path / "run"


def _rejected(run_dir: Path, error: type, match: str, *args: object, **kwargs: object) -> None:
    start = time.monotonic()
    with pytest.raises(error, match=match):
        launch(*args, log_dir=run_dir, **kwargs)  # type: ignore[arg-type]
    assert not run_dir.exists()
    assert time.monotonic() - start < 5.0


def test_launch_rejects_more_gpus_than_present(run_dir: Path, monkeypatch) -> None:
    monkeypatch.setattr(launch_mod, "_cuda_device_count", lambda: 2)
    _rejected(run_dir, ValueError, r"GPUs \[0, 1, 2\] requested but only 2 CUDA.*machine$",
              "json:dumps", gpus="0,1,2")  # fmt: skip
    monkeypatch.setattr(launch_mod, "_cuda_device_count", lambda: 0)
    hint = r"; to run on the CPU, give cpu_workers=N instead \(`--cpu-workers N`\)$"
    _rejected(run_dir, ValueError, "only 0 CUDA device.*" + hint, "json:dumps", gpus=[0])
    _rejected(
        run_dir, ValueError, "gpus='all' but no CUDA device.*" + hint, "json:dumps", gpus="all"
    )


def test_launch_gpu_selection_maps_through_cuda_visible_devices(monkeypatch) -> None:
    monkeypatch.setattr(launch_mod, "_cuda_device_count", lambda: 4)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    cfg = LaunchConfig(gpus="1,3", hosts="localhost")
    counts, use_gpus, env = launch_mod._workers_per_host(cfg, ["localhost"], local=True)
    assert (counts, use_gpus, env) == ([2], True, {"CUDA_VISIBLE_DEVICES": "5,7"})
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    counts, _, env = launch_mod._workers_per_host(cfg, ["localhost"], local=True)
    assert (counts, env) == ([2], {"CUDA_VISIBLE_DEVICES": "1,3"})
    counts, use_gpus, _ = launch_mod._workers_per_host(
        LaunchConfig(gpus="all"), ["localhost"], local=True
    )
    assert (counts, use_gpus) == ([4], True)
    monkeypatch.setattr(launch_mod, "_cuda_device_count", lambda: 0)
    counts, use_gpus, env = launch_mod._workers_per_host(LaunchConfig(), ["localhost"], True)
    assert (counts, use_gpus, env) == ([1], False, {})
    with pytest.raises(ValueError, match="with remote hosts, give gpus"):
        launch_mod._workers_per_host(LaunchConfig(), ["node1"], local=False)


def test_launch_rejects_bad_input_before_start(run_dir: Path) -> None:
    _rejected(run_dir, ImportError, "cannot import target 'no_such_mod_xq:main'",
              "no_such_mod_xq:main", cpu_workers=2)  # fmt: skip
    _rejected(run_dir, ValueError, "has no 'missing'", "launch_targets:missing", cpu_workers=2)
    _rejected(run_dir, ValueError, "malformed host list", "json:dumps", hosts="h1,,h2",
              cpu_workers=1)  # fmt: skip
    _rejected(run_dir, ValueError, "host 'no-such-host.invalid' does not resolve", "json:dumps",
              hosts="no-such-host.invalid", cpu_workers=1)  # fmt: skip
    _rejected(run_dir, ValueError, "cpu_workers must be >= 1", "json:dumps", cpu_workers=0)
    _rejected(run_dir, ValueError, "either gpus", "json:dumps", gpus="0", cpu_workers=2)
    _rejected(run_dir, TypeError, "cannot be pickled", "json:dumps", args=(threading.Lock(),),
              cpu_workers=1)  # fmt: skip
    _rejected(run_dir, TypeError, "args must be a sequence", "json:dumps", args="abc",
              cpu_workers=1)  # fmt: skip
    with pytest.raises(TypeError, match="either in config or as keywords"):
        launch("json:dumps", config=LaunchConfig(cpu_workers=1), seed=3)


def test_launch_cli_rejects_bad_input(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    base = ["--log-dir", str(run)]
    assert main([*base, "--cpu-workers", "0", "launch_targets:cli_body", "1"]) == 2
    assert "cpu_workers must be >= 1, got 0" in capsys.readouterr().err
    assert main([*base, "--hosts", "a,,b", "--cpu-workers", "1", "launch_targets:cli_body"]) == 2
    assert "malformed host list" in capsys.readouterr().err
    assert main([*base, "--cpu-workers", "1", "no_such_mod_xq:f"]) == 2
    assert "cannot import target 'no_such_mod_xq:f'" in capsys.readouterr().err
    assert main([*base, "--cpu-workers", "1", "--env", "NOEQUALS", "launch_targets:cli_body"]) == 2
    assert "--env expects KEY=VALUE" in capsys.readouterr().err
    assert main([*base, "--hostfile", str(tmp_path / "nofile"), "json:dumps"]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["--gpus", "0", "--cpu-workers", "2", "json:dumps"])
    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
    assert not run.exists()
