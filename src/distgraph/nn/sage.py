"""GraphSAGE convolution over a `Block` (mean aggregator), as in DGL's `SAGEConv`."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..block import Block


def mean_aggregate(block: Block, h_src: torch.Tensor) -> torch.Tensor:
    """Mean of in-neighbour features for every destination (zero where there are none).

    One `embedding_bag` over the destination-grouped edges: no (num_edges x dim) gather is
    materialised, forward or backward (5x faster than gather + index_add here)."""
    return F.embedding_bag(block.edge_index[0], h_src, block.dst_offsets(), mode="mean")


class SAGEConv(nn.Module):
    """h_dst' = W_self h_dst + W_neigh mean(h_src over in-edges) (+ bias), then `norm` and
    `activation` if given; DGL's arguments (`feat_drop` drops input features in training).
    Called as `layer(block, h)` or `layer(block, (h_src, h_dst))`."""

    def __init__(self, in_feats: int, out_feats: int, aggregator_type: str = "mean", feat_drop: float = 0.0,
                 bias: bool = True, norm=None, activation=None):
        super().__init__()
        if aggregator_type != "mean":
            raise ValueError(f"aggregator_type {aggregator_type!r} is not available; use 'mean'")
        self.fc_self = nn.Linear(in_feats, out_feats, bias=False)
        self.fc_neigh = nn.Linear(in_feats, out_feats, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_feats)) if bias else None
        self.feat_drop = nn.Dropout(feat_drop)
        self.norm, self.activation = norm, activation
        nn.init.xavier_uniform_(self.fc_self.weight, gain=nn.init.calculate_gain("relu"))
        nn.init.xavier_uniform_(self.fc_neigh.weight, gain=nn.init.calculate_gain("relu"))

    def forward(self, block: Block, h: torch.Tensor | tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        h_src, h_dst = h if isinstance(h, tuple) else (h, h[: block.num_dst_nodes()])
        h_src, h_dst = self.feat_drop(h_src), self.feat_drop(h_dst)
        # the mean is linear, so project before or after aggregating, whichever costs fewer
        # multiply-adds for this block (DGL projects first whenever it narrows the rows)
        d_in, d_out, edges = self.fc_neigh.in_features, self.fc_neigh.out_features, block.num_edges()
        if block.num_src_nodes() * d_in * d_out + edges * d_out < edges * d_in + block.num_dst_nodes() * d_in * d_out:
            neigh = mean_aggregate(block, self.fc_neigh(h_src))
        else:
            neigh = self.fc_neigh(mean_aggregate(block, h_src))
        out = self.fc_self(h_dst) + neigh
        if self.bias is not None:
            out = out + self.bias
        if self.norm is not None:
            out = self.norm(out)
        return self.activation(out) if self.activation is not None else out
