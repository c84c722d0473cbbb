"""The input graph's in-edges grouped by destination, and its degrees, built while METIS runs.

Relabelling walks this index in the new node order, so each partition's edges come out
already grouped by their new destination: a partition's CSC needs no sort of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..arrays import concat_ranges, offsets


@dataclass
class InEdges:
    indptr: np.ndarray  # (num_nodes + 1,) int64: where each destination's in-edges start in `eids`
    eids: np.ndarray  # int64 edge ids grouped by destination, ascending within a destination
    out_degree: np.ndarray  # int64 per node
    src: np.ndarray  # the graph's source ids, by edge id (a view, not a copy)

    @classmethod
    def build(cls, src: np.ndarray, dst: np.ndarray, num_nodes: int) -> "InEdges":
        """One single-threaded sort (it runs beside METIS and should take one core, not two):
        keys dst << 32 | edge id, whose low halves are then the grouped edge ids.

        No temporary as big as the edges: this thread's malloc arena would keep it through
        METIS's peak (numpy's bincount copies its input: torch's does not)."""
        m = dst.size
        if m < 2**32 and num_nodes < 2**31:
            eids = np.left_shift(dst, 32)
            step = 1 << 17
            for i in range(0, m, step):
                eids[i:i + step] |= np.arange(i, min(m, i + step), dtype=np.int64)
            eids.sort()
            eids &= 0xFFFFFFFF
        else:
            eids = np.argsort(dst, kind="stable")
        degree = [torch.bincount(torch.from_numpy(a), minlength=num_nodes).numpy() for a in (dst, src)]
        return cls(offsets(degree[0]), eids, degree[1], src)

    def in_degree(self, nodes: np.ndarray) -> np.ndarray:
        return self.indptr[nodes + 1] - self.indptr[nodes]

    def of(self, nodes: np.ndarray, degree: np.ndarray | None = None) -> np.ndarray:
        """Edge ids of the in-edges of `nodes`, node after node (`degree`: their in-degrees, if known)."""
        return self.eids[concat_ranges(self.indptr, nodes, degree)]
