"""New ids after assignment: partition p owns a contiguous id range for every node and edge type.

Nodes are ordered by (partition, node type, original id) and edges by (partition of their
destination, edge type, new destination id, original id), so a type's ids inside a
partition form one range, the partition book is only an array of offsets, and with one
edge type a partition's edges are already in CSC order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arrays import inverse_permutation, offsets, small_key_argsort
from ..graph import Graph
from .in_edges import InEdges


@dataclass
class Relabeling:
    node_new2old: np.ndarray  # new homogeneous id -> original homogeneous id
    node_old2new: np.ndarray
    edge_new2old: np.ndarray
    edge_src: np.ndarray  # original source id of each new edge id
    node_ranges: np.ndarray  # (num_parts, num_ntypes, 2) [start, end) in new homogeneous ids
    edge_ranges: np.ndarray  # (num_parts, num_etypes, 2)
    edges_by_dst: bool  # each partition's edges are ordered by new destination (one edge type)

    def part_nodes(self, p: int) -> tuple[int, int]:
        return int(self.node_ranges[p, 0, 0]), int(self.node_ranges[p, -1, 1])

    def part_edges(self, p: int) -> tuple[int, int]:
        return int(self.edge_ranges[p, 0, 0]), int(self.edge_ranges[p, -1, 1])


def _grouped(key: np.ndarray, num_parts: int, num_types: int) -> tuple[np.ndarray, np.ndarray]:
    """Stable order by key = part * num_types + type, and each (part, type) block's [start, end)."""
    order = small_key_argsort(key, num_parts * num_types)
    starts = offsets(np.bincount(key, minlength=num_parts * num_types))
    ranges = np.stack([starts[:-1], starts[1:]], axis=1).reshape(num_parts, num_types, 2)
    return order, ranges


def relabel(g: Graph, parts: np.ndarray, num_parts: int, in_edges: InEdges) -> Relabeling:
    """Compute the new node and edge numbering from a partition assignment.

    The edges are the in-edges of the nodes in their new order (no sort over the edges);
    with several edge types a stable grouping by (partition, edge type) follows."""
    nt, et = len(g.ntypes), len(g.canonical_etypes)
    node_key = parts * nt + g.node_type_ids().numpy() if nt > 1 else parts
    node_order, node_ranges = _grouped(node_key, num_parts, nt)
    degree = in_edges.in_degree(node_order)
    at = in_edges.positions(node_order, degree)
    edge_order, edge_src = in_edges.eids[at], in_edges.srcs[at]
    del at
    if et == 1:  # part p's edges are the in-edges of its node range
        bounds = offsets(degree)[node_ranges[:, [0, -1], [0, 1]]]
        edge_ranges = bounds.reshape(num_parts, 1, 2)
    else:
        edge_key = np.repeat(parts[node_order], degree) * et + g.edge_type_ids().numpy()[edge_order]
        within, edge_ranges = _grouped(edge_key, num_parts, et)
        edge_order, edge_src = edge_order[within], edge_src[within]
    return Relabeling(node_order, inverse_permutation(node_order), edge_order, edge_src, node_ranges, edge_ranges,
                      et == 1)
