"""`ArrayGraph`: the ids, types and data of a typed homogeneous graph over numpy arrays.

Heterogeneous graphs are stored as the design's typed homogeneous view: nodes are grouped
by node type (type 0 first), edges by canonical edge type, so a type is a contiguous id
range and a per-type id is the homogeneous id minus the type's offset.

Everything here (checks, types, offsets, data dicts, counts) serves `graph.Graph` too, which
stores torch tensors instead and adds adjacency and id maps: this module does not import
torch, so partitioning an `.npz` from the command line never loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar

import numpy as np

from .arrays import offsets
from .errors import InputError
from .ids import DEFAULT_ETYPE, DEFAULT_NTYPE, CanonicalEtype, as_count, as_id_array, resolve_etype
from .local_scope import LocalScope

if TYPE_CHECKING:
    import torch

    Array = np.ndarray | torch.Tensor  # what a graph's arrays are: numpy in an ArrayGraph, tensors in a Graph

G = TypeVar("G", bound="ArrayGraph")


class DataDict(dict):
    """The data dict of one node or edge type: every assignment is converted by `as_array`
    (the graph's kind of array) and checked to have one row per node/edge."""

    def __init__(self, rows: int, kind: str, key, as_array: Callable[[Any], Array] = np.asarray):
        super().__init__()
        self.rows, self.kind, self.key, self.as_array = rows, kind, key, as_array

    def __setitem__(self, name: str, value) -> None:
        a = self.as_array(value)
        if len(a.shape) == 0 or a.shape[0] != self.rows:
            raise InputError(f"{self.kind} data {name!r} of type {self.key!r} has shape {tuple(a.shape)}; "
                             f"its first dimension must be the number of {self.kind}s ({self.rows})")
        super().__setitem__(name, a)

    def update(self, *args, **kwargs) -> None:
        for name, value in dict(*args, **kwargs).items():
            self[name] = value

    def setdefault(self, name: str, default=None):
        if name not in self:
            self[name] = default
        return self[name]

    def copy(self) -> "DataDict":
        """A new dict of the same type, rows and arrays (the arrays themselves are shared)."""
        out = type(self)(self.rows, self.kind, self.key, self.as_array)
        dict.update(out, self)  # already checked
        return out

    def __ior__(self, other):
        self.update(other)
        return self

    def __reduce__(self):
        return type(self), (self.rows, self.kind, self.key, self.as_array), None, None, iter(self.items())


class TypedView:
    """`g.nodes[ntype]` / `g.edges[etype]`: `.data` is the data dict of that type."""

    def __init__(self, data: dict):
        self.data = data


class TypeViews:
    """`g.nodes` / `g.edges`: indexing by a type name resolves it (one clear error if unknown);
    called, DGL's `g.nodes(ntype)` / `g.edges(form, order, etype)` where the graph offers them."""

    def __init__(self, data_of: Callable[[Any], dict], call: Callable | None = None):
        self._data_of, self._call = data_of, call

    def __getitem__(self, key) -> TypedView:
        return TypedView(self._data_of(key))

    def __call__(self, *args, **kwargs):
        if self._call is None:
            raise InputError("this graph's nodes and edges are indexed by type (g.nodes[ntype].data), not listed")
        return self._call(*args, **kwargs)


class ArrayGraph(LocalScope):
    """A directed multigraph with optional node and edge types, over numpy arrays.

    `src`/`dst` are int64 homogeneous ids; `ntype_offsets`/`etype_offsets` give each type's
    id range. Subclasses change the kind of array through `_ids` and `as_array` only.
    `local_var()` / `local_scope()` give data dicts of their own, as in DGL.
    """

    _frame_attrs = ("_ndata", "_edata")

    def __init__(
        self,
        src,
        dst,
        num_nodes: int | None = None,
        ndata: Mapping[str, Array] | None = None,
        edata: Mapping[str, Array] | None = None,
        *,
        ntypes: list[str] | None = None,
        ntype_offsets=None,
        canonical_etypes: list[CanonicalEtype] | None = None,
        etype_offsets=None,
        typed_ndata: Mapping[str, Mapping[str, Array]] | None = None,
        typed_edata: Mapping[CanonicalEtype, Mapping[str, Array]] | None = None,
        node_names: np.ndarray | None = None,
    ):
        self.src = self._ids(src, "src")
        self.dst = self._ids(dst, "dst")
        if len(self.src) != len(self.dst):
            raise InputError(f"src has {len(self.src)} ids but dst has {len(self.dst)}; they must pair up")
        max_id = int(max(self.src.max(), self.dst.max())) if len(self.src) else -1
        min_id = int(min(self.src.min(), self.dst.min())) if len(self.src) else 0
        if min_id < 0:
            raise InputError(f"node ids must be >= 0, found {min_id}")
        if max_id >= np.iinfo(np.int64).max:
            raise InputError(f"node id {max_id} leaves no room for the node count in 64 bits: ids are used as they "
                             f"are (the graph would have {max_id + 1} nodes); renumber the nodes from 0")
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

        self._ndata = {t: DataDict(self.num_nodes(t), "node", t, self.as_array) for t in self.ntypes}
        self._edata = {c: DataDict(self.num_edges(c), "edge", c, self.as_array) for c in self.canonical_etypes}
        if ndata:
            self._ndata[self._single(self.ntypes, "ndata")].update(ndata)
        if edata:
            self._edata[self._single(self.canonical_etypes, "edata")].update(edata)
        for ntype, data in (typed_ndata or {}).items():
            self._ndata[self.ntypes[self._ntype_index(ntype)]].update(data)
        for etype, data in (typed_edata or {}).items():
            self._edata[self.to_canonical_etype(etype)].update(data)

    _ids = staticmethod(as_id_array)  # checked ids, as this class stores them
    as_array = staticmethod(np.asarray)  # data and derived arrays, as this class hands them out

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_hetero(
        cls: type[G],
        edges: Mapping[CanonicalEtype, tuple],
        num_nodes_dict: Mapping[str, int],
        ndata: Mapping[str, Mapping[str, Array]] | None = None,
        edata: Mapping[CanonicalEtype, Mapping[str, Array]] | None = None,
    ) -> G:
        """Build the typed homogeneous view from `{(src_type, rel, dst_type): (src, dst)}` with per-type ids."""
        ntypes = list(num_nodes_dict)
        noff = offsets(np.array([as_count(num_nodes_dict[t], f"number of {t!r} nodes") for t in ntypes],
                                dtype=np.int64))
        index = {t: i for i, t in enumerate(ntypes)}
        srcs, dsts, eoff = [], [], [0]
        for c, (s, d) in edges.items():
            if len(c) != 3 or c[0] not in index or c[2] not in index:
                raise InputError(f"edge type {c!r} must be (src_type, relation, dst_type) with types among {ntypes}")
            s, d = cls._ids(s, f"src of {c}"), cls._ids(d, f"dst of {c}")
            if len(s) != len(d):
                raise InputError(f"edge type {c}: src has {len(s)} ids but dst has {len(d)}; they must pair up")
            for ids, t in ((s, c[0]), (d, c[2])):
                if len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= num_nodes_dict[t]):
                    raise InputError(f"edge type {c}: {t} ids must lie in [0, {num_nodes_dict[t]}), "
                                     f"found [{int(ids.min())}, {int(ids.max())}]")
            srcs.append(np.asarray(s) + noff[index[c[0]]])
            dsts.append(np.asarray(d) + noff[index[c[2]]])
            eoff.append(eoff[-1] + len(s))
        return cls(
            np.concatenate(srcs) if srcs else np.zeros(0, dtype=np.int64),
            np.concatenate(dsts) if dsts else np.zeros(0, dtype=np.int64),
            int(noff[-1]),
            ntypes=ntypes,
            ntype_offsets=noff,
            canonical_etypes=list(edges),
            etype_offsets=eoff,
            typed_ndata=ndata,
            typed_edata=edata,
        )

    def _offsets(self, given, num_types: int, total: int, what: str) -> Array:
        if given is None:
            if num_types != 1:
                raise InputError(f"{what} is required when there are {num_types} types")
            return self.as_array(np.array([0, total], dtype=np.int64))
        off = np.asarray(given, dtype=np.int64).reshape(-1)
        if off.size != num_types + 1 or int(off[0]) != 0 or int(off[-1]) != total or bool((np.diff(off) < 0).any()):
            raise InputError(f"{what} must be {num_types + 1} non-decreasing offsets from 0 to {total}, got {off.tolist()}")
        return self.as_array(off)

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
            return len(self.src)
        i = self.get_etype_id(etype)
        return int(self.etype_offsets[i + 1] - self.etype_offsets[i])

    number_of_nodes = num_nodes
    number_of_edges = num_edges

    def node_type_ids(self) -> Array:
        """Node-type id of every node (derived from the type offsets)."""
        return self.as_array(_type_ids(self.ntype_offsets))

    def edge_type_ids(self) -> Array:
        """Edge-type id of every edge (derived from the type offsets)."""
        return self.as_array(_type_ids(self.etype_offsets))

    def in_degrees(self) -> Array:
        """In-degree of every node."""
        return self.as_array(np.bincount(np.asarray(self.dst), minlength=self._num_nodes))

    def out_degrees(self) -> Array:
        """Out-degree of every node."""
        return self.as_array(np.bincount(np.asarray(self.src), minlength=self._num_nodes))

    # ------------------------------------------------------------------------ data
    @property
    def ndata(self) -> DataDict:
        return self._ndata[self._single(self.ntypes, "ndata")]

    @property
    def edata(self) -> DataDict:
        return self._edata[self._single(self.canonical_etypes, "edata")]

    @property
    def nodes(self) -> TypeViews:
        """`g.nodes[ntype].data`; `g.nodes(ntype)`: the per-type ids of that type's nodes."""
        return TypeViews(lambda ntype: self._ndata[self.ntypes[self._ntype_index(ntype)]],
                         lambda ntype=None: self.as_array(np.arange(self.num_nodes(self._ntype_or_only(ntype)))))

    @property
    def edges(self) -> TypeViews:
        """`g.edges[etype].data`; `g.edges(form="uv", order="eid", etype=None)`: DGL's edge list."""
        return TypeViews(lambda etype: self._edata[self.to_canonical_etype(etype)], self._edge_list)

    def _ntype_or_only(self, ntype: str | None) -> str:
        return self._single(self.ntypes, "ntype") if ntype is None else self.ntypes[self._ntype_index(ntype)]

    def type_edges(self, etype=None) -> tuple[Array, Array]:
        """(source, destination) per-type ids of the edges of `etype` (the only one when None), by edge id."""
        i = self.get_etype_id(etype)
        c = self.canonical_etypes[i]
        lo, hi = int(self.etype_offsets[i]), int(self.etype_offsets[i + 1])
        # an edge type's sources are of one node type, and its destinations too
        return (self.src[lo:hi] - self.ntype_offsets[self._ntype_index(c[0])],
                self.dst[lo:hi] - self.ntype_offsets[self._ntype_index(c[2])])

    def _edge_list(self, form: str = "uv", order: str = "eid", etype=None):
        """DGL's `edges()`: per-type (source, destination) ids ('uv'), edge ids ('eid') or all three."""
        if order not in ("eid", "srcdst"):
            raise InputError(f"order must be 'eid' or 'srcdst', got {order!r}")
        u, v = self.type_edges(etype)
        ids = self.as_array(np.arange(len(u), dtype=np.int64))
        if order == "srcdst":
            perm = self.as_array(np.lexsort((np.asarray(v), np.asarray(u))))
            u, v, ids = u[perm], v[perm], ids[perm]
        views = {"uv": (u, v), "eid": ids, "all": (u, v, ids)}
        if form not in views:
            raise InputError(f"form must be 'uv', 'eid' or 'all', got {form!r}")
        return views[form]

    all_edges = _edge_list

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(num_nodes={self._num_nodes}, num_edges={self.num_edges()}, "
                f"ntypes={self.ntypes}, etypes={self.canonical_etypes})")


def _type_ids(type_offsets) -> np.ndarray:
    """The type of every id of ranges given by their offsets."""
    off = np.asarray(type_offsets)
    return np.repeat(np.arange(off.size - 1, dtype=np.int64), np.diff(off))


def add_reverse_edges(g: G, prefix: str = "rev-") -> G:
    """`g` with, for every edge type (src, rel, dst), a type (dst, prefix + rel, src) holding its
    edges reversed (what DGL's RGCN example does to ogbn-mag before partitioning, so that
    every node type is reached); data stays on the original types. Same class as `g`."""
    edges, ndata, edata = {}, {}, {}
    for c in g.canonical_etypes:
        src, dst = g.type_edges(c)
        edges[c] = (src, dst)
        edges[(c[2], prefix + c[1], c[0])] = (dst, src)
        edata[c] = dict(g.edges[c].data)
    for t in g.ntypes:
        ndata[t] = dict(g.nodes[t].data)
    return type(g).from_hetero(edges, {t: g.num_nodes(t) for t in g.ntypes}, ndata, edata)
