"""Who does what in a distributed partitioning of H hosts: host h reads the edge chunk files
h, h + H, h + 2H, ... (in the metadata's order) and writes the parts h, h + H, ...; it works
in pieces and buckets of a twentieth of its share of the edges."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_WORKING_EDGES, MAX_WORKING_EDGES = 1 << 16, 1 << 23


@dataclass(frozen=True)
class EdgeFile:
    """One edge chunk file: its edge type, its index among the type's files, its first edge id
    (homogeneous) and its rows."""

    etype: tuple
    index: int
    first: int
    rows: int


def edge_files(cg) -> list[EdgeFile]:
    """Every edge chunk file of a `ChunkedGraph`, in edge id order."""
    found, first = [], 0
    for c in cg.canonical_etypes:
        for i, f in enumerate(cg.edge_files[c]):
            found.append(EdgeFile(c, i, first, f.rows))
            first += f.rows
    return found


def my_files(cg, host: int, num_hosts: int) -> list[EdgeFile]:
    return edge_files(cg)[host::num_hosts]


def host_of_part(part, num_hosts: int):
    return part % num_hosts


def my_parts(num_parts: int, host: int, num_hosts: int) -> list[int]:
    return list(range(host, num_parts, num_hosts))


def working_edges(edges_held: int) -> int:
    """Edges a host handles at once (a piece read, a bucket written): a twentieth of those it holds."""
    return int(np.clip(edges_held // 20, MIN_WORKING_EDGES, MAX_WORKING_EDGES))
