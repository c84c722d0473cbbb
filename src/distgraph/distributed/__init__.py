"""Distributed runtime: `initialize`, distributed tensors and embeddings, partition policies
(names imported on first use, so the launcher, which needs none of them, stays light)."""

from ..lazy import lazy_exports

_EXPORTS = {
    "DistEmbedding": ".dist_embedding:DistEmbedding", "DistTensor": ".dist_tensor:DistTensor",
    "sampler_env": "..cluster.env:sampler_env",
    **{n: f".checkpoint:{n}" for n in ("CheckpointDir", "load_checkpoint", "save_checkpoint")},
    **{n: f".initializers:{n}" for n in ("Constant", "Initializer", "Normal", "Uniform", "Zeros")},
    **{n: f".policy:{n}" for n in ("EdgePartitionPolicy", "NodePartitionPolicy", "PartitionPolicy",
                                   "edge_policy_str", "graph_data_name", "node_policy_str", "table_policy_str")},
    **{n: f".runtime:{n}" for n in ("all_gather", "barrier", "exit_client", "get_context", "initialize",
                                    "is_initialized", "shutdown_servers")},
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
