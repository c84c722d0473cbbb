"""Tensors served read-only from the rows of a `.npy` file (a partition's node and edge data).

Every process of a machine maps the same file region (`TensorMeta.file`, `.offset`), so the
rows live once, in the page cache: nothing is copied or read at start-up, a page is read
from disk when first touched, and the kernel may drop it again under memory pressure. The
mapping is read-only (no private copies, no commit charge); every write path refuses such a
tensor with `read_only_error`.
"""

from __future__ import annotations

import mmap
import os
import warnings
from pathlib import Path

import torch

from ..data.chunked import npy_file_array
from ..errors import InputError
from ..rpc.wire import WireError, dtype_name, nbytes
from .shm import SharedMemoryError, TensorMeta, tensor_view

FLAG = "--features_on_disk"


def read_only_error(name: str) -> InputError:
    """The one error of every write to a tensor served from disk."""
    return InputError(f"tensor {name!r} is read-only: it is served from the partition's files on disk "
                      f"({FLAG}); start the job without {FLAG} (standalone: without "
                      f"features_on_disk / DISTGRAPH_FEATURES_ON_DISK) to make it writable")


def npy_offset(path: Path, dtype: torch.dtype, shape: tuple[int, ...]) -> int:
    """Byte offset of the rows in .npy file `path`, after checking its header (read alone)
    says `dtype`, `shape` and C order (`attach_file` checks the file holds every row)."""
    try:
        found = npy_file_array(path)  # Fortran order and Python objects refused there
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot map partition file {path}: {exc}; copy it again or re-partition") from None
    try:
        same = dtype_name(found.dtype) == dtype_name(dtype)
    except WireError:
        same = False
    if not same or found.shape != tuple(shape):
        raise InputError(f"partition file {path} holds {found.dtype} {list(found.shape)}, expected {dtype} "
                         f"{list(shape)} in C order; re-partition")
    return found.offset


def attach_file(meta: TensorMeta) -> torch.Tensor:
    """This machine's rows of `meta`, mapped read-only from its file."""
    shape = (meta.rows, *meta.shape[1:])
    size = nbytes(meta.dtype, shape)
    if size == 0:
        return torch.empty(shape, dtype=meta.dtype)
    try:
        fd = os.open(meta.file, os.O_RDONLY)
    except OSError as exc:
        raise SharedMemoryError(f"cannot open {meta.file}, which holds the rows of {meta.name!r}: {exc}") from None
    try:
        if os.fstat(fd).st_size < meta.offset + size:
            raise SharedMemoryError(f"{meta.file} has {os.fstat(fd).st_size} bytes but the rows of {meta.name!r} "
                                    f"end at byte {meta.offset + size}: it changed since its server mapped it")
        buf = mmap.mmap(fd, meta.offset + size, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)
    with warnings.catch_warnings():  # torch warns that the buffer is read-only: every writer checks
        warnings.simplefilter("ignore", UserWarning)
        return tensor_view(buf, meta.dtype, shape, meta.offset)
