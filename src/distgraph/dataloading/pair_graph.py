"""`PairGraph`: the node pairs a link-prediction mini-batch scores, as the small graph DGL
yields (its `pair_graph` / `neg_pair_graph`): its nodes are the mini-batch's output nodes
(`ndata[NID]` = `blocks[-1].dstdata[NID]`, so row i of the model's output is node i), its
edges the pairs in local node indices, `edata[EID]` the positive edges' ids. Scores are
computed DGL's way (`ndata["h"] = h; apply_edges(fn.u_dot_v("h", "h", "score"))`) or
PyG's (`edge_index`)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

import torch

from ..block import EID, NID, edge_view
from ..errors import InputError


class _EdgeBatch:
    """What an edge function sees: `src`/`dst` hold the endpoints' data, `data` the edges'."""

    def __init__(self, g: "PairGraph"):
        u, v = g.edge_index
        self.src = {k: x.index_select(0, u) for k, x in g.ndata.items() if k != NID}
        self.dst = {k: x.index_select(0, v) for k, x in g.ndata.items() if k != NID}
        self.data = g.edata


class PairGraph:
    """Node pairs over `nodes` (global ids): edge i is (nodes[src[i]], nodes[dst[i]])."""

    def __init__(self, nodes: torch.Tensor, src: torch.Tensor, dst: torch.Tensor, eids: torch.Tensor | None = None):
        self.edge_index = torch.stack([src, dst])
        self.ndata: dict = {NID: nodes}
        self.edata: dict = {} if eids is None else {EID: eids}

    @property
    def eids(self) -> torch.Tensor:
        """Global ids of the edges (positive pairs), empty for negative pairs."""
        return self.edata.get(EID, self.edge_index.new_empty(0))

    def num_nodes(self, ntype=None) -> int:
        return int(self.ndata[NID].numel())

    def num_edges(self, etype=None) -> int:
        return int(self.edge_index.shape[1])

    number_of_nodes = num_nodes
    number_of_edges = num_edges

    def nodes(self, ntype=None) -> torch.Tensor:
        return torch.arange(self.num_nodes())

    def edges(self, form: str = "uv", order: str = "eid", etype=None):
        """Local (source, destination) indices of the pairs ('uv'), their positions ('eid'), or all three."""
        return edge_view(self.edge_index, form)

    def apply_edges(self, func: Callable, edges=None, etype=None) -> None:
        """Compute edge data for every pair: `func` is a built-in of `distgraph.function` or a
        function of an edge batch (`.src`, `.dst`, `.data`) returning {name: tensor}."""
        if edges is not None:
            raise InputError("apply_edges computes every pair of a pair graph (edges=None)")
        self.edata.update(func(_EdgeBatch(self)))

    @contextmanager
    def local_scope(self) -> Iterator["PairGraph"]:
        """Data set inside the block is dropped at its end (DGL's `local_scope`)."""
        saved = dict(self.ndata), dict(self.edata)
        try:
            yield self
        finally:
            self.ndata, self.edata = saved

    def to(self, device, **kwargs) -> "PairGraph":
        device = torch.device(device)
        if self.edge_index.device == device:
            return self
        out = PairGraph(self.ndata[NID].to(device, **kwargs), *self.edge_index.to(device, **kwargs))
        out.ndata = {k: v.to(device, **kwargs) for k, v in self.ndata.items()}
        out.edata = {k: v.to(device, **kwargs) for k, v in self.edata.items()}
        return out

    def __repr__(self) -> str:
        return f"PairGraph(num_nodes={self.num_nodes()}, num_edges={self.num_edges()})"
