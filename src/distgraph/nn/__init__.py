"""Graph neural network layers and models that consume `Block`s (also under DGL's path,
`distgraph.nn.pytorch`)."""

from .graphconv import GraphConv
from .graphsage import GraphSAGE
from .hetero import HeteroGraphConv
from .rgcn import RelGraphConv, relation_norm
from .sage import SAGEConv
from .weight_basis import WeightBasis
from . import pytorch  # noqa: E402 (after the names it re-exports)

__all__ = ["GraphConv", "SAGEConv", "GraphSAGE", "RelGraphConv", "relation_norm", "HeteroGraphConv", "WeightBasis",
           "pytorch"]
