"""Neighbour sampling where the CSC is in this process: a whole `Graph`, or a partition's owned nodes."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..errors import InputError
from ..graph import Graph, as_id_tensor
from ..partition import Partition
from .kernel import sample_csc


@dataclass
class SampledEdges:
    """Sampled edges in global ids: `src[i] -> dst[i]` is edge `eids[i]`; `seed_pos[i]` is the
    position, in the seeds asked for, of the seed the edge was drawn for (None if unknown),
    so that building a block needs no search for each edge's destination."""

    src: torch.Tensor
    dst: torch.Tensor
    eids: torch.Tensor
    seed_pos: torch.Tensor | None = None

    @staticmethod
    def cat(parts: list["SampledEdges"]) -> "SampledEdges":
        """The edges of all parts; positions are kept only if every part has them (and they
        must already refer to the same seeds)."""
        pos = None if any(p.seed_pos is None for p in parts) else torch.cat([p.seed_pos for p in parts])
        return SampledEdges(*(torch.cat([getattr(p, k) for p in parts]) for k in ("src", "dst", "eids")), pos)

    def select(self, keep: torch.Tensor) -> "SampledEdges":
        """The edges where `keep` is true."""
        return SampledEdges(self.src[keep], self.dst[keep], self.eids[keep],
                            None if self.seed_pos is None else self.seed_pos[keep])


def sample_graph(g: Graph, seeds, fanout: int, edge_dir: str = "in", replace: bool = False,
                 prob: torch.Tensor | None = None, generator: torch.Generator | None = None) -> SampledEdges:
    """Sample up to `fanout` in-edges (or out-edges) of every seed of an in-memory graph."""
    seeds = as_id_tensor(seeds, "seeds")
    if seeds.numel() and (int(seeds.min()) < 0 or int(seeds.max()) >= g.num_nodes()):
        raise InputError(f"seed ids must lie in [0, {g.num_nodes()}), got [{int(seeds.min())}, {int(seeds.max())}]")
    if edge_dir not in ("in", "out"):
        raise InputError(f"edge_dir must be 'in' or 'out', got {edge_dir!r}")
    indptr, other, eids = g.csc() if edge_dir == "in" else g.csr()
    slot_prob = prob[eids] if prob is not None else None
    seg, slots = sample_csc(indptr, seeds, fanout, replace, slot_prob, generator)
    ends = (other[slots], seeds[seg])
    src, dst = ends if edge_dir == "in" else ends[::-1]
    return SampledEdges(src, dst, eids[slots], seg)


def sample_partition(part: Partition, seeds, fanout: int, replace: bool = False,
                     prob: torch.Tensor | None = None, generator: torch.Generator | None = None) -> SampledEdges:
    """Sample in-edges of seeds owned by `part` (global homogeneous ids) on its local CSC.

    `prob`, if given, is one weight per owned edge of the partition (its edge-id range).
    """
    seeds = as_id_tensor(seeds, "seeds")
    lo, hi = part.book.node_range(part.part_id, None)
    if seeds.numel() and (int(seeds.min()) < lo or int(seeds.max()) >= hi):
        raise InputError(f"partition {part.part_id} owns nodes [{lo}, {hi}); seeds outside it were sent to it")
    slot_prob = None
    if prob is not None:
        elo, _ = part.book.edge_range(part.part_id, None)
        slot_prob = prob[part.eids - elo]
    seg, slots = sample_csc(part.indptr, seeds - lo, fanout, replace, slot_prob, generator)
    src = part.indices[slots]
    src = src + part.nid_start if part.nid_start is not None else part.global_nid[src]
    eids = slots + part.eid_start if part.eid_start is not None else part.eids[slots]
    return SampledEdges(src, seeds[seg], eids, seg)
