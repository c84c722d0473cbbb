"""`Block`: one layer's bipartite message-flow graph, the unit a GNN layer consumes.

Destination nodes come first among the source nodes (so `h[:num_dst_nodes]` is the
destinations' own input), ids are global, and `edge_index` is PyTorch Geometric's
(2, num_edges) [source row, destination row] over the block's local numbering, with edges
grouped by destination row (so aggregation is a segmented reduction).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Block:
    src_nodes: torch.Tensor  # global ids; the first num_dst_nodes are dst_nodes
    dst_nodes: torch.Tensor  # global ids
    edge_index: torch.Tensor  # (2, E) local (src row, dst row)
    eids: torch.Tensor  # global edge ids

    @property
    def num_src_nodes(self) -> int:
        return int(self.src_nodes.numel())

    @property
    def num_dst_nodes(self) -> int:
        return int(self.dst_nodes.numel())

    @property
    def num_edges(self) -> int:
        return int(self.eids.numel())

    def size(self) -> tuple[int, int]:
        """(num_src_nodes, num_dst_nodes): the `size` PyG's bipartite message passing takes."""
        return self.num_src_nodes, self.num_dst_nodes

    def in_degrees(self) -> torch.Tensor:
        return torch.bincount(self.edge_index[1], minlength=self.num_dst_nodes)

    def dst_offsets(self) -> torch.Tensor:
        """Start of each destination's edges in `edge_index` (edges are grouped by destination)."""
        deg = self.in_degrees()
        return torch.cumsum(deg, 0) - deg


def to_block(dst_nodes: torch.Tensor, src: torch.Tensor, dst_row: torch.Tensor, eids: torch.Tensor) -> Block:
    """Build a block from sampled edges: `src` global source ids, `dst_row` the row of each
    edge's destination in `dst_nodes`. Sources that are not destinations are appended
    after the destinations, in increasing id order. One sort (`torch.unique`) relabels all."""
    dst_nodes = dst_nodes.to(torch.int64)
    nd = dst_nodes.numel()
    uniq, inverse = torch.unique(torch.cat([dst_nodes, src]), return_inverse=True)
    local = torch.full((uniq.numel(),), -1, dtype=torch.int64)
    local[inverse[:nd]] = torch.arange(nd)
    extra = local < 0
    local[extra] = nd + torch.arange(int(extra.sum()))
    src_nodes = torch.empty_like(uniq)
    src_nodes[local] = uniq
    src_row, dst_row = local[inverse[nd:]], dst_row.to(torch.int64)
    if dst_row.numel() > 1 and not bool((dst_row[1:] >= dst_row[:-1]).all()):
        order = torch.argsort(dst_row, stable=True)  # edges grouped by destination (see Block)
        src_row, dst_row, eids = src_row[order], dst_row[order], eids[order]
    return Block(src_nodes, dst_nodes, torch.stack([src_row, dst_row]), eids)
