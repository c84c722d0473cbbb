"""Neighbour sampling: the vectorised CSC kernel and the samplers built on it."""

from .kernel import sample_csc
from .local import SampledEdges, sample_graph, sample_partition
from .neighbor import sample_etype_neighbors, sample_hop, sample_neighbors

__all__ = ["sample_csc", "SampledEdges", "sample_graph", "sample_partition", "sample_neighbors",
           "sample_etype_neighbors", "sample_hop"]
