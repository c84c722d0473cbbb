"""Whether a TCP connection still reaches its peer, read from this host's socket table
(/proc/net/tcp and tcp6).

The peer's kernel acknowledges data whatever its processes are doing, busy or stopped. So
data on the connection that stays unacknowledged, retransmitted again and again, means the
network or the peer's host is gone; data that is acknowledged means the peer's host is there,
however slow the process behind it. An agent asks this of its ssh session before it takes a
silent launcher for a lost one.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
import time
from dataclasses import dataclass
from typing import Callable

ESTABLISHED = 0x01
GIVE_UP_RETRANSMITS = 4  # unanswered resends (of data, or of zero-window probes): ~3 s at the 200 ms minimum RTO
POLL_SECONDS = 0.1
TABLES = ("/proc/net/tcp", "/proc/net/tcp6")

Endpoint = tuple[str, int]  # (address, port)


@dataclass(frozen=True)
class SocketState:
    """One socket's line of the table: its TCP state, bytes sent and not yet acknowledged, and
    how often the oldest of them was resent (or a zero-window probe went unanswered)."""

    state: int
    unacked: int
    retransmits: int
    probes: int


def _address(text: str) -> ipaddress.IPv6Address:
    """`0100007F:1F90`-style address (32-bit words in host order) as an IPv6 address (IPv4 mapped)."""
    raw = bytes.fromhex(text)
    words = b"".join(struct.pack("=I", struct.unpack(">I", raw[i:i + 4])[0]) for i in range(0, len(raw), 4))
    if len(words) == 4:
        return ipaddress.IPv6Address(f"::ffff:{socket.inet_ntoa(words)}")
    return ipaddress.IPv6Address(words)


def _normal(endpoint: Endpoint) -> tuple[ipaddress.IPv6Address, int]:
    ip = ipaddress.ip_address(endpoint[0])
    return (ipaddress.IPv6Address(f"::ffff:{ip}") if ip.version == 4 else ip), endpoint[1]


def socket_state(local: Endpoint, remote: Endpoint, tables: tuple[str, ...] = TABLES) -> SocketState | None:
    """The state of the socket from `local` to `remote`, or None when there is none."""
    want = (_normal(local), _normal(remote))
    for table in tables:
        try:
            with open(table) as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            ends = []
            for end in fields[1:3]:
                addr, port = end.split(":")
                ends.append((_address(addr), int(port, 16)))
            if tuple(ends) == want:
                unacked = int(fields[4].split(":")[0], 16)
                return SocketState(int(fields[3], 16), unacked, int(fields[6], 16), int(fields[8]))
    return None


def reaches_peer(local: Endpoint, remote: Endpoint, probe: Callable[[], None], wait: float,
                 tables: tuple[str, ...] = TABLES) -> bool:
    """Send `probe` (bytes that travel on the connection), then watch the socket for up to
    `wait` seconds: True as soon as nothing sent is left unacknowledged (the peer's host
    answers), False when the socket is gone or closing, or its data went unanswered
    GIVE_UP_RETRANSMITS times; True at the deadline otherwise (undecided: ask again later)."""
    probe()
    deadline = time.monotonic() + wait
    while True:
        s = socket_state(local, remote, tables)
        if s is None or s.state != ESTABLISHED or max(s.retransmits, s.probes) >= GIVE_UP_RETRANSMITS:
            return False
        if s.unacked == 0 or time.monotonic() >= deadline:
            return True
        time.sleep(POLL_SECONDS)
