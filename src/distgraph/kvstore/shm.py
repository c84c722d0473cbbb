"""Tensors in POSIX shared memory (files under /dev/shm), with a JSON manifest beside each.

The first server of a machine creates a tensor's segment, fills it, then publishes a small
manifest (shape, dtype, partition policy, segment name) by an atomic rename; any other
process of that machine (the other servers, the trainers) attaches by reading the
manifest. Names carry the launch session, the graph and the machine, so several machines
and several jobs can share one host. Plain files and `mmap` keep this free of
`multiprocessing`'s resource tracker, which would unlink segments other processes use.
"""

from __future__ import annotations

import json
import mmap
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch

from ..cluster.shm_files import SHM_DIR, SegmentNamer, unlink
from ..errors import DistGraphError
from ..rpc.wire import dtype_name, nbytes, parse_dtype

__all__ = ["SHM_DIR", "SegmentNamer", "unlink", "SharedMemoryError", "TensorMeta", "create_segment",
           "attach_segment", "tensor_view", "publish", "read_manifest"]


class SharedMemoryError(DistGraphError):
    """A shared-memory segment is missing, of the wrong size, or cannot be created."""


@dataclass(frozen=True)
class TensorMeta:
    """What a process needs to attach to a tensor: its global shape, dtype, partition
    policy, and where this machine's rows are: a shared-memory segment, or the data of a
    file every process maps read-only (`kvstore.disk`), or neither (private memory)."""

    name: str
    shape: tuple[int, ...]  # global shape (all machines)
    dtype: torch.dtype
    policy: str
    rows: int  # rows held on this machine
    uid: str  # new for every creation, so a handle to a deleted tensor is recognised as stale
    segment: str  # file name under SHM_DIR; empty unless the rows are in shared memory
    file: str = ""  # absolute path of the file holding the rows (read-only); empty unless served from disk
    offset: int = 0  # byte offset of the rows in `file`

    @property
    def on_disk(self) -> bool:
        """The rows are served read-only from `file`."""
        return bool(self.file)

    def to_json(self) -> dict:
        return {"name": self.name, "shape": list(self.shape), "dtype": dtype_name(self.dtype),
                "policy": self.policy, "rows": self.rows, "uid": self.uid,
                "segment": self.segment, "file": self.file, "offset": self.offset}

    @classmethod
    def from_json(cls, d: dict) -> "TensorMeta":
        file, offset = d["file"], d["offset"]
        if not isinstance(file, str) or type(offset) is not int or offset < 0 or \
                file and (d["segment"] or not os.path.isabs(file)):
            raise ValueError(f"file {file!r} at offset {offset!r} must be an absolute path (or empty) and a "
                             f"non-negative int, and a tensor in a file has no segment")
        return cls(d["name"], tuple(d["shape"]), parse_dtype(d["dtype"]), d["policy"], int(d["rows"]), d["uid"],
                   d["segment"], file, offset)


def _map(path: Path, size: int, create: bool) -> mmap.mmap:
    flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        raise SharedMemoryError(f"shared-memory segment {path} already exists; a previous job with the same "
                                f"session left it behind: delete it") from None
    except FileNotFoundError:
        raise SharedMemoryError(f"shared-memory segment {path} does not exist; its server has exited") from None
    except OSError as exc:
        raise SharedMemoryError(f"cannot open shared-memory segment {path}: {exc}") from None
    try:
        if create:
            os.ftruncate(fd, max(size, 1))
        elif os.fstat(fd).st_size != max(size, 1):
            raise SharedMemoryError(f"shared-memory segment {path} has {os.fstat(fd).st_size} bytes, expected {size}")
        return mmap.mmap(fd, max(size, 1))
    except OSError as exc:
        raise SharedMemoryError(f"cannot map {size} bytes of shared memory at {path}: {exc}; "
                                f"is /dev/shm large enough?") from None
    finally:
        os.close(fd)


def tensor_view(buf: mmap.mmap, dtype: torch.dtype, shape: tuple[int, ...], offset: int = 0) -> torch.Tensor:
    """The bytes of `buf` from `offset` as a tensor (no copy; it keeps `buf` mapped)."""
    size = nbytes(dtype, shape)
    if size == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(buf, dtype=torch.uint8, count=size, offset=offset).view(dtype).reshape(shape)


def create_segment(segment: str, dtype: torch.dtype, shape: tuple[int, ...]) -> torch.Tensor:
    """A new zero-filled shared tensor (tmpfs pages are zero until written). The free space
    is checked first: writing past a full tmpfs would kill the process with SIGBUS."""
    size = nbytes(dtype, shape)
    free = shutil.disk_usage(SHM_DIR).free
    if size > free:
        raise SharedMemoryError(f"a {list(shape)} {dtype} tensor needs {size / 2**30:.2f} GiB of shared memory but "
                                f"{SHM_DIR} has {free / 2**30:.2f} GiB free; enlarge it or use fewer/smaller tensors")
    return tensor_view(_map(SHM_DIR / segment, size, create=True), dtype, shape)


def attach_segment(meta: TensorMeta) -> torch.Tensor:
    """This machine's rows of a tensor created by another process."""
    shape = (meta.rows, *meta.shape[1:])
    return tensor_view(_map(SHM_DIR / meta.segment, nbytes(meta.dtype, shape), create=False), meta.dtype, shape)


def publish(path: Path, meta: TensorMeta) -> None:
    """Write a manifest atomically, so readers never see a half-written one."""
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # private, like the segments
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(meta.to_json()))
    os.replace(tmp, path)


def read_manifest(path: Path) -> TensorMeta | None:
    try:
        return TensorMeta.from_json(json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as exc:
        raise SharedMemoryError(f"shared-memory manifest {path} is corrupt ({exc}); restart the job") from None

