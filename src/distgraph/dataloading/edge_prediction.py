"""`as_edge_prediction_sampler`: what a link-prediction mini-batch holds beside its node
sampler (DGL's arguments): which edges the sampled neighbourhoods leave out, the negative
sampler, and edge labels to fetch.

`exclude`: None; 'self' (the batch's own edges); 'reverse_id' (those and their reverses,
`reverse_eids[e]`); 'reverse_types' (on a heterogeneous graph, those and the edges with the
same per-type ids in the reverse edge types, `reverse_etypes = {etype: its reverse}`);
'reverse' (every edge joining the same two nodes, in either direction: no id map needed);
or a function of the batch's edge ids returning ids to leave out.
Unlike DGL 2.1.0 on a DistGraph, where the setting reaches the sampler but is not applied,
it is applied here."""

from __future__ import annotations

from typing import Callable

import torch

from ..errors import InputError
from ..ids import as_id_tensor
from . import negative_sampler as negatives
from .neighbor_sampler import NeighborSampler, _names

EXCLUDE = (None, "self", "reverse_id", "reverse_types", "reverse")


class EdgePredictionSampler:
    """A node sampler with the link-prediction settings of `as_edge_prediction_sampler`."""

    def __init__(self, sampler: NeighborSampler, exclude: str | Callable | None = None,
                 reverse_eids: torch.Tensor | None = None, reverse_etypes: dict | None = None,
                 negative_sampler=None, prefetch_labels=None):
        if isinstance(sampler, EdgePredictionSampler):
            raise InputError("this sampler already is an edge-prediction sampler")
        if exclude == "reverse_types" and not reverse_etypes:
            raise InputError("exclude='reverse_types' needs reverse_etypes ({edge type: its reverse edge type})")
        if not callable(exclude) and exclude not in EXCLUDE:
            raise InputError(f"exclude must be one of {EXCLUDE} or a function of the edge ids, got {exclude!r}")
        if exclude == "reverse_id" and reverse_eids is None:
            raise InputError("exclude='reverse_id' needs reverse_eids (the id of each edge's reverse)")
        self.sampler, self.exclude, self.negative_sampler = sampler, exclude, negative_sampler
        self.reverse_eids = None if reverse_eids is None else as_id_tensor(reverse_eids, "reverse_eids")
        key = lambda c: ":".join(c) if isinstance(c, (tuple, list)) else str(c)  # noqa: E731 (plain data)
        self.reverse_etypes = {key(a): key(b) for a, b in (reverse_etypes or {}).items()}
        self.prefetch_labels = _names(prefetch_labels, "prefetch_labels")

    def excluded(self, g, eids: torch.Tensor, src: torch.Tensor, dst: torch.Tensor
                 ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """(edge ids, src * num_nodes + dst pair keys) the batch's neighbourhoods leave out
        (homogeneous ids of `g`)."""
        n = g.num_nodes()
        if self.exclude is None:
            return None, None
        if self.exclude == "self":
            return eids, None
        if self.exclude == "reverse_id":
            return torch.cat([eids, self.reverse_eids[eids]]), None
        if self.exclude == "reverse_types":
            from ..ids import resolve_etype
            from ..sampling.neighbor import type_map

            types = type_map(g)
            kinds, per_type = types.map_to_per_etype(eids)
            drop = [eids]
            for a, b in self.reverse_etypes.items():
                at = kinds == types.canonical_etypes.index(resolve_etype(a, types.canonical_etypes))
                drop.append(types.map_to_homo_eid(per_type[at], resolve_etype(b, types.canonical_etypes)))
            return torch.cat(drop), None
        if self.exclude == "reverse":
            return eids, torch.cat([src * n + dst, dst * n + src])
        return as_id_tensor(self.exclude(eids), "the edges exclude() returned"), None

    @property
    def runs_user_code(self) -> bool:
        """Whether a batch calls functions of the user's (exclude, or a negative sampler of DGL's form)."""
        return callable(self.exclude) or (self.negative_sampler is not None
                                          and not hasattr(self.negative_sampler, "spec"))

    def spec(self) -> tuple[dict, list[torch.Tensor]]:
        """Plain settings and arrays from which a sampler process rebuilds this sampler."""
        if self.runs_user_code:
            raise InputError("a function given as exclude or negative_sampler cannot be sent to sampler processes "
                             "(nothing is pickled); use the built-in ones, or launch with --num_samplers 0")
        spec = {"sampler": self.sampler.spec(), "exclude": self.exclude, "prefetch_labels": self.prefetch_labels,
                "negative": None if self.negative_sampler is None else self.negative_sampler.spec(),
                "reverse_etypes": self.reverse_etypes}
        return spec, [] if self.reverse_eids is None else [self.reverse_eids]

    @classmethod
    def from_spec(cls, spec: dict, arrays: list[torch.Tensor]) -> "EdgePredictionSampler":
        return cls(NeighborSampler.from_spec(spec["sampler"]), spec["exclude"], arrays[0] if arrays else None,
                   spec["reverse_etypes"], negatives.from_spec(spec["negative"]), spec["prefetch_labels"])


def as_edge_prediction_sampler(sampler: NeighborSampler, exclude: str | Callable | None = None,
                               reverse_eids: torch.Tensor | None = None, reverse_etypes: dict | None = None,
                               negative_sampler=None, prefetch_labels=None) -> EdgePredictionSampler:
    """DGL's `as_edge_prediction_sampler`: a sampler for edge loaders (see the module's doc)."""
    return EdgePredictionSampler(sampler, exclude, reverse_eids, reverse_etypes, negative_sampler, prefetch_labels)
