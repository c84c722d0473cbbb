"""The input graph's in-edges grouped by destination, and its degrees, built while METIS runs.

Relabelling walks this index in the new node order, so each partition's edges come out
already grouped by their new destination: a partition's CSC needs no sort of its own, and
the sources are read in order here instead of at random by edge id.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..array_graph import ArrayGraph
from ..arrays import concat_ranges, gather_in_place, offsets
from ..native import kernels

_STEP = 1 << 17  # entries per piece: no temporary as big as the edges (see `build`)


@dataclass
class InEdges:
    indptr: np.ndarray  # (num_nodes + 1,) int64: where each destination's in-edges start
    eids: np.ndarray | None  # int64 edge ids grouped by destination, ascending within a destination
    srcs: np.ndarray | None  # the source of each of those edges (int32 when node ids fit)
    out_degree: np.ndarray  # int64 per node

    @classmethod
    def build(cls, g: ArrayGraph) -> "InEdges":
        """One single-threaded sort (it runs beside METIS and should take one core, not two) of
        keys dst | edge id | src, packed in 63 bits when they fit: the sorted keys then hold
        the grouped edge ids and their sources, with no random reads of `src`. (A C counting
        sort by destination took twice as long: its 4M scattered writes each miss the cache.)

        Work goes in pieces, with no temporary as big as the edges: this thread's malloc
        arena would keep it through METIS's peak."""
        src, dst, num_nodes = np.asarray(g.src), np.asarray(g.dst), g.num_nodes()
        m = dst.size
        node_bits, edge_bits = max(1, int(num_nodes - 1).bit_length()), max(1, int(m - 1).bit_length())
        idx = np.int32 if num_nodes <= np.iinfo(np.int32).max else np.int64
        if 2 * node_bits + edge_bits <= 63:
            key = np.left_shift(dst, edge_bits + node_bits)
            for i in range(0, m, _STEP):
                piece = key[i:i + _STEP]
                piece |= np.arange(i, i + piece.size, dtype=np.int64) << node_bits
                piece |= src[i:i + _STEP]
            key.sort()
            srcs = np.empty(m, dtype=idx)
            for i in range(0, m, _STEP):
                srcs[i:i + _STEP] = key[i:i + _STEP] & ((1 << node_bits) - 1)
            eids = np.right_shift(key, node_bits, out=key)
            eids &= (1 << edge_bits) - 1
        else:  # too many ids to pack: a stable argsort, then the sources read by edge id
            eids = np.argsort(dst, kind="stable")
            srcs = np.empty(m, dtype=idx)
            for i in range(0, m, _STEP):
                srcs[i:i + _STEP] = src[eids[i:i + _STEP]]
        return cls(offsets(np.asarray(g.in_degrees())), eids, srcs, np.asarray(g.out_degrees()))

    def degrees_only(self) -> "InEdges":
        """This index without its per-edge arrays (12 bytes an edge), for when only degrees are read."""
        return replace(self, eids=None, srcs=None)

    def in_degree(self, nodes: np.ndarray) -> np.ndarray:
        return self.indptr[nodes + 1] - self.indptr[nodes]

    def of(self, nodes: np.ndarray, degree: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(edge ids, sources) of the in-edges of `nodes`, node after node (`degree`: their
        in-degrees, if known). The C kernel copies each node's run directly; numpy first
        needs every position (an array as big as the result), then two gathers."""
        lib = kernels()
        nodes = np.ascontiguousarray(nodes, dtype=np.int64)
        if lib is None:
            at = concat_ranges(self.indptr, nodes, degree)
            srcs = self.srcs[at]
            return gather_in_place(self.eids, at), srcs  # positions -> edge ids, in place
        total = int(self.in_degree(nodes).sum() if degree is None else degree.sum())
        out = (np.empty(total, dtype=self.eids.dtype), np.empty(total, dtype=self.srcs.dtype))
        for values, o in zip((self.eids, self.srcs), out):
            lib.gather_segments(nodes.size, nodes.ctypes.data, self.indptr.ctypes.data, values.ctypes.data,
                                values.itemsize, o.ctypes.data)
        return out
