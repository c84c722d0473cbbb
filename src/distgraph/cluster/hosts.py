"""Is an ip_config address this host? (Then its processes start locally, else over ssh.)"""

from __future__ import annotations

import ipaddress
import random
import socket
from functools import lru_cache
from itertools import chain, repeat
from pathlib import Path

from ..errors import DistGraphError


@lru_cache(maxsize=None)
def local_addresses() -> frozenset[str]:
    """Every address of this host's interfaces."""
    import psutil  # here: every command that reads an ip_config would otherwise import it to start

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
    import psutil

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


def free_ports(host: str, n: int, block: int = 1) -> list[int]:
    """`n` TCP ports free on `host` right now, each the first of `block` consecutive free ports
    (blocks never overlap, all held at once), for processes to listen on later: drawn below the
    range the OS gives outgoing connections, so no connection made in between takes one (a port
    from bind(0) is in that range); the OS's choice for any not found there."""
    try:
        start = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        start = 32768  # Linux's default
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    low = max(1024, start - LISTEN_PORTS_BELOW)
    bases = range(low, start - block + 1)
    tries = chain(random.sample(bases, min(64 + n, len(bases))), repeat(0, 64 + n))  # 0: the OS's choice
    held: list[socket.socket] = []
    found: list[int] = []
    try:
        while len(found) < n:
            base = next(tries, None)
            if base is None:
                raise DistGraphError(f"no {n} blocks of {block} consecutive free TCP ports on {host}: "
                                     "free some ports there or ask for fewer")
            run = _hold_block(family, host, base, block)
            held += run
            if run:
                found.append(run[0].getsockname()[1])
        return found
    finally:
        for s in held:
            s.close()


def _hold_block(family: int, host: str, base: int, block: int) -> list[socket.socket]:
    """Sockets bound to `block` consecutive ports from `base` (0: the OS's choice), or none if
    any of them is taken."""
    socks = [socket.socket(family, socket.SOCK_STREAM)]
    try:
        socks[0].bind((host, base))
        first = socks[0].getsockname()[1]
        for port in range(first + 1, first + block):
            socks.append(socket.socket(family, socket.SOCK_STREAM))
            socks[-1].bind((host, port))
        return socks
    except (OSError, OverflowError):  # OverflowError: the block runs past port 65535
        for s in socks:
            s.close()
        return []


def bind_endpoint(host: str, port: int) -> str:
    """The ZeroMQ endpoint that listens on a machine's address from ip_config (host names resolved)."""
    ip = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][4][0]
    return f"tcp://[{ip}]:{port}" if ":" in ip else f"tcp://{ip}:{port}"
