"""Replaying a recorded ZeroMQ (ZMTP 3) client byte stream on a new TCP connection, as someone who
captured a job's traffic would: the tests check that a job's servers refuse it."""

from __future__ import annotations

import socket
import time

ZAP_REFUSAL = b"RROR\x03400"  # the end of ZeroMQ's ERROR command carrying the ZAP handler's status 400


def zmtp_units(stream: bytes) -> list[bytes]:
    """A recorded ZMTP 3 client stream cut into its greeting and frames (commands and messages)."""
    units, at = [stream[:64]], 64
    while at < len(stream):
        flags = stream[at]
        head, size = (9, int.from_bytes(stream[at + 1:at + 9], "big")) if flags & 2 else (2, stream[at + 1])
        units.append(stream[at:at + head + size])
        at += head + size
    return units


def replay(recorded: bytes, endpoint: tuple[str, int], until: tuple[bytes, ...] = (ZAP_REFUSAL, b"machine_id"),
           timeout: float = 60.0) -> bytes:
    """Replay a recorded client stream on a new TCP connection as its client sent it: the greeting,
    then each handshake command once the server has answered the one before (its greeting, then
    WELCOME, then READY), then the messages. Returns what the server sent back, once it holds one
    of `until` (a refusal, a reply), the server closed, or `timeout` passed (generous: a loaded
    machine answers late)."""
    greeting, hello, initiate, *messages = zmtp_units(recorded)
    got = bytearray()
    deadline = time.monotonic() + timeout

    def read_until(done) -> bool:
        """Read until `done(got)` or a refusal; False when the server closed or time ran out."""
        while not done(got) and ZAP_REFUSAL not in got:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = sock.recv(1 << 16)
            except (socket.timeout, ConnectionResetError):
                return False
            if not chunk:
                return False
            got.extend(chunk)
        return ZAP_REFUSAL not in got

    with socket.create_connection(endpoint) as sock:
        steps = ((greeting, lambda g: len(g) >= 64), (hello, lambda g: b"WELCOME" in g),
                 (initiate, lambda g: b"READY" in g), (b"".join(messages), lambda g: any(u in g for u in until)))
        for data, answered in steps:
            sock.sendall(data)
            if not read_until(answered):
                break
    return bytes(got)
