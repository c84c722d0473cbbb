"""New ids after assignment: partition p owns a contiguous id range for every node and edge type.

Nodes are ordered by (partition, node type, original id) and edges by (partition of their
destination, edge type, new destination id, original id), so a type's ids inside a
partition form one range, the partition book is only an array of offsets, and with one
edge type a partition's edges are already in CSC order. Nodes are numbered first, so
node data can be written while the edges are numbered.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..array_graph import ArrayGraph
from ..arrays import group_keys, inverse_permutation, offsets
from .in_edges import InEdges


class _PartRanges:
    ranges: np.ndarray  # (num_parts, num_types, 2) [start, end) in new homogeneous ids

    def part(self, p: int) -> tuple[int, int]:
        """Partition p's ids, all types: [start, end)."""
        return int(self.ranges[p, 0, 0]), int(self.ranges[p, -1, 1])


@dataclass
class NodeOrder(_PartRanges):
    new2old: np.ndarray  # new homogeneous id -> original homogeneous id
    old2new: np.ndarray
    ranges: np.ndarray  # (num_parts, num_ntypes, 2)


@dataclass
class EdgeOrder(_PartRanges):
    new2old: np.ndarray  # new homogeneous edge id -> original edge id
    src: np.ndarray  # original source id of each new edge id
    ranges: np.ndarray  # (num_parts, num_etypes, 2)

    @property
    def by_dst(self) -> bool:
        """Each partition's edges are ordered by new destination: true with one edge type."""
        return self.ranges.shape[1] == 1


def _grouped(key: np.ndarray, num_parts: int, num_types: int) -> tuple[np.ndarray, np.ndarray]:
    """Stable order by key = part * num_types + type, and each (part, type) block's [start, end)."""
    order, starts = group_keys(key, num_parts * num_types)
    ranges = np.stack([starts[:-1], starts[1:]], axis=1).reshape(num_parts, num_types, 2)
    return order, ranges


def relabel_nodes(g: ArrayGraph, parts: np.ndarray, num_parts: int) -> NodeOrder:
    """Number the nodes from a partition assignment."""
    nt = len(g.ntypes)
    key = parts * nt + np.asarray(g.node_type_ids()) if nt > 1 else parts
    order, ranges = _grouped(key, num_parts, nt)
    return NodeOrder(order, inverse_permutation(order), ranges)


def relabel_edges(g: ArrayGraph, parts: np.ndarray, nodes: NodeOrder, in_edges: InEdges) -> EdgeOrder:
    """Number the edges: the in-edges of the nodes in their new order (no sort over the edges);
    with several edge types a stable grouping by (partition, edge type) follows."""
    et = len(g.canonical_etypes)
    num_parts = nodes.ranges.shape[0]
    degree = in_edges.in_degree(nodes.new2old)
    order, src = in_edges.of(nodes.new2old, degree)
    if et == 1:  # part p's edges are the in-edges of its node range
        ranges = offsets(degree)[nodes.ranges[:, [0, -1], [0, 1]]].reshape(num_parts, 1, 2)
    else:
        key = np.repeat(parts[nodes.new2old], degree) * et + np.asarray(g.edge_type_ids())[order]
        within, ranges = _grouped(key, num_parts, et)
        order, src = order[within], src[within]
    return EdgeOrder(order, src, ranges)
