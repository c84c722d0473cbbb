"""Sampling weights of a partition's edges read from its machine's store, as DGL reads `prob`:
per edge type, the machine's rows of a `DistTensor` (graph data published from the partition
or a tensor assigned at run time), looked up only for the CSC slots that sampling considers.

A partition's in-edges are its own edges; an edge's id maps to its type and per-type id
through the partition book, and the machine's rows of a type start at its per-type range."""

from __future__ import annotations

import math

import torch

from ..distributed.policy import edge_policy_str
from ..errors import InputError
from ..kvstore.store import KVStore, UnknownTensor
from ..partition import Partition
from .kernel import Csc


def edge_weights(store: KVStore, part: Partition, names: list[str | None] | None) -> list[torch.Tensor | None] | None:
    """This machine's rows of the weights that `names` names, per edge type in the graph's order
    (a tensor's store name; None: weight 1), checked to hold one value per edge of their type;
    None without weights."""
    if names is None:
        return None
    types = part.canonical_etypes
    if len(names) != len(types):
        raise InputError(f"sampling weights name {len(names)} tensors but the graph has {len(types)} edge types")
    shards = []
    for c, name in zip(types, names):
        if name is None:
            shards.append(None)
            continue
        try:
            shard = store.shard(name)
        except UnknownTensor:
            raise InputError(f"the sampling weights {name!r} of edge type {c} do not exist on machine "
                             f"{part.part_id}") from None
        meta = shard.meta
        if meta.policy != edge_policy_str(c) or math.prod(meta.shape[1:]) != 1:
            raise InputError(f"the sampling weights {name!r} must hold one value per edge of type {c} "
                             f"(policy {edge_policy_str(c)!r}), not {list(meta.shape)} rows of {meta.policy!r}")
        shards.append(shard.data.reshape(-1))
    return shards


class SlotWeights:
    """`weights[slots]`: the float64 weights of CSC slots of a partition (what the kernel's
    weighted draws index), from per-type rows of this machine."""

    def __init__(self, csc: Csc, part: Partition, shards: list[torch.Tensor | None]):
        self.csc, self.book, self.shards = csc, part.book, shards
        self.starts = [part.book.edge_range(part.part_id, c)[0] for c in part.canonical_etypes]

    def __getitem__(self, slots: torch.Tensor) -> torch.Tensor:
        eids = self.csc.edge_ids(slots)
        if len(self.shards) == 1 and self.shards[0] is not None:
            return self.shards[0].index_select(0, eids - self.starts[0]).to(torch.float64)
        kind, per_type = self.book.map_to_per_etype(eids)
        out = torch.ones(eids.numel(), dtype=torch.float64)
        for t, rows in enumerate(self.shards):
            if rows is not None:
                at = torch.nonzero(kind == t).flatten()
                out[at] = rows.index_select(0, per_type.index_select(0, at) - self.starts[t]).to(torch.float64)
        return out
