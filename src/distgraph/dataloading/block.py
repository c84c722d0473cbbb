"""`Block`: one layer's bipartite message-flow graph, the unit a GNN layer consumes.

Destination nodes come first among the source nodes (so `h[:num_dst_nodes]` is the
destinations' own input), ids are global, and `edge_index` is PyTorch Geometric's
(2, num_edges) [source row, destination row] over the block's local numbering.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..arrays import unique_sorted


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

    @property
    def srcdata_ids(self) -> torch.Tensor:
        return self.src_nodes

    def size(self) -> tuple[int, int]:
        """(num_src_nodes, num_dst_nodes): the `size` PyG's bipartite message passing takes."""
        return self.num_src_nodes, self.num_dst_nodes

    def in_degrees(self) -> torch.Tensor:
        return torch.bincount(self.edge_index[1], minlength=self.num_dst_nodes)


def to_block(dst_nodes: torch.Tensor, src: torch.Tensor, dst_row: torch.Tensor, eids: torch.Tensor) -> Block:
    """Build a block from sampled edges: `src` global source ids, `dst_row` the row of each
    edge's destination in `dst_nodes`. Sources that are not destinations are appended
    after the destinations, in increasing id order."""
    dst_nodes = dst_nodes.to(torch.int64)
    order = torch.argsort(dst_nodes)
    sorted_dst = dst_nodes[order]
    pos = torch.searchsorted(sorted_dst, src).clamp(max=max(sorted_dst.numel() - 1, 0))
    is_dst = (sorted_dst[pos] == src) if sorted_dst.numel() else torch.zeros_like(src, dtype=torch.bool)
    extra = torch.from_numpy(unique_sorted(src[~is_dst].numpy()))
    src_row = torch.empty_like(src)
    src_row[is_dst] = order[pos[is_dst]]
    src_row[~is_dst] = dst_nodes.numel() + torch.searchsorted(extra, src[~is_dst])
    return Block(torch.cat([dst_nodes, extra]), dst_nodes, torch.stack([src_row, dst_row.to(torch.int64)]), eids)
