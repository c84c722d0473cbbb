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
    appended after the destinations in order of first appearance (as DGL's `to_block`) once
    the edges are grouped by destination, keeping their order within one: the block depends
    on each destination's edges, not on the order they arrived in (the edges of several
    machines arrive as one sorted run each)."""
    dst_nodes = dst_nodes.to(torch.int64).contiguous()
    src, dst_row, eids = (a.to(torch.int64).contiguous() for a in (src, dst_row, eids))
    grouped = dst_row.numel() <= 1 or bool((dst_row[1:] >= dst_row[:-1]).all())
    native = _relabel_native(dst_nodes, src, None if grouped else (dst_row, eids))
    if native is not None:
        src_nodes, src_row, regrouped = native
        if regrouped is not None:
            dst_row, eids = regrouped
    else:
        if not grouped:
            order = torch.argsort(dst_row, stable=True)
            src, dst_row, eids = (a.index_select(0, order) for a in (src, dst_row, eids))
        src_nodes, src_row = _relabel_torch(dst_nodes, src)
    return Block(src_nodes, dst_nodes, torch.stack([src_row, dst_row]), eids)


_tables = threading.local()  # per thread: the C relabel's hash table, reused (see sampling.c)
_MAX_ID = (1 << 40) - 2  # the table's tags hold id + 1 in 40 bits
_MAX_EPOCH = (1 << 23) - 1


def _relabel_native(dst: torch.Tensor, src: torch.Tensor, regroup: tuple[torch.Tensor, torch.Tensor] | None):
    """In C (`native/sampling.c`): (distinct ids, local id of each source, and with `regroup`
    = (rows, eids) the edges' rows and eids grouped by row, the local ids in that order too);
    None when the kernels are not built or an id does not fit the table's tags."""
    lib = kernels()
    if lib is None or not all(not x.numel() or 0 <= int(x.min()) <= int(x.max()) <= _MAX_ID for x in (dst, src)):
        return None
    nd, ns = dst.numel(), src.numel()
    nodes, local = torch.empty(nd + ns, dtype=torch.int64), torch.empty(ns, dtype=torch.int64)
    rows = eids = counts = out_rows = out_eids = None
    if regroup is not None:
        rows, eids = regroup
        out_rows, out_eids = torch.empty_like(rows), torch.empty_like(eids)
    ptr = lambda a: None if a is None else a.data_ptr()  # noqa: E731
    # the table grows (doubling) until the distinct ids fill at most half of it, and stays
    need = 1 << max(4, (2 * nd + 2).bit_length())
    while True:
        epoch = getattr(_tables, "epoch", _MAX_EPOCH) + 1
        if getattr(_tables, "cap", 0) < need or epoch > _MAX_EPOCH:  # grow, or start over when epochs run out
            cap = max(need, getattr(_tables, "cap", 0))
            _tables.table, _tables.cap, epoch = torch.zeros(2 * cap, dtype=torch.int64), cap, 1
        _tables.epoch = epoch
        if regroup is not None:
            counts = torch.zeros(nd + 1, dtype=torch.int64)
        n = lib.relabel(nd, dst.data_ptr(), ns, src.data_ptr(), _tables.cap, epoch, _tables.table.data_ptr(),
                        nodes.data_ptr(), local.data_ptr(), ptr(rows), ptr(eids), ptr(counts), ptr(out_rows),
                        ptr(out_eids))
        if n != -1:
            break
        need = 2 * _tables.cap
    if n == -2:
        raise InputError("the destination nodes of a block must be distinct")
    if n == -3:
        raise IndexError(f"destination rows must lie in [0, {nd})")
    return nodes[:n], local, None if regroup is None else (out_rows, out_eids)


def _relabel_torch(dst: torch.Tensor, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(distinct ids: `dst` then new sources by first appearance, local id of each source)."""
    nd, ns = dst.numel(), src.numel()
    uniq, inverse = torch.unique(torch.cat([dst, src]), return_inverse=True)
    if torch.unique(inverse[:nd]).numel() < nd:
        raise InputError("the destination nodes of a block must be distinct")
    first = torch.full((uniq.numel(),), nd + ns, dtype=torch.int64)
    first.scatter_reduce_(0, inverse, torch.arange(nd + ns), reduce="amin")
    order = torch.argsort(first)  # local id -> index into uniq
    local = torch.empty_like(order)
    local[order] = torch.arange(order.numel())
    return uniq[order], local[inverse[nd:]]
