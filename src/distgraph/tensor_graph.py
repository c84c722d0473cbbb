"""`Graph`: a typed homogeneous graph (COO plus node/edge type offsets) over torch tensors,
the input to partitioning and to sampling in memory.

Its ids, types, offsets and data dicts are `array_graph.ArrayGraph`'s (one implementation,
torch-free); this adds what needs torch: tensors, cached CSR/CSC, the id maps, and DGL's
transforms as methods (`transforms`, a floor below, reads graphs through `ArrayGraph`).
"""

from __future__ import annotations

import numpy as np
import torch

from . import transforms
from .array_graph import ArrayGraph, DataDict, TypeViews
from .errors import InputError
from .ids import (  # as_id_tensor is used here; the others are this module's public names too (__all__)
    DEFAULT_ETYPE, DEFAULT_NTYPE, CanonicalEtype, as_count, as_id_tensor, as_selection, is_mask, resolve_etype,
)

__all__ = ["DEFAULT_ETYPE", "DEFAULT_NTYPE", "CanonicalEtype", "DataDict", "Graph", "TypeViews", "as_count",
           "as_id_tensor", "as_selection", "is_mask", "per_type", "resolve_etype", "typed_indptr"]


def as_tensor(value) -> torch.Tensor:
    """`value` as a tensor, sharing a numpy array's memory (a tensor is returned as it is)."""
    return value if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))


class Graph(ArrayGraph):
    """A directed multigraph with optional node and edge types, over torch tensors.

    `src`/`dst` are int64 homogeneous ids; `ntype_offsets`/`etype_offsets` give each type's
    id range; data values are tensors. CSR (by source) and CSC (by destination) are built on
    first use and cached.
    """

    _ids = staticmethod(as_id_tensor)
    as_array = staticmethod(as_tensor)
    _csr: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None
    _csc: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None

    # DGL's transforms as methods: `g.reverse(...)` is `distgraph.reverse(g, ...)`
    reverse = transforms.reverse
    add_self_loop = transforms.add_self_loop
    remove_self_loop = transforms.remove_self_loop
    to_simple = transforms.to_simple

    # ------------------------------------------------------------ id mapping
    # (the partition book's names: samplers map ids the same way on a Graph and a DistGraph)
    def map_to_per_ntype(self, nids) -> tuple[torch.Tensor, torch.Tensor]:
        """(node type id, per-type id) of homogeneous node ids."""
        return _per_type(as_id_tensor(nids, "node ids"), self.ntype_offsets)

    def map_to_per_etype(self, eids) -> tuple[torch.Tensor, torch.Tensor]:
        """(edge type id, per-type id) of homogeneous edge ids."""
        return _per_type(as_id_tensor(eids, "edge ids"), self.etype_offsets)

    def map_to_homo_nid(self, nids, ntype: str) -> torch.Tensor:
        return as_id_tensor(nids, "node ids") + self.ntype_offsets[self._ntype_index(ntype)]

    def map_to_homo_eid(self, eids, etype) -> torch.Tensor:
        return as_id_tensor(eids, "edge ids") + self.etype_offsets[self.get_etype_id(etype)]

    # ----------------------------------------------------------------- adjacency
    def csc(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(indptr over destinations, source ids, edge ids): in-edges grouped by destination."""
        if self._csc is None:
            self._csc = _compress(self.dst, self.src, self._num_nodes)
        return self._csc

    def csr(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(indptr over sources, destination ids, edge ids): out-edges grouped by source."""
        if self._csr is None:
            self._csr = _compress(self.src, self.dst, self._num_nodes)
        return self._csr

    def typed_indptr(self, edge_dir: str = "in") -> torch.Tensor:
        """The CSC's (CSR's with edge_dir="out") indptr over (node, edge type) pairs, node *
        num_etypes + type: a node's edges, sorted by id, are one run per type."""
        key = f"_typed_{edge_dir}"
        if getattr(self, key, None) is None:
            indptr, _, eids = self.csc() if edge_dir == "in" else self.csr()
            kinds = torch.searchsorted(self.etype_offsets, eids, right=True) - 1
            setattr(self, key, typed_indptr(indptr, kinds, len(self.canonical_etypes)))
        return getattr(self, key)

    def find_edges(self, eids) -> tuple[torch.Tensor, torch.Tensor]:
        """(src, dst) of the given edge ids."""
        eids = as_id_tensor(eids, "edge ids")
        if eids.numel() and (int(eids.min()) < 0 or int(eids.max()) >= self.num_edges()):
            raise InputError(f"edge ids must lie in [0, {self.num_edges()})")
        return self.src[eids], self.dst[eids]


def typed_indptr(indptr: torch.Tensor, slot_types: torch.Tensor, num_types: int) -> torch.Tensor:
    """An indptr over (row, edge type) pairs, row * num_types + type, of a CSC whose rows hold
    their edges sorted by type (`slot_types`: the type of every slot)."""
    rows = torch.repeat_interleave(torch.arange(indptr.numel() - 1), indptr.diff())
    counts = torch.bincount(rows * num_types + slot_types, minlength=(indptr.numel() - 1) * num_types)
    return torch.cat([counts.new_zeros(1), counts.cumsum(0)])


def _per_type(ids: torch.Tensor, offsets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    starts = offsets[:-1].contiguous()
    return per_type(ids, starts, torch.arange(starts.numel()), starts)


def per_type(ids: torch.Tensor, starts: torch.Tensor, block_type: torch.Tensor, shift: torch.Tensor
             ) -> tuple[torch.Tensor, torch.Tensor]:
    """(type, per-type id) of ids numbered in blocks of one type: block b holds the ids from
    starts[b] (ascending) on, of type block_type[b], id - shift[b] within it. In C when built."""
    from .native import kernels

    lib = kernels()
    ids = ids.to(torch.int64).contiguous()
    if lib is not None and ids.numel():
        kinds, tids = torch.empty_like(ids), torch.empty_like(ids)
        starts, block_type, shift = (a.to(torch.int64).contiguous() for a in (starts, block_type, shift))
        if lib.map_types(ids.numel(), ids.data_ptr(), starts.numel(), starts.data_ptr(), block_type.data_ptr(),
                         shift.data_ptr(), kinds.data_ptr(), tids.data_ptr()) < 0:
            raise InputError(f"ids below {int(starts[0])} belong to no type")
        return kinds, tids
    block = torch.searchsorted(starts, ids, right=True) - 1
    return block_type.index_select(0, block), ids - shift.index_select(0, block)


def _compress(key: torch.Tensor, other: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Group edges by `key`: returns (indptr, other endpoint, edge id), stable within a group."""
    order = torch.argsort(key, stable=True)
    indptr = torch.zeros(n + 1, dtype=torch.int64)
    torch.cumsum(torch.bincount(key, minlength=n), 0, out=indptr[1:])
    return indptr, other[order], order
