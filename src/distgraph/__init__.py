"""distgraph: partition graphs too big for one machine and train GNNs and knowledge-graph
embeddings on them, standalone or on a cluster."""

from .data import generate_mag, generate_sbm, load_edgelist, load_graph, load_npz, save_npz
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

__version__ = "0.1.0"

__all__ = [
    "Graph", "partition_graph", "load_partition", "load_partition_book", "RangePartitionBook", "Partition",
    "PartitionStats", "load_npz", "save_npz", "load_edgelist", "load_graph", "generate_sbm", "generate_mag",
    "DistGraphError", "InputError", "PartitionError",
]
