"""`MultiLayerNeighborSampler`: seeds -> a list of blocks, input layer first (DGL's order)."""

from __future__ import annotations

from typing import Callable

import torch

from ..graph import as_id_tensor
from .block import Block, to_block


class MultiLayerNeighborSampler:
    """Samples `fanouts[i]` in-neighbours per node for layer i (-1: all of them).

    `sample_fn(seeds, fanout) -> SampledEdges` does one hop; the loaders bind it to a
    local graph, a partition or a distributed graph.
    """

    def __init__(self, fanouts: list[int], replace: bool = False, prob: str | None = None):
        self.fanouts = [int(f) for f in fanouts]
        self.replace = replace
        self.prob = prob

    def sample_blocks(self, sample_fn: Callable, seeds) -> tuple[torch.Tensor, torch.Tensor, list[Block]]:
        """(input node ids, output node ids, blocks); blocks[0] consumes the input features.

        Repeated seeds are sampled once: output ids are the seeds' first occurrences, in order."""
        output = first_occurrences(as_id_tensor(seeds, "seeds"))
        dst = output
        blocks: list[Block] = []
        for fanout in reversed(self.fanouts):
            edges = sample_fn(dst, fanout)
            row = edges.seed_pos if edges.seed_pos is not None else _rows_in(dst, edges.dst)
            block = to_block(dst, edges.src, row, edges.eids)
            blocks.insert(0, block)
            dst = block.src_nodes
        return dst, output, blocks


def _rows_in(nodes: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Position of each of `ids` in `nodes` (all present; `nodes` distinct)."""
    order = torch.argsort(nodes)
    return order[torch.searchsorted(nodes[order], ids)]


def first_occurrences(ids: torch.Tensor) -> torch.Tensor:
    """`ids` without repeats, each kept at its first position (vectorised)."""
    uniq, inverse = torch.unique(ids, return_inverse=True)
    if uniq.numel() == ids.numel():
        return ids
    first = torch.full((uniq.numel(),), ids.numel(), dtype=torch.int64)
    first.scatter_reduce_(0, inverse, torch.arange(ids.numel()), reduce="amin")
    return ids[first.sort().values]
