"""Who does what in a distributed partitioning of H hosts. One rule splits what is read: host h
reads rows [h N / H, (h + 1) N / H) of N (`share_of`), applied to
- the E edges in the metadata's order (homogeneous edge ids): its edge chunk pieces, and the
  same rows of each edge type's data, which travel with the edges;
- each node type's ids, for that type's node data.
Only the chunk files holding its share need to be on a host. Host h writes the parts h, h + H,
...; it works in pieces and buckets of a twentieth of its share of the edges, at most
MAX_WORKING_EDGES: its working arrays (about 150 bytes an edge of a piece or bucket) stay near
80 MB however large its share (smaller pieces cost a round trip each: 2**18 took 10 % longer at 100M edges)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...rpc.wire import WireError

MIN_WORKING_EDGES, MAX_WORKING_EDGES = 1 << 16, 1 << 19


@dataclass(frozen=True)
class Segment:
    """Rows [lo, hi) of one edge chunk file: its edge type, its index among the type's files, and
    the (homogeneous) id of its first edge."""

    etype: tuple
    index: int
    first: int
    lo: int
    hi: int


def share_of(total: int, host: int, num_hosts: int) -> tuple[int, int]:
    """The rows [lo, hi) of `total` that host `host` reads."""
    return total * host // num_hosts, total * (host + 1) // num_hosts


class NodeShare:
    """The old node ids [lo, hi) host `machine` of `num_hosts` owns (`share_of` of the node
    count), every host's bounds, and the check of ids another host sends it."""

    def __init__(self, machine: int, num_nodes: int, num_hosts: int):
        self.machine, self.num_nodes, self.num_hosts = machine, num_nodes, num_hosts
        self.starts = np.array([share_of(num_nodes, h, num_hosts)[0] for h in range(num_hosts)] + [num_nodes],
                               dtype=np.int64)  # host h owns old ids [starts[h], starts[h + 1])
        self.lo, self.hi = share_of(num_nodes, machine, num_hosts)

    def owners(self, ids: np.ndarray) -> np.ndarray:
        """The host owning each of old ids `ids`."""
        return np.searchsorted(self.starts, ids, side="right") - 1

    def check(self, lo: int, hi: int, what: str) -> None:
        """A `WireError` naming this machine unless old ids [lo, hi) are in its share."""
        if not self.lo <= lo <= hi <= self.hi:
            raise WireError(f"machine {self.machine}: {what} {lo}..{hi} are not in its share of the old node ids "
                            f"[{self.lo}, {self.hi}); ask the host that owns them")

    def check_ids(self, ids: np.ndarray, what: str) -> np.ndarray:
        """Received old ids, checked one array of ids of this host's share."""
        if ids.ndim != 1 or ids.dtype.kind not in "iu":
            raise WireError(f"machine {self.machine}: {what} must be one array of integer ids")
        if ids.size:
            self.check(int(ids.min()), int(ids.max()) + 1, what)
        return ids


def my_segments(cg, host: int, num_hosts: int) -> list[Segment]:
    """The pieces of the chunk files of a `ChunkedGraph` that hold host `host`'s share of the edges."""
    start, end = share_of(sum(cg.num_edges.values()), host, num_hosts)
    found, first = [], 0
    for c in cg.canonical_etypes:
        for i, f in enumerate(cg.edge_files[c]):
            lo, hi = max(start, first) - first, min(end, first + f.rows) - first
            if hi > lo:
                found.append(Segment(c, i, first, lo, hi))
            first += f.rows
    return found


def my_rows(kind: str, offsets: np.ndarray, host: int, num_hosts: int) -> list[tuple[int, int]]:
    """Per type, the type's ids [lo, hi) whose data host `host` reads: `kind` "node" (each type
    split on its own) or "edge" (the rows of its share of the edges); `offsets` the types'
    homogeneous id ranges (T + 1)."""
    counts = np.diff(np.asarray(offsets, dtype=np.int64))
    if kind == "node":
        return [share_of(int(n), host, num_hosts) for n in counts]
    start, end = share_of(int(offsets[-1]), host, num_hosts)
    return [(min(max(start - int(o), 0), int(n)), min(max(end - int(o), 0), int(n)))
            for o, n in zip(offsets[:-1], counts)]


def host_of_part(part, num_hosts: int):
    return part % num_hosts


def my_parts(num_parts: int, host: int, num_hosts: int) -> list[int]:
    return list(range(host, num_parts, num_hosts))


def working_edges(edges_held: int, most: int | None = None) -> int:
    """Edges a host handles at once (a piece read, a bucket written): a twentieth of those it
    holds, within [MIN_WORKING_EDGES, `most` or MAX_WORKING_EDGES]."""
    return int(np.clip(edges_held // 20, MIN_WORKING_EDGES, most or MAX_WORKING_EDGES))
