"""`Block`: one layer's bipartite message-flow graph, the unit a GNN layer consumes.

Destination nodes come first among the source nodes (so `h[:num_dst_nodes]` is the
destinations' own input), ids are global, and `edge_index` is PyTorch Geometric's
(2, num_edges) [source row, destination row] over the block's local numbering, with edges
grouped by destination row (so aggregation is a segmented reduction).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import torch

from ..errors import InputError
from ..native import kernels


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
    edge's destination in `dst_nodes` (distinct). Sources that are not destinations are
    appended after the destinations in order of first appearance (as DGL's `to_block`)."""
    dst_nodes = dst_nodes.to(torch.int64).contiguous()
    src_nodes, src_row = _relabel(dst_nodes, src.to(torch.int64).contiguous())
    dst_row = dst_row.to(torch.int64)
    if dst_row.numel() > 1 and not bool((dst_row[1:] >= dst_row[:-1]).all()):
        order = torch.argsort(dst_row, stable=True)  # edges grouped by destination (see Block)
        src_row, dst_row, eids = src_row[order], dst_row[order], eids[order]
    return Block(src_nodes, dst_nodes, torch.stack([src_row, dst_row]), eids)


_tables = threading.local()  # per thread: the C relabel's hash table, reused (see sampling.c)
_MAX_ID = (1 << 40) - 2  # the table's tags hold id + 1 in 40 bits
_MAX_EPOCH = (1 << 23) - 1


def _relabel(dst: torch.Tensor, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(distinct ids: `dst` then new sources by first appearance, local id of each source)."""
    nd, ns = dst.numel(), src.numel()
    lib = kernels()
    if lib is not None and all(not x.numel() or 0 <= int(x.min()) <= int(x.max()) <= _MAX_ID for x in (dst, src)):
        cap = 1 << max(4, (2 * (nd + ns)).bit_length())
        epoch = getattr(_tables, "epoch", _MAX_EPOCH) + 1
        if getattr(_tables, "cap", 0) < cap or epoch > _MAX_EPOCH:  # grow, or start over when epochs run out
            _tables.table, _tables.cap, epoch = torch.zeros(2 * cap, dtype=torch.int64), cap, 1
        _tables.epoch = epoch
        nodes, rows = torch.empty(nd + ns, dtype=torch.int64), torch.empty(ns, dtype=torch.int64)
        n = lib.relabel(nd, dst.data_ptr(), ns, src.data_ptr(), _tables.cap, epoch, _tables.table.data_ptr(),
                        nodes.data_ptr(), rows.data_ptr())
        if n == -2:
            raise InputError("the destination nodes of a block must be distinct")
        if n < 0:
            raise RuntimeError("relabel: hash table too small")
        return nodes[:n], rows
    uniq, inverse = torch.unique(torch.cat([dst, src]), return_inverse=True)
    if torch.unique(inverse[:nd]).numel() < nd:
        raise InputError("the destination nodes of a block must be distinct")
    first = torch.full((uniq.numel(),), nd + ns, dtype=torch.int64)
    first.scatter_reduce_(0, inverse, torch.arange(nd + ns), reduce="amin")
    order = torch.argsort(first)  # local id -> index into uniq
    local = torch.empty_like(order)
    local[order] = torch.arange(order.numel())
    return uniq[order], local[inverse[nd:]]
