"""Turning a batch of seed nodes or seed edges into a mini-batch (the work a sampler worker does).

Every random draw of a mini-batch (neighbours, negatives) comes from the generator passed
with its seeds, which the loader seeds per batch: the same batch comes out the same
whether this process or a sampler process makes it, and a run resumed from a checkpoint
samples what the uninterrupted run sampled."""

from __future__ import annotations

import torch

from ..block import EID, Block
from ..dist_graph import DistGraph
from ..ids import resolve_etype
from ..sampling.neighbor import type_map
from .edge_prediction import EdgePredictionSampler
from .negative_sampler import GlobalUniform, PerSourceUniform, endpoints
from .neighbor_sampler import NeighborSampler
from .pair_graph import PairGraph, PairTypes


class NodeCollator:
    """Seed nodes -> (input_nodes, output_nodes, blocks)."""

    runs_user_code = False  # a batch calls only the library (see `prefetch.batch_threads`)

    def __init__(self, g, sampler: NeighborSampler):
        self.g, self.sampler = g, sampler

    def spec(self) -> tuple[dict, list[torch.Tensor]]:
        """Plain settings (and arrays) from which a sampler process rebuilds this collator."""
        return {"kind": "node", **graph_spec(self.g), "sampler": self.sampler.spec()}, []

    def collate(self, seeds: torch.Tensor, generator: torch.Generator | None = None
                ) -> tuple[torch.Tensor, torch.Tensor, list[Block]]:
        """A mini-batch of homogeneous seed ids (homogeneous ids; see `typed_batch`)."""
        return self.sampler.sample_ids(self.g, seeds, generator)


class EdgeCollator(NodeCollator):
    """Seed edges -> (input_nodes, pair_graph, blocks), or with a negative sampler (input_nodes,
    pair_graph, neg_pair_graph, blocks), as DGL's edge loaders yield them: both pair graphs
    are over the output nodes (`blocks[-1]`'s destinations)."""

    def __init__(self, g, edge_sampler: EdgePredictionSampler):
        super().__init__(g, edge_sampler.sampler)
        self.edge_sampler = edge_sampler
        self.runs_user_code = edge_sampler.runs_user_code

    def spec(self) -> tuple[dict, list[torch.Tensor]]:
        settings, arrays = self.edge_sampler.spec()
        return {"kind": "edge", **graph_spec(self.g), **settings}, arrays

    def collate(self, eids: torch.Tensor, generator: torch.Generator | None = None):
        """A mini-batch of homogeneous seed edge ids (see `typed_batch` for DGL's typed form)."""
        s, g = self.edge_sampler, self.g
        types = type_map(g)
        src, dst = endpoints(g, eids)
        neg = None if s.negative_sampler is None else self._negatives(eids, generator)
        ends = [src, dst] if neg is None else [src, dst, *neg[:2]]
        seeds = torch.unique(torch.cat(ends))  # sorted: rows below are a searchsorted
        input_nodes, output_nodes, blocks = self.sampler.sample_ids(g, seeds, generator,
                                                                    *s.excluded(g, eids, src, dst))
        rows = [torch.searchsorted(output_nodes, x) for x in ends]
        pos_types = neg_types = None
        if not types.is_homogeneous:
            node_type, node_tid = types.map_to_per_ntype(output_nodes)
            kinds, per_type = types.map_to_per_etype(eids)
            names = list(types.ntypes), [tuple(c) for c in types.canonical_etypes]
            pos_types = PairTypes(*names, node_type, node_tid, kinds, per_type)
            if neg is not None:
                neg_types = PairTypes(*names, node_type, node_tid, neg[2], None)
        pos = PairGraph(output_nodes, rows[0], rows[1], eids, pos_types)
        for name in s.prefetch_labels:
            if pos_types is None:
                pos.edata[name] = g.edata[name][eids]
            else:
                for c, frame in pos.data_frames()["edge"].items():
                    if name in g.edges[c].data:
                        frame[name] = g.edges[c].data[name][frame[EID]]
        if neg is None:
            return input_nodes, pos, blocks
        return input_nodes, pos, PairGraph(output_nodes, rows[2], rows[3], None, neg_types), blocks

    def _negatives(self, eids: torch.Tensor, generator: torch.Generator | None):
        """(src, dst, edge type of each) homogeneous negatives of the edges `eids`: a built-in
        sampler's own draws, or a function of DGL's form (called as DGL calls it)."""
        draw, g = self.edge_sampler.negative_sampler, self.g
        types = type_map(g)
        if isinstance(draw, (PerSourceUniform, GlobalUniform)):
            src, dst = draw.pairs(g, eids, generator)
            kinds = None if types.is_homogeneous else types.map_to_per_etype(eids)[0].repeat_interleave(draw.k)
            return src, dst, kinds
        if types.is_homogeneous:
            src, dst = draw(g, eids)
            return src, dst, None
        kinds, per_type = types.map_to_per_etype(eids)
        found = draw(g, {c: per_type[kinds == i] for i, c in enumerate(types.canonical_etypes)})
        parts = [(types.map_to_homo_nid(u, c[0]), types.map_to_homo_nid(v, c[2]),
                  torch.full_like(u, types.canonical_etypes.index(c)))
                 for c, (u, v) in ((resolve_etype(k, types.canonical_etypes), uv) for k, uv in found.items())]
        return tuple(torch.cat(col) for col in zip(*parts))


def graph_spec(g) -> dict:
    """What names a collator's graph for a sampler process: a DistGraph's name and the data
    assigned to it at run time (which sampling weights or prefetching may use)."""
    if not isinstance(g, DistGraph):
        return {"graph_name": None}
    return {"graph_name": g.graph_name, "graph_data": g.assigned_data()}


def collator_from_spec(g, spec: dict, arrays: list[torch.Tensor]) -> NodeCollator:
    """The collator a `spec()` describes, over graph `g` (in a sampler process), with the data
    its trainer's graph was given at run time."""
    g.adopt_data(spec["graph_data"])
    if spec["kind"] == "edge":
        return EdgeCollator(g, EdgePredictionSampler.from_spec(spec, arrays))
    return NodeCollator(g, NeighborSampler.from_spec(spec["sampler"]))
