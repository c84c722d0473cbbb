"""`GraphSAGE`: a stack of mean-aggregator `SAGEConv` layers over a list of blocks."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..block import Block
from .sage import SAGEConv


class GraphSAGE(nn.Module):
    """`num_layers` SAGEConv layers (ReLU and dropout between them), as in DGL's example."""

    def __init__(self, in_feats: int, n_hidden: int, n_classes: int, num_layers: int = 2, dropout: float = 0.5):
        super().__init__()
        dims = [in_feats] + [n_hidden] * (num_layers - 1) + [n_classes]
        self.layers = nn.ModuleList(SAGEConv(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = nn.Dropout(dropout)

    def forward(self, blocks: list[Block], x: torch.Tensor) -> torch.Tensor:
        if len(blocks) != len(self.layers):
            raise ValueError(f"the model has {len(self.layers)} layers but got {len(blocks)} blocks")
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i < len(self.layers) - 1:
                h = self.dropout(F.relu(h))
        return h
