"""TensorBoard's event files, written without TensorFlow or protobuf: scalars only.

A file is a sequence of TFRecords (`uint64 length`, masked CRC-32C of the length, the bytes,
their masked CRC-32C), each holding one `Event` protocol buffer: the first gives the file
version, the others a wall time, a step and a `Summary` of (tag, simple_value) pairs. The few
protobuf fields needed are encoded here by hand."""

from __future__ import annotations

import os
import socket
import struct
import time
from pathlib import Path


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), the checksum TFRecord uses (records are a few dozen bytes)."""
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked(data: bytes) -> bytes:
    crc = crc32c(data)
    return struct.pack("<I", (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF)


def record(data: bytes) -> bytes:
    """One TFRecord."""
    length = struct.pack("<Q", len(data))
    return length + _masked(length) + data + _masked(data)


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # int64 as protobuf encodes it: two's complement, 10 bytes when negative
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def event(wall_time: float, step: int = 0, file_version: str | None = None,
          scalars: dict[str, float] | None = None) -> bytes:
    """An `Event` with a file version or a summary of scalars."""
    out = b"\x09" + struct.pack("<d", wall_time)  # field 1, double
    if step:
        out += b"\x10" + _varint(int(step))  # field 2, int64
    if file_version is not None:
        out += _field(3, file_version.encode())
    if scalars:
        values = b"".join(_field(1, _field(1, tag.encode()) + b"\x15" + struct.pack("<f", float(v)))
                          for tag, v in scalars.items())  # Summary.value: tag (1), simple_value (2, float)
        out += _field(5, values)
    return out


class SummaryWriter:
    """`torch.utils.tensorboard.SummaryWriter`'s scalar part: `add_scalar(tag, value, step)`
    appends to `<log_dir>/events.out.tfevents.<time>.<host><suffix>`, which TensorBoard reads."""

    def __init__(self, log_dir: str | Path, filename_suffix: str = ""):
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.log_dir / f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}" \
                                   f".{os.getpid()}{filename_suffix}"
        self._f = open(self.path, "wb")
        self._f.write(record(event(time.time(), file_version="brain.Event:2")))
        self._f.flush()

    def add_scalar(self, tag: str, value: float, global_step: int = 0, walltime: float | None = None) -> None:
        self.add_scalars_at(global_step, {tag: value}, walltime)

    def add_scalars_at(self, step: int, scalars: dict[str, float], walltime: float | None = None) -> None:
        """Several scalars of one step in one event."""
        self._f.write(record(event(time.time() if walltime is None else walltime, step, scalars=scalars)))

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()

    def __enter__(self) -> "SummaryWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
