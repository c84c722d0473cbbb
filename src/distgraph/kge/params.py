"""Embedding tables of a model (entities, relations, TransR projections) and their optimizer state."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from .models import KGEModel


@dataclass
class KGEParams:
    """`tables['entity']` is indexed by entity id, the others (model.relation_tables()) by relation id."""

    tables: dict[str, Tensor]
    states: dict[str, Tensor]

    @classmethod
    def create(cls, model: KGEModel, n_entities: int, n_relations: int, seed: int = 0) -> KGEParams:
        """Uniform initialisation in [-emb_init, emb_init] (DGL-KE's), zero Adagrad state."""
        gen = torch.Generator().manual_seed(seed)
        shapes = {"entity": (n_entities, model.entity_dim)}
        shapes.update({name: (n_relations, w) for name, w in model.relation_tables().items()})
        tables = {}
        for name, shape in shapes.items():
            bound = model.init_range(name)
            tables[name] = torch.rand(shape, generator=gen).mul_(2 * bound).sub_(bound)
        return cls(tables, {name: torch.zeros(len(t)) for name, t in tables.items()})

    def relation_names(self) -> list[str]:
        """Names of the relation-indexed tables, in the model's `rel` tuple order."""
        return [n for n in self.tables if n != "entity"]

    def share_memory_(self) -> KGEParams:
        """Move every tensor to shared memory so worker processes update the same storage."""
        for t in (*self.tables.values(), *self.states.values()):
            t.share_memory_()
        return self
