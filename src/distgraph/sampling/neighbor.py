"""`sample_neighbors(g, seeds, fanout)`: one hop of sampling on whatever `g` is.

An in-memory `Graph` is sampled in place; a distributed graph provides its own
`_sample_neighbors` (seeds grouped by owner, each server sampling its own).
"""

from __future__ import annotations

import torch

from ..graph import Graph
from .local import SampledEdges, sample_graph


def sample_neighbors(g, seeds, fanout: int, edge_dir: str = "in", replace: bool = False,
                     prob: str | torch.Tensor | None = None, *,
                     generator: torch.Generator | None = None) -> SampledEdges:
    """Up to `fanout` in-edges (edge_dir="in") of each seed, as global (src, dst, eid).

    `prob` is an edge-data name or a tensor of one weight per edge. Draws come from
    `generator` (torch's default one if None); on a distributed graph each server's share is
    drawn from a seed taken from it, so a seeded generator gives the same sample every time.
    """
    if isinstance(g, Graph):
        weights = g.edata[prob] if isinstance(prob, str) else prob
        return sample_graph(g, seeds, fanout, edge_dir, replace, weights, generator)
    return g._sample_neighbors(seeds, fanout, edge_dir, replace, prob, generator)
