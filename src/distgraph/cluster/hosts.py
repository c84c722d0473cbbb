"""Is an ip_config address this host? (Then its processes start locally, else over ssh.)"""

from __future__ import annotations

import ipaddress
import random
import socket
from functools import lru_cache
from pathlib import Path

import psutil


@lru_cache(maxsize=None)
def local_addresses() -> frozenset[str]:
    """Every address of this host's interfaces."""
    found = {a.address.split("%")[0] for addrs in psutil.net_if_addrs().values() for a in addrs
             if a.family in (socket.AF_INET, socket.AF_INET6)}
    return frozenset(found)


def is_local(host: str) -> bool:
    """True for loopback addresses, this host's addresses, and names resolving to them."""
    try:
        infos = socket.getaddrinfo(host, None)
    except socket.gaierror:
        return False
    for info in infos:
        addr = info[4][0].split("%")[0]
        if ipaddress.ip_address(addr).is_loopback or addr in local_addresses():
            return True
    return False


def interface_of(host: str) -> str | None:
    """The name of this host's network interface that holds address `host` (a name is resolved)."""
    try:
        addrs = {info[4][0].split("%")[0] for info in socket.getaddrinfo(host, None)}
    except socket.gaierror:
        return None
    for name, entries in psutil.net_if_addrs().items():
        if any(a.address.split("%")[0] in addrs for a in entries):
            return name
    if any(ipaddress.ip_address(a).is_loopback for a in addrs):
        return next((n for n, es in psutil.net_if_addrs().items()
                     if any(ipaddress.ip_address(e.address.split("%")[0]).is_loopback for e in es
                            if e.family in (socket.AF_INET, socket.AF_INET6))), None)
    return None


EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LISTEN_PORTS_BELOW = 10000  # how many ports under the ephemeral range a listening port is drawn from


def free_port(host: str) -> int:
    """A TCP port free on `host` right now, for a process to listen on later (`free_ports`)."""
    return free_ports(host, 1)[0]


def free_ports(host: str, n: int) -> list[int]:
    """`n` distinct TCP ports free on `host` right now (all held at once), for processes to
    listen on later: drawn below the range the OS gives outgoing connections, so no connection
    made in between takes one (a port from bind(0) is in that range); the OS's choice for any
    not found there."""
    try:
        start = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        start = 32768  # Linux's default
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    low = max(1024, start - LISTEN_PORTS_BELOW)
    tries = iter(random.sample(range(low, start), min(64 + n, max(0, start - low))))
    socks = []
    try:
        while len(socks) < n:
            s = socket.socket(family, socket.SOCK_STREAM)
            socks.append(s)
            try:
                s.bind((host, next(tries, 0)))
            except OSError:
                socks.pop().close()
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def bind_endpoint(host: str, port: int) -> str:
    """The ZeroMQ endpoint that listens on a machine's address from ip_config (host names resolved)."""
    ip = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][4][0]
    return f"tcp://[{ip}]:{port}" if ":" in ip else f"tcp://{ip}:{port}"
