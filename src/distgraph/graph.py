"""`Graph`: a typed homogeneous graph (COO plus node/edge type ids), the input to partitioning.

Heterogeneous graphs are stored as the design's typed homogeneous view: nodes are grouped
by node type (type 0 first), edges by canonical edge type, so a type is a contiguous id
range and a per-type id is the homogeneous id minus the type's offset.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Mapping

import numpy as np
import torch

from .errors import InputError

DEFAULT_NTYPE = "_N"
DEFAULT_ETYPE = ("_N", "_E", "_N")

CanonicalEtype = tuple[str, str, str]


def resolve_etype(etype, canonical_etypes: list[CanonicalEtype]) -> CanonicalEtype:
    """The canonical edge type named by a (src, rel, dst) tuple, a relation name or a
    'src:rel:dst' string; one clear error when it is unknown or ambiguous."""
    if isinstance(etype, (tuple, list)) and tuple(etype) in canonical_etypes:
        return tuple(etype)
    matches = [c for c in canonical_etypes if etype == c[1] or etype == ":".join(c)]
    if len(matches) != 1:
        raise InputError(f"edge type {etype!r} is {'ambiguous' if matches else 'unknown'}; "
                         f"canonical edge types are {canonical_etypes}")
    return matches[0]


def as_id_tensor(values, what: str) -> torch.Tensor:
    """Convert ids (1-D, or a scalar for one id) to a 1-D int64 tensor; other shapes and dtypes are clear errors."""
    if isinstance(values, torch.Tensor):
        t = values
    else:
        a = np.asarray(values)
        if a.dtype.kind not in "biuf":
            raise InputError(f"{what} must be integer ids, got {a.dtype} values; cast them to int64")
        t = torch.from_numpy(np.ascontiguousarray(a) if a.ndim else a.reshape(1))
    if t.dim() > 1:
        raise InputError(f"{what} must be a 1-D array of ids, got shape {tuple(t.shape)}; flatten it or pass one column")
    if t.numel() and (t.dtype.is_floating_point or t.dtype == torch.bool or t.dtype.is_complex):
        raise InputError(f"{what} must be integer ids, got dtype {t.dtype}; cast them to int64")
    return t.reshape(-1).to(torch.int64)


def as_count(value, what: str) -> int:
    """A non-negative integer count (Python or numpy integer, or a 0-d integer tensor)."""
    try:
        n = operator.index(value)
    except TypeError:
        raise InputError(f"{what} must be one non-negative integer, got {value!r}") from None
    if n < 0:
        raise InputError(f"{what} must be >= 0, got {n}")
    return n


def _checked_rows(value, expected: int, kind: str, key, name: str) -> torch.Tensor:
    """`value` as a tensor whose first dimension is `expected` (the number of nodes or edges of its type)."""
    t = value if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))
    if t.dim() == 0 or t.shape[0] != expected:
        raise InputError(f"{kind} data {name!r} of type {key!r} has shape {tuple(t.shape)}; "
                         f"its first dimension must be the number of {kind}s ({expected})")
    return t


class DataDict(dict):
    """The data dict of one node or edge type: every assignment is checked to have one row per node/edge."""

    def __init__(self, rows: int, kind: str, key):
        super().__init__()
        self.rows, self.kind, self.key = rows, kind, key

    def __setitem__(self, name: str, value) -> None:
        super().__setitem__(name, _checked_rows(value, self.rows, self.kind, self.key, name))

    def update(self, *args, **kwargs) -> None:
        for name, value in dict(*args, **kwargs).items():
            self[name] = value

    def setdefault(self, name: str, default=None):
        if name not in self:
            self[name] = default
        return self[name]

    def __ior__(self, other):
        self.update(other)
        return self

    def __reduce__(self):
        return type(self), (self.rows, self.kind, self.key), None, None, iter(self.items())


class TypedView:
    """`g.nodes[ntype]` / `g.edges[etype]`: `.data` is the data dict of that type."""

    def __init__(self, data: dict):
        self.data = data


class TypeViews:
    """`g.nodes` / `g.edges`: indexing by a type name resolves it (one clear error if unknown)."""

    def __init__(self, data_of: Callable[[Any], dict]):
        self._data_of = data_of

    def __getitem__(self, key) -> TypedView:
        return TypedView(self._data_of(key))


class Graph:
    """A directed multigraph with optional node and edge types.

    `src`/`dst` are int64 homogeneous ids; `type_offsets` give each type's id range.
    CSR (by source) and CSC (by destination) are built on first use and cached.
    """

    def __init__(
        self,
        src,
        dst,
        num_nodes: int | None = None,
        ndata: Mapping[str, torch.Tensor] | None = None,
        edata: Mapping[str, torch.Tensor] | None = None,
        *,
        ntypes: list[str] | None = None,
        ntype_offsets=None,
        canonical_etypes: list[CanonicalEtype] | None = None,
        etype_offsets=None,
        typed_ndata: Mapping[str, Mapping[str, torch.Tensor]] | None = None,
        typed_edata: Mapping[CanonicalEtype, Mapping[str, torch.Tensor]] | None = None,
        node_names: np.ndarray | None = None,
    ):
        self.src = as_id_tensor(src, "src")
        self.dst = as_id_tensor(dst, "dst")
        if self.src.numel() != self.dst.numel():
            raise InputError(f"src has {self.src.numel()} ids but dst has {self.dst.numel()}; they must pair up")
        max_id = int(max(self.src.max(), self.dst.max())) if self.src.numel() else -1
        min_id = int(min(self.src.min(), self.dst.min())) if self.src.numel() else 0
        if min_id < 0:
            raise InputError(f"node ids must be >= 0, found {min_id}")
        if num_nodes is None:
            num_nodes = max_id + 1
        num_nodes = as_count(num_nodes, "num_nodes")
        if max_id >= num_nodes:
            raise InputError(f"edge endpoint {max_id} is out of range for num_nodes={num_nodes}")
        self._num_nodes = num_nodes

        self.ntypes = list(ntypes) if ntypes else [DEFAULT_NTYPE]
        self.canonical_etypes = [tuple(c) for c in canonical_etypes] if canonical_etypes else [DEFAULT_ETYPE]
        self.ntype_offsets = self._offsets(ntype_offsets, len(self.ntypes), self._num_nodes, "ntype_offsets")
        self.etype_offsets = self._offsets(etype_offsets, len(self.canonical_etypes), self.num_edges(), "etype_offsets")
        self.node_names = node_names

        self._ndata = {t: DataDict(self.num_nodes(t), "node", t) for t in self.ntypes}
        self._edata = {c: DataDict(self.num_edges(c), "edge", c) for c in self.canonical_etypes}
        if ndata:
            self._ndata[self._single(self.ntypes, "ndata")].update(ndata)
        if edata:
            self._edata[self._single(self.canonical_etypes, "edata")].update(edata)
        for ntype, data in (typed_ndata or {}).items():
            self._ndata[self.ntypes[self._ntype_index(ntype)]].update(data)
        for etype, data in (typed_edata or {}).items():
            self._edata[self.to_canonical_etype(etype)].update(data)
        self._csr: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None
        self._csc: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_hetero(
        cls,
        edges: Mapping[CanonicalEtype, tuple],
        num_nodes_dict: Mapping[str, int],
        ndata: Mapping[str, Mapping[str, torch.Tensor]] | None = None,
        edata: Mapping[CanonicalEtype, Mapping[str, torch.Tensor]] | None = None,
    ) -> "Graph":
        """Build the typed homogeneous view from `{(src_type, rel, dst_type): (src, dst)}` with per-type ids."""
        ntypes = list(num_nodes_dict)
        counts = torch.tensor([as_count(num_nodes_dict[t], f"number of {t!r} nodes") for t in ntypes], dtype=torch.int64)
        noff = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)])
        index = {t: i for i, t in enumerate(ntypes)}
        srcs, dsts, eoff = [], [], [0]
        for c, (s, d) in edges.items():
            if len(c) != 3 or c[0] not in index or c[2] not in index:
                raise InputError(f"edge type {c!r} must be (src_type, relation, dst_type) with types among {ntypes}")
            s, d = as_id_tensor(s, f"src of {c}"), as_id_tensor(d, f"dst of {c}")
            if s.numel() != d.numel():
                raise InputError(f"edge type {c}: src has {s.numel()} ids but dst has {d.numel()}; they must pair up")
            for ids, t in ((s, c[0]), (d, c[2])):
                if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= num_nodes_dict[t]):
                    raise InputError(f"edge type {c}: {t} ids must lie in [0, {num_nodes_dict[t]}), "
                                     f"found [{int(ids.min())}, {int(ids.max())}]")
            srcs.append(s + noff[index[c[0]]])
            dsts.append(d + noff[index[c[2]]])
            eoff.append(eoff[-1] + s.numel())
        return cls(
            torch.cat(srcs) if srcs else torch.zeros(0, dtype=torch.int64),
            torch.cat(dsts) if dsts else torch.zeros(0, dtype=torch.int64),
            int(noff[-1]),
            ntypes=ntypes,
            ntype_offsets=noff,
            canonical_etypes=list(edges),
            etype_offsets=eoff,
            typed_ndata=ndata,
            typed_edata=edata,
        )

    @staticmethod
    def _offsets(offsets, num_types: int, total: int, what: str) -> torch.Tensor:
        if offsets is None:
            if num_types != 1:
                raise InputError(f"{what} is required when there are {num_types} types")
            return torch.tensor([0, total], dtype=torch.int64)
        off = torch.as_tensor(np.asarray(offsets), dtype=torch.int64).reshape(-1)
        if off.numel() != num_types + 1 or int(off[0]) != 0 or int(off[-1]) != total or bool((off.diff() < 0).any()):
            raise InputError(f"{what} must be {num_types + 1} non-decreasing offsets from 0 to {total}, got {off.tolist()}")
        return off

    @staticmethod
    def _single(types: list, what: str):
        if len(types) != 1:
            raise InputError(f"{what} needs a single type; use nodes[ntype].data / edges[etype].data on a heterogeneous graph")
        return types[0]

    # ------------------------------------------------------------------ counts / types
    @property
    def is_homogeneous(self) -> bool:
        return len(self.ntypes) == 1 and len(self.canonical_etypes) == 1

    @property
    def etypes(self) -> list[str]:
        return [c[1] for c in self.canonical_etypes]

    def get_ntype_id(self, ntype: str | None) -> int:
        if ntype is None:
            return self._ntype_index(self._single(self.ntypes, "ntype"))
        return self._ntype_index(ntype)

    def _ntype_index(self, ntype: str) -> int:
        try:
            return self.ntypes.index(ntype)
        except ValueError:
            raise InputError(f"unknown node type {ntype!r}; the graph has {self.ntypes}") from None

    def to_canonical_etype(self, etype) -> CanonicalEtype:
        """Resolve a relation name or canonical tuple to the canonical edge type."""
        return resolve_etype(etype, self.canonical_etypes)

    def get_etype_id(self, etype) -> int:
        if etype is None:
            return self.canonical_etypes.index(self._single(self.canonical_etypes, "etype"))
        return self.canonical_etypes.index(self.to_canonical_etype(etype))

    def num_nodes(self, ntype: str | None = None) -> int:
        if ntype is None:
            return self._num_nodes
        i = self._ntype_index(ntype)
        return int(self.ntype_offsets[i + 1] - self.ntype_offsets[i])

    def num_edges(self, etype=None) -> int:
        if etype is None:
            return int(self.src.numel())
        i = self.get_etype_id(etype)
        return int(self.etype_offsets[i + 1] - self.etype_offsets[i])

    number_of_nodes = num_nodes
    number_of_edges = num_edges

    def node_type_ids(self) -> torch.Tensor:
        """Node-type id of every node (derived from the type offsets)."""
        return torch.repeat_interleave(torch.arange(len(self.ntypes)), self.ntype_offsets.diff())

    def edge_type_ids(self) -> torch.Tensor:
        """Edge-type id of every edge (derived from the type offsets)."""
        return torch.repeat_interleave(torch.arange(len(self.canonical_etypes)), self.etype_offsets.diff())

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

    # ------------------------------------------------------------------------ data
    @property
    def ndata(self) -> DataDict:
        return self._ndata[self._single(self.ntypes, "ndata")]

    @property
    def edata(self) -> DataDict:
        return self._edata[self._single(self.canonical_etypes, "edata")]

    @property
    def nodes(self) -> TypeViews:
        return TypeViews(lambda ntype: self._ndata[self.ntypes[self._ntype_index(ntype)]])

    @property
    def edges(self) -> TypeViews:
        return TypeViews(lambda etype: self._edata[self.to_canonical_etype(etype)])

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

    def in_degrees(self) -> torch.Tensor:
        return torch.bincount(self.dst, minlength=self._num_nodes)

    def out_degrees(self) -> torch.Tensor:
        return torch.bincount(self.src, minlength=self._num_nodes)

    def __repr__(self) -> str:
        return (f"Graph(num_nodes={self._num_nodes}, num_edges={self.num_edges()}, "
                f"ntypes={self.ntypes}, etypes={self.canonical_etypes})")


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
