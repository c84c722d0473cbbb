"""Mini-batches for GNN training: blocks, the multi-layer neighbour sampler, work splitting and loaders."""

from .block import Block, to_block
from .collate import EdgeCollator, NodeCollator, PairGraph
from .loader import DistEdgeDataLoader, DistNodeDataLoader, EdgeDataLoader, NodeDataLoader
from .neighbor_sampler import MultiLayerNeighborSampler
from .split import edge_split, node_split

__all__ = ["Block", "to_block", "MultiLayerNeighborSampler", "NodeCollator", "EdgeCollator", "PairGraph",
           "DistNodeDataLoader", "DistEdgeDataLoader", "NodeDataLoader", "EdgeDataLoader", "node_split", "edge_split"]
