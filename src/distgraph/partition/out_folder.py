"""The output folder of a partitioning holds one graph's partition: every graph writes
`part<i>/` and `mapping/`, so a second graph's files would replace the first's. Writing
another graph there is refused unless asked for; the partition a folder held is removed
config first, and the new config is written last and whole, so a crash while writing leaves
no config pointing at half-written files (a later run finds no partition, never a broken one).

While a partitioning writes, it holds a lock in the folder (`.distgraph.lock`, an `flock`
released by the kernel when the process ends however it ends), so a second one into the same
folder is refused at once. A run that fails or is interrupted removes the folder if it made
it, else the files of its own that no config names.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
from collections.abc import Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from pathlib import Path

from ..errors import PartitionError
from .layout import PartitionConfig

_PART_DIR = re.compile(r"part(\d+)")
LOCK = ".distgraph.lock"


@contextmanager
def output_folder(out: Path) -> Iterator[None]:
    """Hold `out` (made if missing) for one partitioning: another one there is refused while
    this runs; on any failure (an error, Ctrl-C) what this run made goes: the folder if it
    made it, else its partition files that no config names."""
    made = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PartitionError(f"cannot create the output folder {out}: {exc.strerror or exc}") from None
    lock = open(out / LOCK, "a")
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        raise PartitionError(f"another partitioning is writing into {out} (it holds {out / LOCK}); wait for it to "
                             f"end, or choose another output folder") from None
    try:
        yield
    except BaseException:
        discard(out, made)
        raise
    finally:
        if out.is_dir():
            (out / LOCK).unlink(missing_ok=True)
        lock.close()


def discard(out: Path, made: bool) -> None:
    """Remove what a failed partitioning left in `out`: all of it when this run made the folder,
    else the part and mapping files no config names (an earlier partition stays whole)."""
    if made:
        shutil.rmtree(out, ignore_errors=True)
        return
    named = {f.resolve() for c in partitions_in(out) for f in c.files()}
    for d in [out / "mapping", *(d for d in out.iterdir() if _PART_DIR.fullmatch(d.name))]:
        if not d.is_dir():
            continue
        for f in d.iterdir():
            if f.suffix == ".npy" and f.resolve() not in named:
                f.unlink(missing_ok=True)
        if not any(d.iterdir()):
            d.rmdir()


@contextmanager
def cancelled_on_error(pool: Executor) -> Iterator[None]:
    """Cancel `pool`'s jobs not yet started when the block fails (Ctrl-C does not wait for them)."""
    try:
        yield
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise


def partitions_in(out: Path) -> list[PartitionConfig]:
    """The partition configs in folder `out` (JSON files that are none are not ours: left alone)."""
    found = []
    for f in sorted(out.glob("*.json")):
        try:
            found.append(PartitionConfig.load(f))
        except PartitionError:
            continue
    return found


def check_out(out: Path, graph_name: str, overwrite: bool) -> None:
    """Refuse to write `graph_name` into a folder holding another graph's partition, unless `overwrite`."""
    others = [c for c in partitions_in(out) if c.path.name != f"{graph_name}.json"]
    if others and not overwrite:
        held = ", ".join(f"{c.graph_name!r} ({c.path})" for c in others)
        raise PartitionError(f"{out} already holds the partition of graph {held}; partitioning {graph_name!r} there "
                             f"would overwrite its files. Choose another output folder, or replace it with "
                             f"--overwrite (partition_graph(..., overwrite=True))")


def clear_out(out: Path, num_parts: int) -> None:
    """Remove every partition in `out` (each config before its files, which a crash could
    otherwise leave half-deleted under a config) and the `part<i>/` folders from i =
    `num_parts` on that the new one does not use. Only listed files inside `out` and `.npy`
    files of unused part folders are removed; anything else stays."""
    root = out.resolve()
    for config in partitions_in(out):
        config.path.unlink()
        for f in config.files():
            if f.resolve().is_relative_to(root):
                f.unlink(missing_ok=True)
    for d in out.iterdir():
        m = _PART_DIR.fullmatch(d.name)
        if m and int(m.group(1)) >= num_parts and d.is_dir():
            for f in d.glob("*.npy"):
                f.unlink()
            if not any(d.iterdir()):
                d.rmdir()


def write_config(path: Path, text: str) -> None:
    """Write a config whole or not at all: into a temporary file, then renamed over `path`."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
