"""`as_edge_prediction_sampler`: what a link-prediction mini-batch holds beside its node
sampler (DGL's arguments): which edges the sampled neighbourhoods leave out, the negative
sampler, and edge labels to fetch.

`exclude`: None; 'self' (the batch's own edges); 'reverse_id' (those and their reverses,
`reverse_eids[e]`); 'reverse' (every edge joining the same two nodes, in either direction:
no id map needed); or a function of the batch's edge ids returning ids to leave out.
Unlike DGL 2.1.0 on a DistGraph, where the setting reaches the sampler but is not applied,
it is applied here."""

from __future__ import annotations

from typing import Callable

import torch

from ..errors import InputError
from ..graph import as_id_tensor
from . import negative_sampler as negatives
from .neighbor_sampler import NeighborSampler, _names

EXCLUDE = (None, "self", "reverse_id", "reverse")


class EdgePredictionSampler:
    """A node sampler with the link-prediction settings of `as_edge_prediction_sampler`."""

    def __init__(self, sampler: NeighborSampler, exclude: str | Callable | None = None,
                 reverse_eids: torch.Tensor | None = None, reverse_etypes: dict | None = None,
                 negative_sampler=None, prefetch_labels=None):
        if isinstance(sampler, EdgePredictionSampler):
            raise InputError("this sampler already is an edge-prediction sampler")
        if exclude == "reverse_types" or reverse_etypes is not None:
            raise InputError("exclude='reverse_types' pairs edge types of a heterogeneous graph; use "
                             "exclude='reverse_id' with reverse_eids, or 'reverse'")
        if not callable(exclude) and exclude not in EXCLUDE:
            raise InputError(f"exclude must be one of {EXCLUDE} or a function of the edge ids, got {exclude!r}")
        if exclude == "reverse_id" and reverse_eids is None:
            raise InputError("exclude='reverse_id' needs reverse_eids (the id of each edge's reverse)")
        self.sampler, self.exclude, self.negative_sampler = sampler, exclude, negative_sampler
        self.reverse_eids = None if reverse_eids is None else as_id_tensor(reverse_eids, "reverse_eids")
        self.prefetch_labels = _names(prefetch_labels, "prefetch_labels")

    def excluded(self, eids: torch.Tensor, src: torch.Tensor, dst: torch.Tensor, num_nodes: int
                 ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """(edge ids, src * num_nodes + dst pair keys) the batch's neighbourhoods leave out."""
        if self.exclude is None:
            return None, None
        if self.exclude == "self":
            return eids, None
        if self.exclude == "reverse_id":
            return torch.cat([eids, self.reverse_eids[eids]]), None
        if self.exclude == "reverse":
            return eids, torch.cat([src * num_nodes + dst, dst * num_nodes + src])
        return as_id_tensor(self.exclude(eids), "the edges exclude() returned"), None

    def spec(self) -> tuple[dict, list[torch.Tensor]]:
        """Plain settings and arrays from which a sampler process rebuilds this sampler."""
        if callable(self.exclude) or (self.negative_sampler is not None and not hasattr(self.negative_sampler, "spec")):
            raise InputError("a function given as exclude or negative_sampler cannot be sent to sampler processes "
                             "(nothing is pickled); use the built-in ones, or launch with --num_samplers 0")
        spec = {"sampler": self.sampler.spec(), "exclude": self.exclude, "prefetch_labels": self.prefetch_labels,
                "negative": None if self.negative_sampler is None else self.negative_sampler.spec()}
        return spec, [] if self.reverse_eids is None else [self.reverse_eids]

    @classmethod
    def from_spec(cls, spec: dict, arrays: list[torch.Tensor]) -> "EdgePredictionSampler":
        return cls(NeighborSampler.from_spec(spec["sampler"]), spec["exclude"], arrays[0] if arrays else None, None,
                   negatives.from_spec(spec["negative"]), spec["prefetch_labels"])


def as_edge_prediction_sampler(sampler: NeighborSampler, exclude: str | Callable | None = None,
                               reverse_eids: torch.Tensor | None = None, reverse_etypes: dict | None = None,
                               negative_sampler=None, prefetch_labels=None) -> EdgePredictionSampler:
    """DGL's `as_edge_prediction_sampler`: a sampler for edge loaders (see the module's doc)."""
    return EdgePredictionSampler(sampler, exclude, reverse_eids, reverse_etypes, negative_sampler, prefetch_labels)
