"""Whole-file reads and writes of big arrays that bypass the page cache (O_DIRECT): the disk's
DMA fills or drains the array itself, so no core copies the bytes through the kernel's cache,
no dirty pages are written back later, and no cache is reclaimed under memory pressure: the
cores stay with the training that runs beside the I/O. A buffer that is not page-aligned with
a whole number of pages of room, or a file system without O_DIRECT, takes the ordinary path."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from .files import replacing

ALIGN = 4096  # bytes: the page, a multiple of every disk's logical block
ALIGN_ROWS = 1024  # a run of this many rows of 4-byte values of any width is a whole number of pages
_DIRECT = getattr(os, "O_DIRECT", 0)


def aligned_rows(rows: int) -> int:
    """`rows` rounded up to a whole number of ALIGN_ROWS runs."""
    return -(-rows // ALIGN_ROWS) * ALIGN_ROWS


def aligned_empty(*shape: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """An uninitialised tensor whose first byte is page-aligned."""
    count = int(np.prod(shape))
    extra = ALIGN // torch.empty((), dtype=dtype).element_size()
    raw = torch.empty(count + extra, dtype=dtype)
    skip = (-raw.data_ptr() % ALIGN) // raw.element_size()
    return raw[skip:skip + count].view(*shape)


def _span(room: np.ndarray, size: int) -> int | None:
    """Bytes to transfer directly for a file of `size` bytes with `room` (uint8) as its buffer:
    `size` rounded up to whole pages, when `room` is aligned and that long; None otherwise."""
    span = -(-size // ALIGN) * ALIGN
    ok = _DIRECT and room.ctypes.data % ALIGN == 0 and len(room) >= span
    return span if ok else None


def _open(path: Path, flags: int, direct: bool) -> tuple[int, bool]:
    """(fd, whether it is direct): O_DIRECT when asked for and the file system takes it."""
    if direct:
        try:
            return os.open(path, flags | _DIRECT, 0o666), True
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
    return os.open(path, flags, 0o666), False


def read_into(path: Path, room: np.ndarray, size: int) -> int:
    """Read the file `path`, expected to hold `size` bytes, into `room[:size]` (uint8; bytes of
    `room` past `size`, up to the next page, may be overwritten). Returns the file's size: when
    it is not `size`, nothing is read."""
    span = _span(room, size)
    fd, direct = _open(path, os.O_RDONLY, span is not None)
    try:
        found = os.fstat(fd).st_size
        if found != size:
            return found
        view, got = memoryview(room)[:span if direct else size], 0
        while got < len(view):
            n = os.readv(fd, [view[got:]])
            if n == 0:
                break
            got += n
        return got
    finally:
        os.close(fd)


def write_atomically_from(path: Path, room: np.ndarray, size: int) -> None:
    """Write `room[:size]` (uint8) as the file `path` through a temporary file renamed over it
    (see `files.replacing`); bytes of `room` up to the next page are written and cut off."""
    span = _span(room, size)
    with replacing(path) as tmp:
        fd, direct = _open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, span is not None)
        try:
            view, done = memoryview(room)[:span if direct else size], 0
            while done < len(view):
                done += os.write(fd, view[done:])
            if direct and span != size:
                os.ftruncate(fd, size)
            os.fsync(fd)
        finally:
            os.close(fd)
