"""Distributed runtime: `initialize`, distributed tensors and embeddings, partition policies."""

from .dist_embedding import DistEmbedding
from .dist_tensor import DistTensor
from .env import sampler_env
from .initializers import Constant, Initializer, Normal, Uniform, Zeros
from .policy import (EdgePartitionPolicy, NodePartitionPolicy, PartitionPolicy, edge_policy_str, graph_data_name,
                     node_policy_str)
from .runtime import barrier, exit_client, get_context, initialize, is_initialized, shutdown_servers

__all__ = [
    "initialize", "barrier", "exit_client", "shutdown_servers", "is_initialized", "get_context", "sampler_env",
    "DistTensor", "DistEmbedding",
    "PartitionPolicy", "NodePartitionPolicy", "EdgePartitionPolicy", "node_policy_str", "edge_policy_str",
    "graph_data_name",
    "Initializer", "Zeros", "Constant", "Uniform", "Normal",
]
