"""Replaying a recorded ZeroMQ (ZMTP 3) client byte stream on a new TCP connection, as someone who
captured a job's traffic would: the tests check that a job's servers refuse it."""

from __future__ import annotations

import socket

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


def replay(recorded: bytes, endpoint: tuple[str, int]) -> bytes:
    """Replay a recorded client stream on a new TCP connection as its client sent it: the greeting,
    then each handshake command after the server's answer to the one before, then the messages.
    Returns everything the server sent back."""
    greeting, hello, initiate, *messages = zmtp_units(recorded)
    got = bytearray()
    with socket.create_connection(endpoint) as sock:
        sock.settimeout(3)
        try:
            for step in (greeting, hello, initiate, b"".join(messages)):
                sock.sendall(step)
                chunk = sock.recv(1 << 16)
                got += chunk
                if not chunk or ZAP_REFUSAL in got:
                    break
            while chunk := sock.recv(1 << 16):
                got += chunk
        except (socket.timeout, ConnectionResetError):
            pass
    return bytes(got)
