"""DGL's GraphBolt switch (`--use_graphbolt`, `use_graphbolt=True`,
`dgl_partition_to_graphbolt`): DGL keeps two partition layouts and two samplers; here one
partition layout (a CSC per partition) and one sampler serve both of DGL's paths, so the
switch is accepted, changes nothing, and says so once per process."""

from __future__ import annotations

import sys
from pathlib import Path

_SAID = False
NOTE = ("use_graphbolt: distgraph's own partitions and sampler serve both of DGL's paths (GraphBolt's and "
        "DistGraph's); nothing changes")


def note_graphbolt(use_graphbolt: bool) -> None:
    """Say once in this process that `use_graphbolt` changes nothing (when it is set)."""
    global _SAID
    if use_graphbolt and not _SAID:
        _SAID = True
        print(f"distgraph: {NOTE}", file=sys.stderr, flush=True)


def dgl_partition_to_graphbolt(part_config: str | Path, *, store_eids: bool = True, store_inner_node: bool = False,
                               store_inner_edge: bool = False, graph_formats=None, n_jobs: int = 1) -> None:
    """DGL's conversion of a partition to GraphBolt's layout: a partition here already serves
    GraphBolt's path, so this checks that `part_config` exists and converts nothing."""
    if not Path(part_config).is_file():
        from .errors import InputError

        raise InputError(f"{part_config} does not exist: give the partition config (<out>/<graph>.json) that "
                         f"`distgraph partition` wrote")
    note_graphbolt(True)
