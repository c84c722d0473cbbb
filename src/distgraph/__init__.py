"""distgraph: partition graphs too big for one machine and train GNNs and knowledge-graph
embeddings on them, standalone or on a cluster.

Names are imported on first use (`distgraph.lazy`): the command line checks its inputs
before torch is loaded."""

from .lazy import lazy_exports
from .version import __version__

_EXPORTS = {
    "nn": ".nn", "optim": ".optim", "results": ".results", "metrics": ".metrics",
    **{n: f".data:{n}" for n in ("generate_mag", "generate_sbm", "load_edgelist", "load_graph", "load_npz",
                                 "save_npz")},
    **{n: f".block:{n}" for n in ("Block", "EID", "NID", "to_block")},
    **{n: f".dataloading:{n}" for n in ("DataLoader", "DistEdgeDataLoader", "DistNodeDataLoader", "EdgeDataLoader",
                                        "MultiLayerFullNeighborSampler", "MultiLayerNeighborSampler", "NeighborSampler",
                                        "NodeDataLoader", "as_edge_prediction_sampler", "edge_split", "node_split")},
    "DistGraph": ".dist_graph:DistGraph",
    **{n: f".distributed:{n}" for n in ("CheckpointDir", "DistEmbedding", "DistTensor", "EdgePartitionPolicy",
                                        "NodePartitionPolicy", "PartitionPolicy", "barrier", "exit_client",
                                        "initialize", "load_checkpoint", "save_checkpoint", "shutdown_servers")},
    **{n: f".errors:{n}" for n in ("DistGraphError", "InputError", "PartitionError")},
    "graph": ".constructors:graph", "heterograph": ".constructors:heterograph",
    "ArrayGraph": ".array_graph:ArrayGraph", "Graph": ".tensor_graph:Graph", "DGLGraph": ".tensor_graph:Graph",
    **{n: f".transforms:{n}" for n in ("add_self_loop", "remove_self_loop", "reverse", "to_bidirected", "to_simple")},
    **{n: f".partition:{n}" for n in ("Partition", "PartitionStats", "RangePartitionBook", "load_partition",
                                      "load_partition_book", "partition_graph")},
    "sample_neighbors": ".sampling:sample_neighbors",
    **{n: f".results:{n}" for n in ("layerwise_inference", "load_results", "save_embeddings", "save_predictions")},
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
