"""Which address a launch listens on, and the wire its processes talk over.

One rule for every socket a launch opens: on one host it listens on loopback (127.0.0.1); with
several hosts it listens on the address of the interface that reaches the other hosts. The
launcher's control server, the process-group store (held by the first host's agent) and the
workers' gloo / NCCL sockets follow it (`GLOO_SOCKET_IFNAME` / `NCCL_SOCKET_IFNAME`, unless
the user set them).

Wire: frames of an 8-byte big-endian length and a body. Control messages and log records are
JSON; only two frames carry pickles (the function and its arguments, launcher to agent; the
results, agent to launcher), and only on a connection that proved it holds the launch's secret
key (HMAC-SHA256 of a fresh challenge) before anything else was read from it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import ipaddress
import json
import secrets
import socket
import struct
import sys
import threading
from collections.abc import Sequence
from typing import Any

__all__ = [
    "LOOPBACK",
    "Channel",
    "bind_address",
    "interface_addresses",
    "interface_of",
    "is_local_host",
]

LOOPBACK = "127.0.0.1"

_SIOCGIFADDR = 0x8915
_MAX_FRAME = 1 << 34  # results can be large; a length beyond this is a corrupt stream
_CHALLENGE = 32


def interface_addresses() -> dict[str, str]:
    """{interface name: IPv4 address} of this machine's configured interfaces (Linux)."""
    found: dict[str, str] = {}
    if not sys.platform.startswith("linux"):
        return found
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            with contextlib.suppress(OSError):
                packed = struct.pack("256s", name.encode()[:15])
                reply = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, packed)
                found[name] = socket.inet_ntoa(reply[20:24])
    return found


def interface_of(address: str) -> str | None:
    """The name of the interface that holds IPv4 `address` ("lo" for 127.0.0.1), or None."""
    for name, held in interface_addresses().items():
        if held == address:
            return name
    if ipaddress.ip_address(address).is_loopback:
        return next(
            (n for n, a in interface_addresses().items() if ipaddress.ip_address(a).is_loopback),
            None,
        )
    return None


def _addresses(host: str) -> set[str]:
    return {info[4][0].split("%")[0] for info in socket.getaddrinfo(host, None)}


def is_local_host(host: str) -> bool:
    """True if `host` is this machine: a loopback name or address, or one of its own."""
    if host in {"localhost", socket.gethostname(), socket.getfqdn()}:
        return True
    try:
        addresses = _addresses(host)
    except (OSError, ValueError):
        return False
    if any(ipaddress.ip_address(a).is_loopback for a in addresses):
        return True
    own = set(interface_addresses().values())
    with contextlib.suppress(OSError):
        own |= _addresses(socket.gethostname())
    return bool(addresses & own)


def bind_address(hosts: Sequence[str]) -> str:
    """Where the launcher listens: loopback when every host is this machine, otherwise the
    local address from which this machine reaches the first remote host."""
    remote = [h for h in hosts if not is_local_host(h)]
    if not remote:
        return LOOPBACK
    info = socket.getaddrinfo(remote[0], 9, type=socket.SOCK_DGRAM)[0]
    with socket.socket(info[0], socket.SOCK_DGRAM) as probe:
        probe.connect(info[4])  # UDP: no packet is sent, the kernel picks the route
        return probe.getsockname()[0]


class Channel:
    """Length-prefixed frames over a connected socket; sends are thread-safe."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._send_lock = threading.Lock()

    @classmethod
    def connect(cls, address: tuple[str, int], key: bytes, timeout: float) -> Channel:
        """Connect to a launcher's control server and prove that this process holds `key`."""
        sock = socket.create_connection(address, timeout=timeout)
        channel = cls(sock)
        challenge = channel.recv_bytes()
        channel.send_bytes(hmac.new(key, challenge, hashlib.sha256).digest())
        sock.settimeout(None)
        return channel

    def verify(self, key: bytes, timeout: float) -> bool:
        """Server side of `connect`: True if the peer answered the challenge with `key`."""
        self.sock.settimeout(timeout)
        challenge = secrets.token_bytes(_CHALLENGE)
        try:
            self.send_bytes(challenge)
            answer = self.recv_bytes(limit=64)
        except (OSError, ValueError):
            return False
        self.sock.settimeout(None)
        return hmac.compare_digest(answer, hmac.new(key, challenge, hashlib.sha256).digest())

    def send_bytes(self, body: bytes) -> None:
        with self._send_lock:
            self.sock.sendall(struct.pack(">Q", len(body)) + body)

    def send_json(self, value: Any) -> None:
        self.send_bytes(json.dumps(value).encode())

    def _read(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            chunk = self.sock.recv(min(left, 1 << 20))
            if not chunk:
                raise EOFError("connection closed")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def recv_bytes(self, limit: int = _MAX_FRAME) -> bytes:
        """The next frame's body; EOFError when the peer closed the connection."""
        (size,) = struct.unpack(">Q", self._read(8))
        if size > limit:
            raise ValueError(f"frame of {size} bytes exceeds {limit}")
        return self._read(size)

    def recv_json(self) -> Any:
        return json.loads(self.recv_bytes())

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.sock.close()
