"""New node ids as `relabel_nodes` gives them (by part, node type, original id), the buckets
the new id range is cut into, and where every edge goes: its destination's bucket, as
(new destination, new source, original edge id)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...arrays import add_counts, group_keys, inverse_permutation, offsets
from .adjacency import row_buckets
from .buckets import id_dtype
from .source import StreamSource

EndsToNew = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]  # (dst, src) old ids -> their new ids


@dataclass
class Numbering:
    """Part p owns new ids node_ranges[p] (per node type); buckets are cut at `bounds`, each
    inside one part (`bucket_part`)."""

    new2old: np.ndarray
    old2new: np.ndarray
    node_ranges: np.ndarray  # (parts, node types, 2)
    bounds: np.ndarray  # (buckets + 1,) new id boundaries
    bucket_part: np.ndarray  # (buckets,)

    @property
    def part_starts(self) -> np.ndarray:
        return np.concatenate([self.node_ranges[:, 0, 0], [self.new2old.size]])

    def pair(self, dst: np.ndarray, src: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """New ids of both ends of edges: two plain gathers (over one concatenation they take twice as long)."""
        return self.old2new[dst], self.old2new[src]


def number_nodes(source: StreamSource, parts: np.ndarray, num_parts: int, in_deg: np.ndarray,
                 bucket_edges: int) -> Numbering:
    """The numbering of an assignment (`parts`, consumed) and buckets of at most `bucket_edges` in-edges."""
    n, T = source.num_nodes(), len(source.ntypes)
    key = parts * T + source.node_type_ids(np.arange(n)) if T > 1 else parts
    new2old, starts = group_keys(key, num_parts * T)
    del key
    new2old = new2old.astype(id_dtype(n))  # int32 when the ids fit: per-node arrays are the bulk of the memory
    node_ranges = np.stack([starts[:-1], starts[1:]], axis=1).reshape(num_parts, T, 2)
    part_starts = np.concatenate([node_ranges[:, 0, 0], [n]])
    bounds = _buckets_of_parts(in_deg[new2old], part_starts, bucket_edges)
    bucket_part = np.searchsorted(part_starts, bounds[:-1], side="right") - 1
    return Numbering(new2old, inverse_permutation(new2old), node_ranges, bounds, bucket_part)


def _buckets_of_parts(in_deg_new: np.ndarray, part_starts: np.ndarray, bucket_edges: int) -> np.ndarray:
    """Bucket boundaries over new node ids: at most `bucket_edges` in-edges each, cut at every part's start."""
    bounds = [np.zeros(1, dtype=np.int64)]
    for p in range(part_starts.size - 1):
        lo, hi = int(part_starts[p]), int(part_starts[p + 1])
        if hi > lo:
            bounds.append(lo + row_buckets(in_deg_new[lo:hi], bucket_edges)[1:])
    return np.concatenate(bounds)


class EdgeRouter:
    """Sends edges, a piece at a time, to their destination's bucket, counting edges per
    (part, edge type) and the edges cut. `new_ids(dst, src)` gives the new ids of both ends: a
    whole numbering's `pair` on one host, one lookup of their owners' across hosts."""

    def __init__(self, source: StreamSource, new_ids: EndsToNew, bounds: np.ndarray, bucket_part: np.ndarray,
                 part_starts: np.ndarray):
        self.source, self.R = source, len(source.canonical_etypes)
        self.new_ids, self.bounds, self.bucket_part, self.part_starts = new_ids, bounds, bucket_part, part_starts
        self.per_type = np.zeros((part_starts.size - 1) * self.R, dtype=np.int64)
        self.cut = 0

    def route(self, src: np.ndarray, dst: np.ndarray, first: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(bucket of each edge, its columns) for edges with original ids first, first + 1, ..."""
        nd, ns = self.new_ids(dst, src)
        b = np.searchsorted(self.bounds, nd, side="right") - 1
        p = self.bucket_part[b]
        eid = np.arange(first, first + src.size, dtype=np.int64)
        et = self.source.edge_type_ids(eid) if self.R > 1 else 0
        add_counts(self.per_type, p * self.R + et)
        self.cut += int(((ns < self.part_starts[p]) | (ns >= self.part_starts[p + 1])).sum())
        return b, {"dst": nd, "src": ns, "eid": eid}


def edge_ranges(per_type: np.ndarray, num_parts: int, num_etypes: int) -> np.ndarray:
    """New edge id ranges (parts, edge types, 2) from the edge counts per (part, edge type)."""
    at = offsets(per_type)
    return np.stack([at[:-1], at[1:]], axis=1).reshape(num_parts, num_etypes, 2)


def edge_columns(num_nodes: int, num_edges: int) -> dict[str, np.dtype]:
    """The bucket columns of edges (the smallest id types that hold them)."""
    id_t, eid_t = id_dtype(num_nodes), id_dtype(num_edges)
    return {"dst": id_t, "src": id_t, "eid": eid_t}
