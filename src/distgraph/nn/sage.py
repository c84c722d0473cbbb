"""GraphSAGE convolution over a `Block` (mean aggregator), as in DGL's `SAGEConv`."""

from __future__ import annotations

import torch
from torch import nn

from ..dataloading.block import Block


def mean_aggregate(block: Block, h_src: torch.Tensor) -> torch.Tensor:
    """Mean of in-neighbour features for every destination (zero where there are none)."""
    src_row, dst_row = block.edge_index
    out = torch.zeros(block.num_dst_nodes, h_src.shape[1], dtype=h_src.dtype, device=h_src.device)
    out.index_add_(0, dst_row, h_src[src_row])
    deg = torch.bincount(dst_row, minlength=block.num_dst_nodes).clamp(min=1).to(h_src.dtype)
    return out / deg.unsqueeze(1)


class SAGEConv(nn.Module):
    """h_dst' = W_self h_dst + W_neigh mean(h_src over in-edges) (+ bias), optional activation."""

    def __init__(self, in_feats: int, out_feats: int, aggregator_type: str = "mean", bias: bool = True,
                 activation=None):
        super().__init__()
        if aggregator_type != "mean":
            raise ValueError(f"aggregator_type {aggregator_type!r} is not available; use 'mean'")
        self.fc_self = nn.Linear(in_feats, out_feats, bias=False)
        self.fc_neigh = nn.Linear(in_feats, out_feats, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_feats)) if bias else None
        self.activation = activation
        nn.init.xavier_uniform_(self.fc_self.weight, gain=nn.init.calculate_gain("relu"))
        nn.init.xavier_uniform_(self.fc_neigh.weight, gain=nn.init.calculate_gain("relu"))

    def forward(self, block: Block, h: torch.Tensor | tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        h_src, h_dst = h if isinstance(h, tuple) else (h, h[: block.num_dst_nodes])
        out = self.fc_self(h_dst) + self.fc_neigh(mean_aggregate(block, h_src))
        if self.bias is not None:
            out = out + self.bias
        return self.activation(out) if self.activation is not None else out
