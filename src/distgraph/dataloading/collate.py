"""Turning a batch of seed nodes or seed edges into a mini-batch (the work a sampler worker does).

Every random draw of a mini-batch (neighbours, negatives) comes from the generator passed
with its seeds, which the loader seeds per batch: the same batch comes out the same
whether this process or a sampler process makes it, and a run resumed from a checkpoint
samples what the uninterrupted run sampled."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from ..sampling import SampledEdges, sample_neighbors
from .block import Block
from .neighbor_sampler import MultiLayerNeighborSampler


@dataclass
class PairGraph:
    """Node pairs scored by a link-prediction model: `edge_index` rows index the output nodes
    (`blocks[-1].dst_nodes`); `eids` are the positive edges' global ids (empty for negatives)."""

    edge_index: torch.Tensor
    eids: torch.Tensor

    @property
    def num_edges(self) -> int:
        return int(self.edge_index.shape[1])


class NodeCollator:
    """Seed nodes -> (input_nodes, output_nodes, blocks)."""

    def __init__(self, g, sampler: MultiLayerNeighborSampler):
        self.g, self.sampler = g, sampler

    def spec(self) -> dict:
        """Plain settings from which a sampler process rebuilds this collator."""
        s = self.sampler
        return {"kind": "node", "graph_name": getattr(self.g, "graph_name", None), "fanouts": s.fanouts,
                "replace": s.replace, "prob": s.prob}

    def _hop(self, generator: torch.Generator | None) -> Callable[[torch.Tensor, int], SampledEdges]:
        def hop(seeds: torch.Tensor, fanout: int) -> SampledEdges:
            return sample_neighbors(self.g, seeds, fanout, replace=self.sampler.replace, prob=self.sampler.prob,
                                    generator=generator)

        return hop

    def collate(self, seeds: torch.Tensor, generator: torch.Generator | None = None
                ) -> tuple[torch.Tensor, torch.Tensor, list[Block]]:
        return self.sampler.sample_blocks(self._hop(generator), seeds)


class EdgeCollator(NodeCollator):
    """Seed edges -> (input_nodes, positive pairs, negative pairs, blocks).

    Negatives: `num_negs` per positive edge (u, v), as (u, v') with v' uniform over all
    nodes. With `exclude="reverse"` the seed edges and their reverses (same endpoints,
    either direction) are removed from the sampled neighbourhoods, so the model cannot
    read the answer off the message-flow graph; `exclude="self"` removes the seed edges only.
    """

    def __init__(self, g, sampler: MultiLayerNeighborSampler, num_negs: int = 1, exclude: str | None = "reverse"):
        super().__init__(g, sampler)
        if exclude not in (None, "self", "reverse"):
            raise ValueError(f"exclude must be None, 'self' or 'reverse', got {exclude!r}")
        self.num_negs, self.exclude = num_negs, exclude

    def spec(self) -> dict:
        return {**super().spec(), "kind": "edge", "num_negs": self.num_negs, "exclude": self.exclude}

    def _hop_excluding(self, eids: torch.Tensor, pairs: torch.Tensor | None, generator: torch.Generator | None):
        """A hop that drops the edges `eids` and those whose (src * n + dst) is in `pairs`."""
        n = self.g.num_nodes()
        sample = self._hop(generator)

        def hop(seeds: torch.Tensor, fanout: int) -> SampledEdges:
            e = sample(seeds, fanout)
            drop = torch.isin(e.eids, eids)
            if pairs is not None:
                drop |= torch.isin(e.src * n + e.dst, pairs)
            return e.select(~drop)

        return hop

    def collate(self, eids: torch.Tensor, generator: torch.Generator | None = None):
        src, dst = self.g.find_edges(eids)
        n = self.g.num_nodes()
        neg_src = src.repeat_interleave(self.num_negs)
        neg_dst = torch.randint(0, n, (neg_src.numel(),), generator=generator)
        hop = self._hop(generator)
        if self.exclude is not None:
            pairs = torch.cat([src * n + dst, dst * n + src]) if self.exclude == "reverse" else None
            hop = self._hop_excluding(eids, pairs, generator)
        seeds = torch.unique(torch.cat([src, dst, neg_dst]))  # sorted: rows below are a searchsorted
        input_nodes, output_nodes, blocks = self.sampler.sample_blocks(hop, seeds)
        row = torch.searchsorted(output_nodes, torch.stack([torch.cat([src, neg_src]), torch.cat([dst, neg_dst])]))
        m = src.numel()
        return input_nodes, PairGraph(row[:, :m], eids), PairGraph(row[:, m:], eids.new_empty(0)), blocks


def collator_from_spec(g, spec: dict) -> NodeCollator:
    """The collator a `spec()` describes, over graph `g` (in a sampler process)."""
    sampler = MultiLayerNeighborSampler(spec["fanouts"], spec["replace"], spec["prob"])
    if spec["kind"] == "edge":
        return EdgeCollator(g, sampler, spec["num_negs"], spec["exclude"])
    return NodeCollator(g, sampler)
