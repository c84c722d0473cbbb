"""`sample_neighbors(g, seeds, fanout)`: one hop of sampling on whatever `g` is.

An in-memory `Graph` is sampled in place; a distributed graph provides its own
`_sample_neighbors` (seeds grouped by owner, each server sampling its own).
"""

from __future__ import annotations

import torch

from ..errors import InputError
from ..tensor_graph import Graph
from ..graphbolt import note_graphbolt
from ..ids import as_id_tensor, as_selection, resolve_etype
from .local import SampledEdges, sample_graph


def type_map(g):
    """What maps `g`'s homogeneous ids to (type, per-type id) and back: an in-memory `Graph`
    itself, a distributed graph's partition book (the same methods)."""
    return g if isinstance(g, Graph) else g.get_partition_book()


def homogeneous_ids(g, ids, what: str, kind: str = "node", masks: bool = False) -> torch.Tensor:
    """Homogeneous ids of `ids`: a tensor of them, or a dict {type: per-type ids} (DGL's form
    on a heterogeneous graph, required there). With `masks`, a type's mask of any dtype
    (nonzero = selected, see `graph.is_mask`) stands for the ids it selects."""
    types = type_map(g)

    def one(values, t, label: str) -> torch.Tensor:
        if not masks:
            return as_id_tensor(values, label)
        return as_selection(values, types.num_nodes(t) if kind == "node" else types.num_edges(t), label)

    if isinstance(ids, dict):
        to_homo = types.map_to_homo_nid if kind == "node" else types.map_to_homo_eid
        parts = [to_homo(one(v, t, f"{what} of {t!r}"), t) for t, v in ids.items()]
        return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.int64)
    if not types.is_homogeneous:
        names = types.ntypes if kind == "node" else types.canonical_etypes
        raise InputError(f"the graph has {kind} types {names}: give {what} as a dict {{type: ids}}")
    return one(ids, None, what)


def etype_fanouts(fanout, canonical_etypes: list) -> int | torch.Tensor:
    """One fanout (-1: all) for a graph with one edge type; else one per edge type, in the
    graph's order: an int gives each type that many, a dict {edge type: k} (canonical or
    short names) must name every type."""
    if isinstance(fanout, dict):
        ks = {}
        for key, k in fanout.items():
            ks[canonical_etypes.index(resolve_etype(key, canonical_etypes))] = int(k)
        missing = [c for i, c in enumerate(canonical_etypes) if i not in ks]
        if missing:
            raise InputError(f"the fanout dict lacks edge types {missing}; give every edge type a fanout (0: none)")
        values = [ks[i] for i in range(len(canonical_etypes))]
    else:
        values = [int(fanout)] * len(canonical_etypes)
    if any(k < -1 for k in values):
        raise InputError(f"fanouts must be -1 (all) or >= 0, got {fanout!r}")
    return values[0] if len(values) == 1 else torch.tensor(values, dtype=torch.int64)


def sample_neighbors(g, nodes, fanout, edge_dir: str = "in", prob: str | torch.Tensor | None = None,
                     replace: bool = False, use_graphbolt: bool = False, *, exclude_edges=None,
                     generator: torch.Generator | None = None) -> SampledEdges:
    """Up to `fanout` in-edges (edge_dir="in"; -1: all) of each of `nodes`, as the frontier
    DGL returns: `edges()` gives global (src, dst), `edata[EID]` the edge ids.

    On a heterogeneous graph, `nodes` is {node type: per-type ids} and each node draws up to
    `fanout` in-edges of every edge type (`fanout` may be {edge type: k}); the frontier then
    gives `edges(etype=...)` and `edata[EID]` per edge type, in per-type ids. `prob` is an
    edge-data name (or, on an in-memory graph, a tensor of one weight per edge); on a
    `DistGraph` the weights are read where the edges are, from the servers' store, so a
    `DistTensor` assigned to the graph's edge data at run time weights the draws (an edge type
    without that data draws uniformly, as in DGL). `exclude_edges` (edge ids; per type as a
    dict) are never returned. Draws come from `generator` (torch's default one if None); on a
    distributed graph each machine's share is drawn from a seed taken from it, so a seeded
    generator gives the same sample every time. `use_graphbolt` is accepted for DGL's scripts
    and changes nothing (`graphbolt`)."""
    exclude = None if exclude_edges is None else homogeneous_ids(g, exclude_edges, "exclude_edges", "edge")
    return _frontier(g, homogeneous_ids(g, nodes, "nodes"), fanout, edge_dir, prob, replace, exclude,
                     use_graphbolt, generator)


def sample_etype_neighbors(g, nodes, fanout, edge_dir: str = "in", prob: str | None = None, exclude_edges=None,
                           replace: bool = False, etype_sorted: bool = True, use_graphbolt: bool = False, *,
                           generator: torch.Generator | None = None) -> SampledEdges:
    """DGL's `dgl.distributed.sample_etype_neighbors` (the default branch's signature; DGL
    2.1.0's, which has no `exclude_edges` and `replace` sixth, is read too: a bool there is
    `replace`): `sample_neighbors` with `nodes` and `exclude_edges` as homogeneous ids or
    {type: per-type ids}. Each type's in-edges of a node are one run in every partition, so
    `etype_sorted` changes nothing."""
    if isinstance(exclude_edges, bool):
        replace, exclude_edges = exclude_edges, None

    def homogeneous(ids, what: str, kind: str) -> torch.Tensor:
        return homogeneous_ids(g, ids, what, kind) if isinstance(ids, dict) else as_id_tensor(ids, what)

    exclude = None if exclude_edges is None else homogeneous(exclude_edges, "exclude_edges", "edge")
    return _frontier(g, homogeneous(nodes, "nodes", "node"), fanout, edge_dir, prob, replace, exclude,
                     use_graphbolt, generator)


def _frontier(g, seeds: torch.Tensor, fanout, edge_dir: str, prob, replace: bool, exclude: torch.Tensor | None,
              use_graphbolt: bool, generator: torch.Generator | None) -> SampledEdges:
    """One hop of homogeneous `seeds` without the edges `exclude` (homogeneous ids), as a frontier."""
    note_graphbolt(use_graphbolt)
    e = sample_hop(g, seeds, fanout, edge_dir, prob, replace, generator)
    return e if exclude is None else e.select(~torch.isin(e.eids, exclude))


def sample_hop(g, seeds: torch.Tensor, fanout, edge_dir: str = "in", prob: str | torch.Tensor | None = None,
               replace: bool = False, generator: torch.Generator | None = None) -> SampledEdges:
    """`sample_neighbors` of homogeneous seed ids (a sampler's hop, whatever the graph's types)."""
    types = type_map(g)
    ks = etype_fanouts(fanout, types.canonical_etypes)
    if isinstance(g, Graph):
        e = sample_graph(g, seeds, ks, edge_dir, replace, graph_weights(g, prob) if isinstance(prob, str) else prob,
                         generator)
    else:
        e = g._sample_neighbors(seeds, ks, edge_dir, replace, prob, generator)
    e.graph_num_nodes = g.num_nodes()
    if not types.is_homogeneous:
        e.types = types
    return e


def graph_weights(g: Graph, prob: str) -> torch.Tensor:
    """One weight per edge of an in-memory graph from its edge data `prob` (1 on the edge types
    without it, as DGL draws them uniformly)."""
    have = [c for c in g.canonical_etypes if prob in g.edges[c].data]
    if not have:
        raise InputError(f"no edge type has edge data {prob!r}, so it cannot weight sampling")
    if len(have) == 1 and g.is_homogeneous:
        return g.edata[prob].reshape(-1)
    return torch.cat([g.edges[c].data[prob].reshape(-1).to(torch.float64) if c in have
                      else torch.ones(g.num_edges(c), dtype=torch.float64) for c in g.canonical_etypes])
