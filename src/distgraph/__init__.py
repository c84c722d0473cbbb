"""distgraph: partition graphs too big for one machine and train GNNs and knowledge-graph
embeddings on them, standalone or on a cluster."""

from . import nn, optim
from .data import generate_mag, generate_sbm, load_edgelist, load_graph, load_npz, save_npz
from .dataloading import (Block, DistEdgeDataLoader, DistNodeDataLoader, EdgeDataLoader, MultiLayerNeighborSampler,
                          NodeDataLoader, edge_split, node_split)
from .dist_graph import DistGraph
from .distributed import (DistEmbedding, DistTensor, EdgePartitionPolicy, NodePartitionPolicy, PartitionPolicy,
                          barrier, exit_client, initialize, shutdown_servers)
from .errors import DistGraphError, InputError, PartitionError
from .graph import Graph
from .partition import (
    Partition,
    PartitionStats,
    RangePartitionBook,
    load_partition,
    load_partition_book,
    partition_graph,
)
from .sampling import sample_neighbors

__version__ = "0.1.0"

__all__ = [
    "Graph", "partition_graph", "load_partition", "load_partition_book", "RangePartitionBook", "Partition",
    "PartitionStats", "load_npz", "save_npz", "load_edgelist", "load_graph", "generate_sbm", "generate_mag",
    "initialize", "barrier", "exit_client", "shutdown_servers", "DistGraph", "DistTensor", "DistEmbedding",
    "PartitionPolicy", "NodePartitionPolicy", "EdgePartitionPolicy", "node_split", "edge_split", "sample_neighbors",
    "MultiLayerNeighborSampler", "DistNodeDataLoader", "DistEdgeDataLoader", "NodeDataLoader", "EdgeDataLoader",
    "Block", "nn", "optim", "DistGraphError", "InputError", "PartitionError",
]
