"""`GraphConv`: the graph convolution of Kipf and Welling with DGL's arguments and semantics,
over a block (as `HeteroGraphConv` hands each relation's) or a homogeneous graph.

h_v' = act(sum_{u -> v} c_uv e_uv h_u W + b). With `norm="both"` c_uv = 1/sqrt(out(u) in(v)),
"right" 1/in(v) (the mean), "left" 1/out(u), "none" 1; degrees count the graph's own edges,
clamped to at least 1; e_uv is `edge_weight` (1 without). `weight=False` leaves W out, or
takes it from `forward(..., weight=W)` (what DGL's distributed RGCN example does to share
bases across relations). Messages are summed by one `embedding_bag` over the edges grouped
by destination, so no (edges x features) matrix is built.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import InputError

NORMS = ("none", "both", "right", "left")


def graph_edges(graph) -> tuple[torch.Tensor, torch.Tensor, int, int]:
    """(source rows, destination rows, number of sources, number of destinations) of a block
    or a homogeneous graph."""
    if getattr(graph, "is_block", False):
        u, v = graph.edge_index
        return u, v, graph.num_src_nodes(), graph.num_dst_nodes()
    if not getattr(graph, "is_homogeneous", False):
        raise InputError("GraphConv takes a block or a homogeneous graph; wrap it in HeteroGraphConv for a "
                         "heterogeneous one")
    return graph.src, graph.dst, graph.num_nodes(), graph.num_nodes()


def sum_by_destination(u: torch.Tensor, v: torch.Tensor, num_dst: int, h_src: torch.Tensor,
                       edge_weight: torch.Tensor | None = None) -> torch.Tensor:
    """Row v of the result: the sum over edges u -> v of h_src[u] (times the edge's weight);
    zero where v has no edges. Trailing dimensions of h_src are kept."""
    order = None
    if v.numel() > 1 and not bool((v[1:] >= v[:-1]).all()):  # bags are runs of one destination
        order = torch.argsort(v, stable=True)
        u, v = u[order], v[order]
    if edge_weight is not None:
        edge_weight = edge_weight.reshape(-1).to(h_src.dtype)
        edge_weight = edge_weight if order is None else edge_weight[order]
    counts = torch.bincount(v, minlength=num_dst)
    flat = h_src.reshape(h_src.shape[0], -1)
    out = F.embedding_bag(u, flat, torch.cumsum(counts, 0) - counts, mode="sum", per_sample_weights=edge_weight)
    return out.view(num_dst, *h_src.shape[1:])


def _scaled(h: torch.Tensor, degrees: torch.Tensor, power: float) -> torch.Tensor:
    """Each row of `h` times its degree (clamped to >= 1) to the `power`."""
    scale = degrees.to(h.dtype).clamp(min=1).pow(power)
    return h * scale.view(-1, *([1] * (h.dim() - 1)))


class GraphConv(nn.Module):
    """DGL's `GraphConv(in_feats, out_feats, norm="both", weight=True, bias=True,
    activation=None, allow_zero_in_degree=False)`, called as `conv(graph, feat, weight=None,
    edge_weight=None)` with `feat` one tensor (a block's destinations are its first rows) or a
    (source rows, destination rows) pair."""

    def __init__(self, in_feats: int, out_feats: int, norm: str = "both", weight: bool = True, bias: bool = True,
                 activation=None, allow_zero_in_degree: bool = False):
        super().__init__()
        if norm not in NORMS:
            raise InputError(f"norm must be one of {', '.join(repr(n) for n in NORMS)}, got {norm!r}")
        self._in_feats, self._out_feats, self._norm = in_feats, out_feats, norm
        self._allow_zero_in_degree = allow_zero_in_degree
        self.weight = nn.Parameter(torch.empty(in_feats, out_feats)) if weight else None
        self.bias = nn.Parameter(torch.empty(out_feats)) if bias else None
        self._activation = activation
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Glorot-uniform weight, zero bias (the original GCN's and DGL's initialisation)."""
        if self.weight is not None:
            nn.init.xavier_uniform_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def set_allow_zero_in_degree(self, set_value: bool) -> None:
        self._allow_zero_in_degree = set_value

    def forward(self, graph, feat, weight: torch.Tensor | None = None,
                edge_weight: torch.Tensor | None = None) -> torch.Tensor:
        u, v, num_src, num_dst = graph_edges(graph)
        in_deg = torch.bincount(v, minlength=num_dst)
        if not self._allow_zero_in_degree and bool((in_deg == 0).any()):
            raise InputError(f"{int((in_deg == 0).sum())} destination nodes have no in-edges, so GraphConv's "
                             f"output for them would be invalid: add self-loops (distgraph.add_self_loop(g)) or "
                             f"create the layer with allow_zero_in_degree=True")
        if edge_weight is not None and edge_weight.shape[0] != u.numel():
            raise InputError(f"edge_weight has {edge_weight.shape[0]} rows for a graph of {u.numel()} edges")
        feat_src = feat[0] if isinstance(feat, tuple) else feat
        if feat_src.shape[0] != num_src:
            raise InputError(f"GraphConv got {feat_src.shape[0]} source rows for a graph of {num_src} source nodes")
        if weight is not None and self.weight is not None:
            raise InputError("an external weight was given to a GraphConv that has its own: create it with "
                             "weight=False")
        weight = self.weight if weight is None else weight
        if self._norm in ("left", "both"):
            feat_src = _scaled(feat_src, torch.bincount(u, minlength=num_src), -0.5 if self._norm == "both" else -1.0)
        if weight is not None and self._in_feats > self._out_feats:  # narrow the rows before summing them
            rst = sum_by_destination(u, v, num_dst, feat_src @ weight, edge_weight)
        else:
            rst = sum_by_destination(u, v, num_dst, feat_src, edge_weight)
            if weight is not None:
                rst = rst @ weight
        if self._norm in ("right", "both"):
            rst = _scaled(rst, in_deg, -0.5 if self._norm == "both" else -1.0)
        if self.bias is not None:
            rst = rst + self.bias
        return self._activation(rst) if self._activation is not None else rst

    def extra_repr(self) -> str:
        return (f"in={self._in_feats}, out={self._out_feats}, normalization={self._norm}, "
                f"activation={self._activation}")
