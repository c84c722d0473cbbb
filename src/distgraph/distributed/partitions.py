"""The partition functions under DGL's distributed names and return shapes:
`load_partition` gives DGL's 7-tuple and `load_partition_book` its 4-tuple (the project's
own `distgraph.partition.load_partition` returns the `Partition` alone). `find_edges` and
`in_subgraph` are DGL's module-level graph services."""

from __future__ import annotations

from pathlib import Path

import torch

from ..ids import as_id_tensor
from ..partition import Partition, RangePartitionBook
from ..partition import load_partition as _load_partition
from ..partition import load_partition_book as _load_partition_book
from ..partition.layout import PartitionConfig


def load_partition(part_config: str | Path, part_id: int, load_feats: bool = True, use_graphbolt: bool = False
                   ) -> tuple[Partition, dict, dict, RangePartitionBook, str, list[str], list[tuple[str, str, str]]]:
    """(local graph, node features, edge features, partition book, graph name, node types,
    canonical edge types), as DGL's: features are keyed "ntype/name" and "src:rel:dst/name"
    (empty without `load_feats`); the local graph's `ndata[NID]`/`edata[EID]` are global ids."""
    part = _load_partition(part_config, part_id)
    node_feats = {f"{t}/{k}": v for t, d in part.node_data.items() for k, v in d.items()} if load_feats else {}
    edge_feats = {f"{t}/{k}": v for t, d in part.edge_data.items() for k, v in d.items()} if load_feats else {}
    return part, node_feats, edge_feats, part.book, part.graph_name, list(part.ntypes), list(part.canonical_etypes)


def load_partition_book(part_config: str | Path, part_id: int) -> tuple[RangePartitionBook, str, dict, dict]:
    """(partition book, graph name, {node type: id}, {canonical edge type: id}), as DGL's."""
    book = _load_partition_book(part_config, part_id)
    name = PartitionConfig.load(part_config).graph_name
    return (book, name, {t: i for i, t in enumerate(book.ntypes)},
            {tuple(c): i for i, c in enumerate(book.canonical_etypes)})


def find_edges(g, edge_ids) -> tuple[torch.Tensor, torch.Tensor]:
    """(src, dst) of homogeneous edge ids, as homogeneous node ids (DGL's module-level function;
    `g.find_edges(eids, etype)` takes and gives per-type ids)."""
    book = g.get_partition_book()
    eids = as_id_tensor(edge_ids, "edge ids")
    if book.is_homogeneous:
        return g.find_edges(eids)
    types, per_type = book.map_to_per_etype(eids)
    src, dst = torch.empty_like(eids), torch.empty_like(eids)
    for i, c in enumerate(book.canonical_etypes):
        at = torch.nonzero(types == i).flatten()
        if at.numel():
            s, d = g.find_edges(per_type[at], c)
            src[at], dst[at] = book.map_to_homo_nid(s, c[0]), book.map_to_homo_nid(d, c[2])
    return src, dst


def in_subgraph(g, nodes):
    """Every in-edge of `nodes`, as a frontier (`edges()`, `edata[EID]`)."""
    from ..sampling import sample_neighbors

    return sample_neighbors(g, nodes, -1)


__all__ = ["load_partition", "load_partition_book", "find_edges", "in_subgraph"]
