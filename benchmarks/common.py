"""What the benchmark scripts share: `key: value` output, a rate measured over a minimum
time, and free loopback ports."""

from __future__ import annotations

import socket
import time
from typing import Callable


def report(key: str, value) -> None:
    print(f"{key}: {value:.4g}" if isinstance(value, float) else f"{key}: {value}", flush=True)


def rate(fn: Callable[[], object], n: int, seconds: float) -> float:
    """Items per second of `fn` (which handles n items), after one warm-up call."""
    fn()
    count, start = 0, time.perf_counter()
    while True:
        fn()
        count += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and count >= 3:
            return count * n / elapsed


def free_ports(n: int) -> list[int]:
    """`n` distinct ports free on 127.0.0.1 right now (asked from the OS)."""
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports
