"""The output folder of a partitioning holds one graph's partition: every graph writes
`part<i>/` and `mapping/`, so a second graph's files would replace the first's. Writing
another graph there is refused unless asked for; the partition a folder held is removed
config first, and the new config is written last and whole, so a crash while writing leaves
no config pointing at half-written files (a later run finds no partition, never a broken one).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import PartitionError
from .layout import PartitionConfig

_PART_DIR = re.compile(r"part(\d+)")


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
