"""Turning a batch of seed nodes or seed edges into a mini-batch (the work a sampler worker does).

Every random draw of a mini-batch (neighbours, negatives) comes from the generator passed
with its seeds, which the loader seeds per batch: the same batch comes out the same
whether this process or a sampler process makes it, and a run resumed from a checkpoint
samples what the uninterrupted run sampled."""

from __future__ import annotations

import torch

from ..block import Block
from .edge_prediction import EdgePredictionSampler
from .negative_sampler import GlobalUniform, PerSourceUniform
from .neighbor_sampler import NeighborSampler
from .pair_graph import PairGraph


class NodeCollator:
    """Seed nodes -> (input_nodes, output_nodes, blocks)."""

    def __init__(self, g, sampler: NeighborSampler):
        self.g, self.sampler = g, sampler

    def spec(self) -> tuple[dict, list[torch.Tensor]]:
        """Plain settings (and arrays) from which a sampler process rebuilds this collator."""
        return {"kind": "node", "graph_name": getattr(self.g, "graph_name", None),
                "sampler": self.sampler.spec()}, []

    def collate(self, seeds: torch.Tensor, generator: torch.Generator | None = None
                ) -> tuple[torch.Tensor, torch.Tensor, list[Block]]:
        return self.sampler.sample(self.g, seeds, generator=generator)


class EdgeCollator(NodeCollator):
    """Seed edges -> (input_nodes, pair_graph, blocks), or with a negative sampler (input_nodes,
    pair_graph, neg_pair_graph, blocks), as DGL's edge loaders yield them: both pair graphs
    are over the output nodes (`blocks[-1]`'s destinations)."""

    def __init__(self, g, edge_sampler: EdgePredictionSampler):
        super().__init__(g, edge_sampler.sampler)
        self.edge_sampler = edge_sampler

    def spec(self) -> tuple[dict, list[torch.Tensor]]:
        settings, arrays = self.edge_sampler.spec()
        return {"kind": "edge", "graph_name": getattr(self.g, "graph_name", None), **settings}, arrays

    def collate(self, eids: torch.Tensor, generator: torch.Generator | None = None):
        s, g = self.edge_sampler, self.g
        src, dst = g.find_edges(eids)
        neg = None
        if s.negative_sampler is not None:
            draw = s.negative_sampler
            neg = draw(g, eids, generator=generator) if isinstance(draw, (PerSourceUniform, GlobalUniform)) \
                else draw(g, eids)
        ends = [src, dst] if neg is None else [src, dst, *neg]
        seeds = torch.unique(torch.cat(ends))  # sorted: rows below are a searchsorted
        hop = self.sampler.hop(g, generator, *s.excluded(eids, src, dst, g.num_nodes()))
        input_nodes, output_nodes, blocks = self.sampler.sample_blocks(hop, seeds)
        self.sampler.attach_data(g, input_nodes, output_nodes, blocks)
        rows = [torch.searchsorted(output_nodes, x) for x in ends]
        pos = PairGraph(output_nodes, rows[0], rows[1], eids)
        for name in s.prefetch_labels:
            pos.edata[name] = g.edata[name][eids]
        if neg is None:
            return input_nodes, pos, blocks
        return input_nodes, pos, PairGraph(output_nodes, rows[2], rows[3]), blocks


def collator_from_spec(g, spec: dict, arrays: list[torch.Tensor]) -> NodeCollator:
    """The collator a `spec()` describes, over graph `g` (in a sampler process)."""
    if spec["kind"] == "edge":
        return EdgeCollator(g, EdgePredictionSampler.from_spec(spec, arrays))
    return NodeCollator(g, NeighborSampler.from_spec(spec["sampler"]))
