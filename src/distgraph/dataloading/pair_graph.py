"""`PairGraph`: the node pairs a link-prediction mini-batch scores, as the small graph DGL
yields (its `pair_graph` / `neg_pair_graph`): its nodes are the mini-batch's output nodes
(`ndata[NID]` = `blocks[-1].dstdata[NID]`, so row i of the model's output is node i), its
edges the pairs in local node indices, `edata[EID]` the positive edges' ids. Scores are
computed DGL's way (`ndata["h"] = h; apply_edges(fn.u_dot_v("h", "h", "score"))`) or
PyG's (`edge_index`). On a heterogeneous graph it is typed as DGL's is: `ndata[key]` and
`edata[key]` are {type: ...}, `edges(etype=...)` and `apply_edges(..., etype=...)` work per
edge type in per-type local indices."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from ..block import EID, NID, TypedData, TypeSpace, edge_type_of, edge_view, once_each, type_frame
from ..errors import InputError
from ..ids import DEFAULT_ETYPE, DEFAULT_NTYPE
from ..local_scope import LocalScope


@dataclass
class PairTypes:
    """Types of a heterogeneous graph's pair graph: per node and per pair."""

    ntypes: list[str]
    canonical_etypes: list[tuple[str, str, str]]
    node_type: torch.Tensor
    node_tid: torch.Tensor
    edge_type: torch.Tensor  # a negative pair has the type of the positive edge it stands against
    edge_tid: torch.Tensor | None  # per-type edge ids (positive pairs only)

    def arrays(self) -> list[torch.Tensor]:
        return [self.node_type, self.node_tid, self.edge_type] + ([] if self.edge_tid is None else [self.edge_tid])


class _EdgeBatch:
    """What an edge function sees: `src`/`dst` hold the endpoints' data, `data` the edges'."""

    def __init__(self, src: dict, dst: dict, data: dict, u: torch.Tensor, v: torch.Tensor):
        self.src = {k: x.index_select(0, u) for k, x in src.items() if k != NID}
        self.dst = {k: x.index_select(0, v) for k, x in dst.items() if k != NID}
        self.data = data


class PairGraph(LocalScope):
    """Node pairs over `nodes` (global ids, kept as `node_ids`): edge i is (nodes[src[i]], nodes[dst[i]]).
    `local_scope()` / `local_var()` keep data set meanwhile away from it (DGL's)."""

    _frame_attrs = ("_n", "_e")

    def __init__(self, nodes: torch.Tensor, src: torch.Tensor, dst: torch.Tensor, eids: torch.Tensor | None = None,
                 types: PairTypes | None = None):
        self.node_ids, self.edge_index, self.types = nodes, torch.stack([src, dst]), types
        self._eids = eids
        if types is None:
            self._n = {DEFAULT_NTYPE: {NID: nodes}}
            self._e = {DEFAULT_ETYPE: {} if eids is None else {EID: eids}}
        else:
            self._n = {t: {NID: types.node_tid[types.node_type == i]} for i, t in enumerate(types.ntypes)}
            self._e = {c: ({} if types.edge_tid is None else {EID: types.edge_tid[types.edge_type == i]})
                       for i, c in enumerate(types.canonical_etypes)}

    @property
    def ndata(self) -> TypedData:
        return TypedData(self._n)

    @property
    def edata(self) -> TypedData:
        return TypedData(self._e)

    @property
    def eids(self) -> torch.Tensor:
        """Global ids of the edges (positive pairs), empty for negative pairs."""
        return self._eids if self._eids is not None else self.edge_index.new_empty(0)

    @property
    def ntypes(self) -> list[str]:
        return list(self._n)

    @property
    def canonical_etypes(self) -> list[tuple[str, str, str]]:
        return list(self._e)

    def num_nodes(self, ntype=None) -> int:
        if ntype is None:
            return int(self.node_ids.numel())
        return int(type_frame(self._n, ntype, "pair graph")[NID].numel())

    def num_edges(self, etype=None) -> int:
        if etype is None or self.types is None:
            return int(self.edge_index.shape[1])
        return int(self._typed(self._etype(etype))[0].shape[1])

    number_of_nodes = num_nodes
    number_of_edges = num_edges

    def _etype(self, etype) -> tuple[str, str, str]:
        return edge_type_of(etype, self._e, self.canonical_etypes, "pair graph")

    def _typed(self, c: tuple[str, str, str]) -> tuple[torch.Tensor, torch.Tensor]:
        """(per-type local (src, dst) indices, positions here) of the pairs of type `c`."""
        t = self.types
        at = torch.nonzero(t.edge_type == t.canonical_etypes.index(c)).flatten()
        order = torch.argsort(t.node_type, stable=True)  # each node's position among its type's
        counts = torch.bincount(t.node_type, minlength=len(t.ntypes))
        index = torch.empty_like(order)
        index[order] = self._positions(order.numel()) - (torch.cumsum(counts, 0) - counts)[t.node_type[order]]
        return index[self.edge_index[:, at]], at

    @property
    def nodes(self) -> TypeSpace:
        """DGL's `nodes`: `nodes[ntype].data` is that type's data, `nodes(ntype)` the local ids."""
        return TypeSpace(self._n, lambda ntype=None: self._positions(self.num_nodes(ntype)), "pair graph")

    def _positions(self, n: int) -> torch.Tensor:
        """0 .. n-1 on this pair graph's device."""
        return torch.arange(n, device=self.edge_index.device)

    @property
    def edges(self) -> TypeSpace:
        """DGL's `edges`: `edges[etype].data` is that type's data, `edges(form, order, etype)` the pairs."""
        return TypeSpace(self._e, self.edge_list, "pair graph", self._etype)

    def edge_list(self, form: str = "uv", order: str = "eid", etype=None):
        """Local (source, destination) indices of the pairs ('uv'), their positions ('eid'), or
        all three; on a typed pair graph those of `etype`, in per-type local indices."""
        if self.types is None:
            return edge_view(self.edge_index, form)
        return edge_view(self._typed(self._etype(etype))[0], form)

    def apply_edges(self, func: Callable, edges=None, etype=None) -> None:
        """Compute edge data for every pair (of `etype`): `func` is a built-in of
        `distgraph.function` or a function of an edge batch (`.src`, `.dst`, `.data`) returning
        {name: tensor}."""
        if edges is not None:
            raise InputError("apply_edges computes every pair of a pair graph (edges=None)")
        c = self._etype(etype)
        if self.types is None:
            u, v = self.edge_index
            src = dst = self._n[DEFAULT_NTYPE]
        else:
            (u, v), _ = self._typed(c)
            src, dst = type_frame(self._n, c[0], "pair graph"), type_frame(self._n, c[2], "pair graph")
        self._e[c].update(func(_EdgeBatch(src, dst, self._e[c], u, v)))

    def to(self, device, **kwargs) -> "PairGraph":
        """This pair graph with its arrays (ids and data) on `device` (itself when they are
        there); `kwargs` go to each `Tensor.to` (`non_blocking=True`, ...)."""
        device = torch.device(device)
        if self.edge_index.device == device:
            return self
        return self.map_arrays(once_each(lambda t: t.to(device, **kwargs)))

    def map_arrays(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> "PairGraph":
        """A pair graph whose every array (ids, types and data) is `fn` of this one's (see
        `Block.map_arrays`)."""
        opt = lambda x: None if x is None else fn(x)  # noqa: E731
        t = self.types
        types = None if t is None else PairTypes(t.ntypes, t.canonical_etypes,
                                                 *(opt(a) for a in (t.node_type, t.node_tid, t.edge_type, t.edge_tid)))
        out = PairGraph(fn(self.node_ids), *fn(self.edge_index), opt(self._eids))  # typed below: no per-type split
        out.types = types
        out._n = {k: {name: fn(v) for name, v in f.items()} for k, f in self._n.items()}
        out._e = {c: {name: fn(v) for name, v in f.items()} for c, f in self._e.items()}
        return out

    def data_frames(self) -> dict[str, dict]:
        """The per-type data dicts of the nodes ('node') and pairs ('edge')."""
        return {"node": self._n, "edge": self._e}

    def __repr__(self) -> str:
        return f"PairGraph(num_nodes={self.num_nodes()}, num_edges={self.num_edges()})"
