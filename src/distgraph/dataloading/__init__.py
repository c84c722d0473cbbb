"""Mini-batches for GNN training: blocks, the multi-layer neighbour sampler and loaders."""

from .block import Block, to_block
from .neighbor_sampler import MultiLayerNeighborSampler

__all__ = ["Block", "to_block", "MultiLayerNeighborSampler"]
