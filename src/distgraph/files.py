"""Files a job writes hold its user's model and data (checkpoints, partitions, embeddings,
copied workspaces): they are created readable by their owner only (files 0600, folders
0700), whatever the user's umask, as the job's shared-memory segments are."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import InputError

JOB_UMASK = 0o077


def make_private() -> None:
    """Give this process, and every process it starts, the job's umask (command-line entry
    points, servers and hosts' agents call it first)."""
    os.umask(JOB_UMASK)


@contextmanager
def private_files() -> Iterator[None]:
    """Create what is written inside readable by its owner only (library calls from a user's
    own process, whose umask is the user's)."""
    old = os.umask(JOB_UMASK)
    try:
        yield
    finally:
        os.umask(old)


def free_bytes(path: Path) -> int:
    """Free space of the file system holding `path` (or its nearest existing parent)."""
    p = Path(path).absolute()
    while not p.exists():
        p = p.parent
    return shutil.disk_usage(p).free


def check_space(path: Path, need: int, what: str) -> None:
    """An `InputError` before work starts when `need` bytes will not fit where `path` is."""
    free = free_bytes(path)
    if need > free:
        raise InputError(f"{what} needs about {need / 2**30:.1f} GiB of disk under {path} and {free / 2**30:.1f} GiB "
                         f"are free; free space or choose another folder")


def write_atomically(path: Path, write: Callable[[Any], None], mode: str = "wb") -> None:
    """Write a file through a temporary one (flushed to disk) and a rename: readers see all of it
    or nothing, never a part. An `OSError` leaves no temporary file."""
    with replacing(path) as tmp:
        with open(tmp, mode) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary file's path beside `path`, renamed over `path` when the block ends; an
    `OSError` in the block leaves no temporary file (the block writes and syncs it)."""
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def link_or_copy(src: Path, dst: Path) -> None:
    """A hard link (the same bytes, no copy), or a copy across file systems."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)
