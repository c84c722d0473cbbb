"""`NeighborSampler` (DGL's name; `MultiLayerNeighborSampler` is the same class): seeds -> a
list of blocks, input layer first (DGL's order)."""

from __future__ import annotations

from typing import Callable

import torch

from ..block import EID, NID, Block, block_from_edges, first_occurrences, rows_in, with_types
from ..distributed.transfer import BatchMover, check_device
from ..errors import InputError
from ..ids import as_id_tensor


def _fanout(f):
    """One layer's fanout: an int (-1: all), or {edge type: int} (canonical types as 'src:rel:dst'
    strings, so the settings stay plain data for sampler processes)."""
    if isinstance(f, dict):
        return {":".join(k) if isinstance(k, tuple) else str(k): int(v) for k, v in f.items()}
    return int(f)


def _names(value, what: str) -> list[str]:
    if value is None:
        return []
    names = [value] if isinstance(value, str) else list(value)
    if not all(isinstance(n, str) for n in names):
        raise InputError(f"{what} must name graph data (strings), got {value!r}")
    return names


class NeighborSampler:
    """Samples `fanouts[i]` in-neighbours per node for layer i (-1: all of them), DGL's
    arguments: `prob` names edge data weighting the draws, `mask` boolean edge data (only
    those edges are drawn); `prefetch_node_feats`, `prefetch_labels` and `prefetch_edge_feats`
    name graph data that comes with each mini-batch, in `blocks[0].srcdata`,
    `blocks[-1].dstdata` and every block's `edata`: it is gathered where the batch is made (in
    the sampler processes, beside training, when there are some). Blocks are made on the CPU;
    `output_device` is where `sample` puts them, and a loader's default `device`; `fused` is
    accepted (sampling is always one pass)."""

    def __init__(self, fanouts, edge_dir: str = "in", prob: str | None = None, mask: str | None = None,
                 replace: bool = False, prefetch_node_feats=None, prefetch_labels=None, prefetch_edge_feats=None,
                 output_device=None, fused: bool = True):
        if prob is not None and mask is not None:
            raise InputError("give NeighborSampler prob or mask, not both")
        self.output_device = None if output_device is None else check_device(output_device, "output_device")
        if edge_dir not in ("in", "out"):
            raise InputError(f"edge_dir must be 'in' or 'out', got {edge_dir!r}")
        self.fanouts = [_fanout(f) for f in fanouts]
        self.edge_dir, self.replace = edge_dir, bool(replace)
        self.prob = prob if prob is not None else mask  # a 0/1 weight draws uniformly among the masked edges
        self.prefetch_node_feats = _names(prefetch_node_feats, "prefetch_node_feats")
        self.prefetch_labels = _names(prefetch_labels, "prefetch_labels")
        self.prefetch_edge_feats = _names(prefetch_edge_feats, "prefetch_edge_feats")

    def spec(self) -> dict:
        """Plain settings from which a sampler process rebuilds this sampler."""
        return {"fanouts": self.fanouts, "edge_dir": self.edge_dir, "prob": self.prob, "replace": self.replace,
                "prefetch_node_feats": self.prefetch_node_feats, "prefetch_labels": self.prefetch_labels,
                "prefetch_edge_feats": self.prefetch_edge_feats}

    @classmethod
    def from_spec(cls, spec: dict) -> "NeighborSampler":
        return cls(spec["fanouts"], spec["edge_dir"], spec["prob"], None, spec["replace"], spec["prefetch_node_feats"],
                   spec["prefetch_labels"], spec["prefetch_edge_feats"])

    def sample_blocks(self, sample_fn: Callable, seeds, types=None) -> tuple[torch.Tensor, torch.Tensor, list[Block]]:
        """(input node ids, output node ids, blocks); blocks[0] consumes the input features.
        `sample_fn(seeds, fanout) -> SampledEdges` does one hop; `types` (the id map of a
        heterogeneous graph) gives the blocks their typed view.

        Repeated seeds are sampled once: output ids are the seeds' first occurrences, in order."""
        output = first_occurrences(as_id_tensor(seeds, "seeds"))
        dst = output
        blocks: list[Block] = []
        for fanout in reversed(self.fanouts):
            edges = sample_fn(dst, fanout)
            row = edges.seed_pos if edges.seed_pos is not None else rows_in(dst, edges.dst)
            made = block_from_edges(dst, edges.src, row, edges.eids, edges.etype, edges.grouped, edges.room)
            edges.room = None  # the block's edge index now: another block of these edges needs its own
            block, etype = made if edges.etype is not None else (made, None)
            if types is not None:
                block = with_types(block, types, etype)
            blocks.insert(0, block)
            dst = block.src_nodes
        return dst, output, blocks

    def attach_data(self, g, input_nodes: torch.Tensor, output_nodes: torch.Tensor, blocks: list[Block]) -> None:
        """Put the prefetched graph data of a mini-batch into its blocks (on a heterogeneous
        graph, of each type that has it)."""
        if blocks and blocks[0].types is not None:
            sides = [(blocks[0], "src", self.prefetch_node_feats), (blocks[-1], "dst", self.prefetch_labels)]
            sides += [(b, "edge", self.prefetch_edge_feats) for b in blocks]
            for block, side, names in sides:
                if not names:
                    continue  # a side's per-type views are built only when something is fetched for it
                data = g.edges if side == "edge" else g.nodes
                for t, frame in block.side_data(side).items():
                    key = EID if side == "edge" else NID
                    for name in names:
                        if name in data[t].data:
                            frame[name] = data[t].data[name][frame[key]]
            return
        for name in self.prefetch_node_feats:
            blocks[0].srcdata[name] = g.ndata[name][input_nodes]
        for name in self.prefetch_labels:
            blocks[-1].dstdata[name] = g.ndata[name][output_nodes]
        for name in self.prefetch_edge_feats:
            for b in blocks:
                b.edata[name] = g.edata[name][b.eids]

    def hop(self, g, generator: torch.Generator | None = None, drop_eids: torch.Tensor | None = None,
            drop_pairs: torch.Tensor | None = None) -> Callable:
        """One hop of this sampler on `g` (`sample_fn` for `sample_blocks`), leaving out the edges
        `drop_eids` and those whose src * num_nodes + dst is in `drop_pairs`."""
        from ..sampling import sample_hop

        n = g.num_nodes()

        def hop(seeds: torch.Tensor, fanout):
            e = sample_hop(g, seeds, fanout, self.edge_dir, self.prob, self.replace, generator)
            if drop_eids is None and drop_pairs is None:
                return e
            drop = torch.zeros(e.eids.numel(), dtype=torch.bool) if drop_eids is None else torch.isin(e.eids, drop_eids)
            if drop_pairs is not None:
                drop |= torch.isin(e.src * n + e.dst, drop_pairs)
            return e.select(~drop)

        return hop

    def sample(self, g, seed_nodes, exclude_eids=None, generator: torch.Generator | None = None):
        """DGL's `sample`: (input_nodes, output_nodes, blocks) of `seed_nodes` on `g`, leaving
        out the edges `exclude_eids`, with the prefetched data attached (on a heterogeneous
        graph, nodes and edges as {type: per-type ids}, and so the input and output nodes),
        on `output_device` when one is given."""
        from ..sampling.neighbor import homogeneous_ids

        exclude = None if exclude_eids is None else homogeneous_ids(g, exclude_eids, "exclude_eids", "edge")
        batch = self.sample_ids(g, homogeneous_ids(g, seed_nodes, "seed_nodes"), generator, exclude)
        return BatchMover(self.output_device).move(typed_batch(batch))

    def sample_ids(self, g, seeds: torch.Tensor, generator: torch.Generator | None = None,
                   drop_eids: torch.Tensor | None = None, drop_pairs: torch.Tensor | None = None):
        """`sample` of homogeneous seed ids, giving homogeneous input and output ids (the blocks
        of a heterogeneous graph have their typed view)."""
        from ..sampling.neighbor import type_map

        types = type_map(g)
        input_nodes, output_nodes, blocks = self.sample_blocks(self.hop(g, generator, drop_eids, drop_pairs), seeds,
                                                               None if types.is_homogeneous else types)
        self.attach_data(g, input_nodes, output_nodes, blocks)
        return input_nodes, output_nodes, blocks


def typed_batch(batch: tuple, id_map=None) -> tuple:
    """A mini-batch as DGL gives it: with typed blocks, its input nodes and (for node batches)
    output nodes as {node type: per-type ids}, which the blocks hold; `id_map` (the graph's)
    lets blocks that came from a sampler process give per-type edge ids too."""
    *head, blocks = batch
    if not blocks or blocks[0].types is None:
        return batch
    for b in blocks:
        b.types.id_map = b.types.id_map or id_map
    head[0] = blocks[0].srcdata[NID]
    if isinstance(head[1], torch.Tensor):
        head[1] = blocks[-1].dstdata[NID]
    return (*head, blocks)


MultiLayerNeighborSampler = NeighborSampler


def MultiLayerFullNeighborSampler(num_layers: int, **kwargs) -> NeighborSampler:  # noqa: N802 (DGL's name)
    """Every in-neighbour at each of `num_layers` layers."""
    return NeighborSampler([-1] * int(num_layers), **kwargs)

