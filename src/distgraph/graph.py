"""`Graph`: a typed homogeneous graph (COO plus node/edge type offsets) over torch tensors,
the input to partitioning and to sampling in memory.

Its ids, types, offsets and data dicts are `array_graph.ArrayGraph`'s (one implementation,
torch-free); this adds what needs torch: tensors, cached CSR/CSC and the id maps.
"""

from __future__ import annotations

import numpy as np
import torch

from .array_graph import (  # re-exported: modules and users import them from here
    DEFAULT_ETYPE, DEFAULT_NTYPE, ArrayGraph, CanonicalEtype, DataDict, TypeViews, as_count, as_id_array,
    resolve_etype,
)
from .errors import InputError

__all__ = ["DEFAULT_ETYPE", "DEFAULT_NTYPE", "CanonicalEtype", "DataDict", "Graph", "TypeViews", "as_count",
           "as_id_tensor", "as_selection", "is_mask", "per_type", "resolve_etype", "typed_indptr"]


def as_id_tensor(values, what: str) -> torch.Tensor:
    """Convert ids (1-D, or a scalar for one id) to a 1-D int64 tensor; other shapes and dtypes are clear errors."""
    if not isinstance(values, torch.Tensor):
        return torch.from_numpy(as_id_array(values, what))
    t = values
    if t.dim() > 1:
        raise InputError(f"{what} must be a 1-D array of ids, got shape {tuple(t.shape)}; flatten it or pass one column")
    if t.numel() and (t.dtype.is_floating_point or t.dtype == torch.bool or t.dtype.is_complex):
        raise InputError(f"{what} must be integer ids, got dtype {t.dtype}; cast them to int64")
    return t.reshape(-1).to(torch.int64)


def is_mask(t: torch.Tensor, count: int) -> bool:
    """Whether the 1-D `t` over an id space of `count` reads as a mask (nonzero = selected), as
    DGL reads one: bool and float values as long as the space always; integers as long as the
    space when they hold only 0 and 1 and repeat a value (distinct ids covering every id, as
    `torch.arange(count)`, stay ids)."""
    if t.dim() != 1 or t.numel() != count or t.dtype.is_complex:
        return False
    if t.dtype == torch.bool or t.dtype.is_floating_point:
        return True
    if not t.numel() or int(t.min()) < 0 or int(t.max()) > 1:
        return False
    return count > 2 or torch.unique(t).numel() < count


def as_selection(values, count: int, what: str) -> torch.Tensor:
    """The int64 ids that `values` selects out of `count`: the nonzero positions of a mask of
    any dtype (bool, integer or float, see `is_mask`), else `values` as ids (order kept). A
    bool or float array of another length is an error naming both lengths."""
    t = values if isinstance(values, torch.Tensor) else torch.as_tensor(np.asarray(values))
    if is_mask(t, count):
        return torch.nonzero(t).flatten()
    if t.numel() and (t.dtype == torch.bool or t.dtype.is_floating_point) and t.dim() == 1:
        raise InputError(f"{what} is a {t.dtype} mask of {t.numel()} values but there are {count}; give one "
                         f"value per node (or edge), or integer ids")
    return as_id_tensor(t, what)


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


def _transform_method(name: str):
    def method(self, *args, **kwargs):
        from . import transforms

        return getattr(transforms, name)(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`distgraph.{name}(g, ...)` as a method of the graph (as DGL offers it)."
    return method


for _name in ("reverse", "add_self_loop", "remove_self_loop", "to_simple"):
    setattr(Graph, _name, _transform_method(_name))
del _name


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
