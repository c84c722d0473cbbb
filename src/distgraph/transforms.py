"""DGL's graph transforms on a `Graph`, with DGL's names, arguments and edge-data rules:
`reverse`, `add_self_loop`, `remove_self_loop`, `to_simple`, `to_bidirected`. Each returns
a new graph of the same class with the same node types, node counts and node ids; node data
is shared (not copied) where DGL keeps it. Every edge type is handled on its own, in per-type ids.

They read a graph through `ArrayGraph`'s interface (over tensors), so `Graph`, a floor above,
offers them as methods (`g.reverse()`) without this module importing it.
"""

from __future__ import annotations

import warnings
from typing import TypeVar

import torch

from .array_graph import ArrayGraph
from .block import distinct_in_order
from .errors import InputError
from .ids import CanonicalEtype

G = TypeVar("G", bound=ArrayGraph)
_REDUCE = {"sum": "sum", "mean": "mean", "max": "amax", "min": "amin"}
_Edges = dict[CanonicalEtype, tuple[torch.Tensor, torch.Tensor]]


def _graph_only(g, what: str) -> None:
    if getattr(g, "is_block", False):
        raise InputError(f"{what} takes a graph, not a block")
    if not (isinstance(g, ArrayGraph) and isinstance(g.src, torch.Tensor)):  # a `Graph`
        raise InputError(f"{what} takes a distgraph Graph (tensors), got {type(g).__name__}; load it with tensors")


def _rebuild(g: G, edges: _Edges, edata: dict[CanonicalEtype, dict] | None, copy_ndata: bool) -> G:
    """A graph of `g`'s node types and counts over `edges` ({canonical type: per-type (src, dst)})."""
    ndata = {t: dict(g.nodes[t].data) for t in g.ntypes} if copy_ndata else None
    out = type(g).from_hetero(edges, {t: g.num_nodes(t) for t in g.ntypes}, ndata, edata)
    out.node_names = g.node_names
    return out


def _same_node_type(c: CanonicalEtype, what: str) -> None:
    if c[0] != c[2]:
        raise InputError(f"{what} needs edges between nodes of one type, but {c} joins {c[0]!r} to {c[2]!r}")


def reverse(g: G, copy_ndata: bool = True, copy_edata: bool = False, *, share_ndata: bool | None = None,
            share_edata: bool | None = None) -> G:
    """Every edge (u, v) of type (U, E, V) becomes (v, u) of type (V, E, U), edge i staying edge i
    (its data too with `copy_edata`)."""
    _graph_only(g, "reverse")
    copy_ndata = copy_ndata if share_ndata is None else share_ndata
    copy_edata = copy_edata if share_edata is None else share_edata
    edges, edata = {}, {}
    for c in g.canonical_etypes:
        u, v = g.type_edges(c)
        edges[(c[2], c[1], c[0])] = (v, u)
        if copy_edata:
            edata[(c[2], c[1], c[0])] = dict(g.edges[c].data)
    return _rebuild(g, edges, edata, copy_ndata)


def _fill(rows: int, like: torch.Tensor, value) -> torch.Tensor:
    return torch.full((rows, *like.shape[1:]), value, dtype=like.dtype)


def _reduce_in_edges(values: torch.Tensor, dst: torch.Tensor, rows: int, how: str) -> torch.Tensor:
    """Per destination, the `how` ('sum', 'mean', 'max', 'min') of its in-edges' `values`; 0 without any."""
    index = dst.view(-1, *([1] * (values.dim() - 1))).expand_as(values)
    out = torch.zeros((rows, *values.shape[1:]), dtype=values.dtype)
    return out.scatter_reduce_(0, index, values, _REDUCE[how], include_self=False)


def add_self_loop(g: G, edge_feat_names: list[str] | None = None, fill_data: float | str = 1.0,
                  etype=None) -> G:
    """One more edge (v, v) per node v of `etype`'s node type, after that type's edges (existing
    self-loops stay). Their data: `fill_data` (a number) or the 'sum', 'mean', 'max' or 'min'
    of the node's in-edges' data, for `edge_feat_names` (all by default); zeros for the others."""
    _graph_only(g, "add_self_loop")
    c = g.canonical_etypes[g.get_etype_id(etype)]
    _same_node_type(c, "add_self_loop")
    if isinstance(fill_data, str) and fill_data not in _REDUCE:
        raise InputError(f"fill_data must be a number or one of {', '.join(_REDUCE)}, got {fill_data!r}")
    data = g.edges[c].data
    names = list(data) if edge_feat_names is None else list(edge_feat_names)
    unknown = set(names) - set(data)
    if unknown:
        raise InputError(f"edge_feat_names {sorted(unknown)} are not edge data of {c}; it has {list(data)}")
    n = g.num_nodes(c[0])
    u, v = g.type_edges(c)
    loops = torch.arange(n)
    looped = {}
    for name, values in data.items():
        if name not in names:
            added = _fill(n, values, 0)
        elif isinstance(fill_data, str):
            added = _reduce_in_edges(values, v, n, fill_data)
        else:
            added = _fill(n, values, fill_data)
        looped[name] = torch.cat([values, added])
    edges = {d: ((torch.cat([u, loops]), torch.cat([v, loops])) if d == c else g.type_edges(d))
             for d in g.canonical_etypes}
    edata = {d: (looped if d == c else dict(g.edges[d].data)) for d in g.canonical_etypes}
    return _rebuild(g, edges, edata, True)


def remove_self_loop(g: G, etype=None) -> G:
    """The graph without the edges (v, v) of `etype` (every one of them); other edges keep their data."""
    _graph_only(g, "remove_self_loop")
    c = g.canonical_etypes[g.get_etype_id(etype)]
    _same_node_type(c, "remove_self_loop")
    u, v = g.type_edges(c)
    keep = torch.nonzero(u != v).flatten()
    edges = {d: ((u[keep], v[keep]) if d == c else g.type_edges(d)) for d in g.canonical_etypes}
    edata = {d: ({k: x[keep] for k, x in g.edges[d].data.items()} if d == c else dict(g.edges[d].data))
             for d in g.canonical_etypes}
    return _rebuild(g, edges, edata, True)


def _distinct_edges(u: torch.Tensor, v: torch.Tensor, num_dst: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(edge id of the first of each distinct (u, v), in order of first appearance; each edge's
    position among those)."""
    if u.numel() and (int(u.max()) + 1) * num_dst >= 1 << 63:
        raise InputError(f"{num_dst:,} destination nodes are too many to pair node ids in 64 bits")
    return distinct_in_order(u * num_dst + v)


def _coalesce(values: torch.Tensor, first: torch.Tensor, mapping: torch.Tensor, counts: torch.Tensor,
              aggregator: str) -> torch.Tensor:
    if aggregator == "arbitrary":
        return values[first]
    out = torch.zeros((first.numel(), *values.shape[1:]), dtype=values.dtype).index_add_(0, mapping, values)
    if aggregator == "mean":
        out = out / counts.view(-1, *([1] * (values.dim() - 1))).to(out.dtype)
    return out


def to_simple(g: G, return_counts: str | None = "count", writeback_mapping: bool = False,
              copy_ndata: bool = True, copy_edata: bool = False, aggregator: str = "arbitrary"):
    """The graph with parallel edges (same type and endpoints) merged into one, kept in order
    of first appearance; `return_counts` names the edge data that counts the merged edges;
    with `copy_edata`, merged edges' data is the first one's ('arbitrary'), 'sum' or 'mean'.
    With `writeback_mapping`, also each old edge's new id (a dict per type when several)."""
    _graph_only(g, "to_simple")
    if aggregator not in ("arbitrary", "sum", "mean"):
        raise InputError(f"aggregator must be 'arbitrary', 'sum' or 'mean', got {aggregator!r}")
    edges, edata, maps = {}, {}, {}
    for c in g.canonical_etypes:
        u, v = g.type_edges(c)
        first, mapping = _distinct_edges(u, v, g.num_nodes(c[2]))
        counts = torch.bincount(mapping, minlength=first.numel())
        edges[c] = (u[first], v[first])
        edata[c] = {k: _coalesce(x, first, mapping, counts, aggregator) for k, x in g.edges[c].data.items()} \
            if copy_edata else {}
        if return_counts is not None:
            edata[c][return_counts] = counts
        maps[c] = mapping
    out = _rebuild(g, edges, edata, copy_ndata)
    if not writeback_mapping:
        return out
    return out, (next(iter(maps.values())) if len(maps) == 1 else maps)


def to_bidirected(g: G, copy_ndata: bool = False, readonly: bool | None = None) -> G:
    """A simple graph with (u, v) and (v, u) for every edge (u, v), per edge type (each must join
    nodes of one type): the graph's edges, then their reverses, each pair kept once in order of
    first appearance; no edge data; node data shared with `copy_ndata`."""
    _graph_only(g, "to_bidirected")
    if readonly is not None:
        warnings.warn("to_bidirected's readonly is deprecated (as in DGL) and changes nothing", stacklevel=2)
    edges = {}
    for c in g.canonical_etypes:
        _same_node_type(c, "to_bidirected")
        u, v = g.type_edges(c)
        both_u, both_v = torch.cat([u, v]), torch.cat([v, u])
        first, _ = _distinct_edges(both_u, both_v, g.num_nodes(c[2]))
        edges[c] = (both_u[first], both_v[first])
    return _rebuild(g, edges, None, copy_ndata)
