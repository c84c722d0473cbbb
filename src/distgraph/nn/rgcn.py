"""`RelGraphConv`: relational graph convolution (Schlichtkrull et al.), DGL's arguments and
semantics, over a block's homogeneous view (its sources in one matrix, one type id per edge).

h_v' = act(dropout(LN(sum_r sum_{u in N_r(v)} norm_uv W_r h_u) + b + W_0 h_v)), with
`regularizer="basis"` making each W_r a combination of `num_bases` shared matrices. The
messages are summed per (destination, relation) by one `embedding_bag` over the block's
edges and multiplied by every W_r at once, so no (edges x features) matrix is built.
`relation_norm(block)` gives the per-edge weights 1 / (in-edges of the edge's relation at its
destination), which make each relation's sum its mean (RGCN's normalisation, and what the
distributed RGCN example's `norm="right"` does).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..block import Block


def relation_keys(block: Block, etypes: torch.Tensor, num_rels: int) -> torch.Tensor:
    """Each edge's (destination, relation) bag: destination row * num_rels + relation."""
    return block.edge_index[1] * num_rels + etypes


def relation_norm(block: Block, etypes: torch.Tensor | None = None) -> torch.Tensor:
    """(E, 1) weights 1 / deg_r(v): each edge's share of its relation's edges at its destination."""
    etypes = block.edge_type() if etypes is None else etypes
    num_rels = int(etypes.max()) + 1 if etypes.numel() else 1
    keys = relation_keys(block, etypes, num_rels)
    counts = torch.bincount(keys, minlength=block.num_dst_nodes() * num_rels)
    return (1.0 / counts[keys].to(torch.float32)).unsqueeze(1)


class RelGraphConv(nn.Module):
    """DGL's `RelGraphConv(in_feat, out_feat, num_rels, regularizer, num_bases, bias,
    activation, self_loop, dropout, layer_norm)`; called as `conv(block, feat, etypes, norm)`
    with one row of `feat` per source of the block's homogeneous view (`etypes` defaults to
    `block.edge_type()`)."""

    def __init__(self, in_feat: int, out_feat: int, num_rels: int, regularizer: str | None = None,
                 num_bases: int | None = None, bias: bool = True, activation=None, self_loop: bool = True,
                 dropout: float = 0.0, layer_norm: bool = False):
        super().__init__()
        if regularizer not in (None, "basis"):
            raise ValueError(f"regularizer must be None or 'basis', got {regularizer!r}")
        self.in_feat, self.out_feat, self.num_rels = in_feat, out_feat, num_rels
        if regularizer == "basis":
            self.num_bases = num_rels if num_bases is None else num_bases
            self.bases = nn.Parameter(torch.empty(self.num_bases, in_feat, out_feat))
            self.coeff = nn.Parameter(torch.empty(num_rels, self.num_bases))
            nn.init.xavier_uniform_(self.bases, gain=nn.init.calculate_gain("relu"))
            nn.init.xavier_uniform_(self.coeff, gain=nn.init.calculate_gain("relu"))
        else:
            self.num_bases = None
            self.weight = nn.Parameter(torch.empty(num_rels, in_feat, out_feat))
            nn.init.xavier_uniform_(self.weight, gain=nn.init.calculate_gain("relu"))
        self.h_bias = nn.Parameter(torch.zeros(out_feat)) if bias else None
        self.loop_weight = None
        if self_loop:
            self.loop_weight = nn.Parameter(torch.empty(in_feat, out_feat))
            nn.init.xavier_uniform_(self.loop_weight, gain=nn.init.calculate_gain("relu"))
        self.layer_norm = nn.LayerNorm(out_feat, elementwise_affine=True) if layer_norm else None
        self.activation = activation
        self.dropout = nn.Dropout(dropout)

    def relation_weights(self) -> torch.Tensor:
        """(num_rels, in_feat, out_feat): W_r, from the bases when they are used."""
        if self.num_bases is None:
            return self.weight
        return torch.einsum("rb,bio->rio", self.coeff, self.bases)

    def forward(self, block: Block, feat: torch.Tensor, etypes: torch.Tensor | None = None,
                norm: torch.Tensor | None = None) -> torch.Tensor:
        etypes = block.edge_type() if etypes is None else torch.as_tensor(etypes, dtype=torch.int64)
        nd = block.num_dst_nodes()
        keys = relation_keys(block, etypes, self.num_rels)
        order = None
        if keys.numel() > 1 and not bool((keys[1:] >= keys[:-1]).all()):  # bags must be runs
            order = torch.argsort(keys, stable=True)
        src, weights = block.edge_index[0], None if norm is None else norm.reshape(-1).to(feat.dtype)
        if order is not None:
            keys, src = keys[order], src[order]
            weights = None if weights is None else weights[order]
        counts = torch.bincount(keys, minlength=nd * self.num_rels)
        offsets = torch.cumsum(counts, 0) - counts
        per_rel = F.embedding_bag(src, feat, offsets, mode="sum", per_sample_weights=weights)
        h = torch.einsum("nri,rio->no", per_rel.view(nd, self.num_rels, self.in_feat), self.relation_weights())
        if self.layer_norm is not None:
            h = self.layer_norm(h)
        if self.h_bias is not None:
            h = h + self.h_bias
        if self.loop_weight is not None:
            h = h + feat[:nd] @ self.loop_weight
        if self.activation is not None:
            h = self.activation(h)
        return self.dropout(h)
