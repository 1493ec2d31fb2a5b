"""What a one-host run listens on: loopback only, even where the hostname names a LAN address.

The run is a real launch through the `unilab-launch` command (2 CPU workers on gloo; on a
machine with a GPU, also 1 GPU worker on NCCL, whose bootstrap sockets follow the launch's
`NCCL_SOCKET_IFNAME`), started inside a
private mount namespace (`unshare -m`) whose /etc/hosts maps this machine's name to one of its
non-loopback addresses (the namespace ends with the run; the machine's own file is untouched).
While the workers all-reduce, the test lists the TCP sockets in LISTEN state (/proc/net/tcp and
tcp6) that belong to the run's processes (their /proc/<pid>/fd) and requires each of them to
be bound to a loopback address. Where no private namespace can be made (no `unshare`, no
permission) or the machine has no other address, the same run goes without the hosts entry:
a socket bound to every interface (0.0.0.0, ::) is caught either way.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from unilab_launch.testing import interface_addresses, listening_sockets, process_tree

pytestmark = [pytest.mark.timeout(180)]

TESTS = Path(__file__).resolve().parent


def _lan_address() -> str | None:
    for address in interface_addresses().values():
        if not ipaddress.ip_address(address).is_loopback:
            return address
    return None


def _namespace_prefix() -> list[str] | None:
    """`unshare` arguments for a private mount namespace (root, or a user namespace)."""
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        return None
    prefix = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-r", "-m"]
    probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=30)
    return prefix if probe.returncode == 0 else None


def _wait_for(path: Path, count: int, proc: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while len(list(path.glob("rank*.json"))) < count:
        if proc.poll() is not None or time.monotonic() > deadline:
            out, err = proc.communicate()
            raise AssertionError(f"the run did not start its workers:\n{out}\n{err}")
        time.sleep(0.1)


@pytest.mark.slow
def test_one_host_run_listens_on_loopback_only(tmp_path: Path) -> None:
    # the launcher's control server, the first agent's store, each worker's gloo socket
    _check_listening(tmp_path, "--cpu-workers 2 --num-threads 1", workers=2, sockets=4)


@pytest.mark.gpu
def test_one_gpu_nccl_run_listens_on_loopback_only(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    # the launcher's control server, the agent's store, NCCL's bootstrap sockets
    _check_listening(tmp_path, "--gpus 0", workers=1, sockets=3)


def _check_listening(tmp_path: Path, workers_flags: str, workers: int, sockets: int) -> None:
    address = _lan_address()
    prefix = _namespace_prefix()
    remap = address is not None and prefix is not None
    resolved = tmp_path / "resolved"
    log_dir = tmp_path / "logs"
    launch = (
        f"{sys.executable} -m unilab_launch.cli {workers_flags} "
        f"--log-dir {log_dir} launch_targets:allreduce_for 6"
    )
    probe = "import socket; print(socket.gethostbyname(socket.gethostname()))"
    script = f"{sys.executable} -c '{probe}' > {resolved} && exec {launch}"
    if remap:
        hosts = tmp_path / "hosts"
        hosts.write_text(
            f"127.0.0.1 localhost\n{address} {socket.gethostname()} {socket.getfqdn()}\n"
        )
        script = f"mount --bind {hosts} /etc/hosts && {script}"
    command = [*(prefix if remap else []), "sh", "-c", script]
    proc = subprocess.Popen(
        command, cwd=TESTS, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        _wait_for(log_dir / "pids", workers, proc, timeout_s=120)
        time.sleep(1.0)  # inside the all-reduce loop: every store and server is up
        seen: dict[tuple[str, int], int] = {}
        for _ in range(5):
            seen.update(listening_sockets(process_tree(proc.pid)))
            time.sleep(0.3)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    if remap:  # the run saw its hostname as a LAN address
        assert resolved.read_text().strip() == address
    assert proc.returncode == 0, err
    assert len(seen) >= sockets, f"the listing missed the run's sockets: {sorted(seen)}"
    outside = {
        key: pid for key, pid in seen.items() if not ipaddress.ip_address(key[0]).is_loopback
    }
    assert not outside, f"listening outside loopback: {outside} (all: {sorted(seen)})"
