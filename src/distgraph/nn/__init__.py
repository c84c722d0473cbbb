"""Graph neural network layers and models that consume `Block`s (also under DGL's path,
`distgraph.nn.pytorch`)."""

from .graphsage import GraphSAGE
from .hetero import HeteroGraphConv
from .rgcn import RelGraphConv, relation_norm
from .sage import SAGEConv
from . import pytorch  # noqa: E402 (after the names it re-exports)

__all__ = ["SAGEConv", "GraphSAGE", "RelGraphConv", "relation_norm", "HeteroGraphConv", "pytorch"]
