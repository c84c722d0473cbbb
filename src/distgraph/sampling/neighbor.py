"""`sample_neighbors(g, seeds, fanout)`: one hop of sampling on whatever `g` is.

An in-memory `Graph` is sampled in place; a distributed graph provides its own
`_sample_neighbors` (seeds grouped by owner, each server sampling its own).
"""

from __future__ import annotations

import torch

from ..graph import Graph, as_id_tensor
from .local import SampledEdges, sample_graph


def sample_neighbors(g, nodes, fanout: int, edge_dir: str = "in", prob: str | torch.Tensor | None = None,
                     replace: bool = False, use_graphbolt: bool = False, *, exclude_edges=None,
                     generator: torch.Generator | None = None) -> SampledEdges:
    """Up to `fanout` in-edges (edge_dir="in"; -1: all) of each of `nodes`, as the frontier
    DGL returns: `edges()` gives global (src, dst), `edata[EID]` the edge ids.

    `prob` is an edge-data name (or, on an in-memory graph, a tensor of one weight per edge).
    `exclude_edges` (edge ids) are never returned. Draws come from `generator` (torch's
    default one if None); on a distributed graph each machine's share is drawn from a seed
    taken from it, so a seeded generator gives the same sample every time. `use_graphbolt`
    is accepted for DGL's scripts and changes nothing."""
    if isinstance(g, Graph):
        weights = g.edata[prob] if isinstance(prob, str) else prob
        e = sample_graph(g, nodes, fanout, edge_dir, replace, weights, generator)
    else:
        e = g._sample_neighbors(nodes, fanout, edge_dir, replace, prob, generator)
    e.graph_num_nodes = g.num_nodes()
    if exclude_edges is not None:
        e = e.select(~torch.isin(e.eids, as_id_tensor(exclude_edges, "exclude_edges")))
    return e
