"""Mini-batches for GNN training, with DGL's names (`dgl.dataloading`): neighbour samplers,
edge-prediction settings and negative samplers, work splitting, and the loaders."""

from ..block import Block, to_block
from . import negative_sampler
from .collate import EdgeCollator, NodeCollator
from .edge_prediction import EdgePredictionSampler, as_edge_prediction_sampler
from .loader import (DataLoader, DistDataLoader, DistEdgeDataLoader, DistNodeDataLoader, EdgeDataLoader,
                     NodeDataLoader)
from .neighbor_sampler import MultiLayerFullNeighborSampler, MultiLayerNeighborSampler, NeighborSampler
from .pair_graph import PairGraph
from .split import edge_split, node_split

__all__ = ["Block", "to_block", "negative_sampler", "NodeCollator", "EdgeCollator", "EdgePredictionSampler",
           "as_edge_prediction_sampler", "DataLoader", "DistDataLoader", "DistNodeDataLoader", "DistEdgeDataLoader",
           "NodeDataLoader", "EdgeDataLoader", "NeighborSampler", "MultiLayerNeighborSampler",
           "MultiLayerFullNeighborSampler", "PairGraph", "node_split", "edge_split"]
