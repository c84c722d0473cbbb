"""Who does what in a distributed partitioning of H hosts: host h reads the edges
[h E / H, (h + 1) E / H) of the E edges in the metadata's order (only the chunk files holding
them need to be on it) and writes the parts h, h + H, ...; it works in pieces and buckets of a
twentieth of its share of the edges."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_WORKING_EDGES, MAX_WORKING_EDGES = 1 << 16, 1 << 23


@dataclass(frozen=True)
class Segment:
    """Rows [lo, hi) of one edge chunk file: its edge type, its index among the type's files, and
    the (homogeneous) id of its first edge."""

    etype: tuple
    index: int
    first: int
    lo: int
    hi: int


def my_segments(cg, host: int, num_hosts: int) -> list[Segment]:
    """The pieces of the chunk files of a `ChunkedGraph` that hold host `host`'s share of the edges."""
    total = sum(cg.num_edges.values())
    start, end = total * host // num_hosts, total * (host + 1) // num_hosts
    found, first = [], 0
    for c in cg.canonical_etypes:
        for i, f in enumerate(cg.edge_files[c]):
            lo, hi = max(start, first) - first, min(end, first + f.rows) - first
            if hi > lo:
                found.append(Segment(c, i, first, lo, hi))
            first += f.rows
    return found


def host_of_part(part, num_hosts: int):
    return part % num_hosts


def my_parts(num_parts: int, host: int, num_hosts: int) -> list[int]:
    return list(range(host, num_parts, num_hosts))


def working_edges(edges_held: int) -> int:
    """Edges a host handles at once (a piece read, a bucket written): a twentieth of those it holds."""
    return int(np.clip(edges_held // 20, MIN_WORKING_EDGES, MAX_WORKING_EDGES))
