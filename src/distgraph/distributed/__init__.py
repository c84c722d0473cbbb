"""Distributed runtime, with what `dgl.distributed` offers under its names: `initialize`,
`DistGraph`, distributed tensors and embeddings, partition policies, work splitting,
sampling, the partition functions (DGL's return shapes), ranks and counts, the sparse
optimizers, the loaders, a trainer's device and DDP set-up (names imported on first use, so
the launcher, which needs none of them, stays light). One implementation behind each name:
these are the same objects as `distgraph.X`."""

from ..lazy import lazy_exports

_EXPORTS = {
    "DistEmbedding": ".dist_embedding:DistEmbedding", "DistTensor": ".dist_tensor:DistTensor",
    "DistGraph": "..dist_graph:DistGraph",
    "sampler_env": "..cluster.env:sampler_env",
    **{n: f".checkpoint:{n}" for n in ("CheckpointDir", "load_checkpoint", "save_checkpoint")},
    **{n: f".resume:{n}" for n in ("EpochCheckpoints", "model_digest")},
    "rank_order_allreduce_hook": ".ddp:rank_order_allreduce_hook",
    **{n: f".devices:{n}" for n in ("data_parallel", "ddp_backend", "local_rank", "trainer_device")},
    **{n: f".preflight:{n}" for n in ("check_train_shares", "require_fields")},
    **{n: f".initializers:{n}" for n in ("Constant", "Initializer", "Normal", "Uniform", "Zeros")},
    **{n: f".policy:{n}" for n in ("EdgePartitionPolicy", "NodePartitionPolicy", "PartitionPolicy",
                                   "edge_policy_str", "graph_data_name", "node_policy_str", "table_policy_str")},
    **{n: f".runtime:{n}" for n in ("all_gather", "barrier", "exit_client", "get_context", "initialize",
                                    "is_initialized", "shutdown_servers")},
    **{n: f".role:{n}" for n in ("get_num_client", "get_num_clients", "get_rank")},
    **{n: f".partitions:{n}" for n in ("find_edges", "in_subgraph", "load_partition", "load_partition_book")},
    "partition_graph": "..partition:partition_graph",
    "GraphPartitionBook": "..partition:RangePartitionBook", "RangePartitionBook": "..partition:RangePartitionBook",
    **{n: f"..dataloading:{n}" for n in ("DistDataLoader", "DistEdgeDataLoader", "DistNodeDataLoader", "edge_split",
                                         "node_split")},
    **{n: f"..sampling:{n}" for n in ("sample_etype_neighbors", "sample_neighbors")},
    "dgl_partition_to_graphbolt": "..graphbolt:dgl_partition_to_graphbolt",
    **{n: f"..optim:{n}" for n in ("SparseAdagrad", "SparseAdam")},
    **{n: f"..ids:{n}" for n in ("DEFAULT_ETYPE", "DEFAULT_NTYPE")},
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
