"""`distgraph.nn.pytorch`: the layers under the path DGL scripts import them from
(`import dgl.nn.pytorch as dglnn`); the same classes as `distgraph.nn`."""

from .graphconv import GraphConv
from .graphsage import GraphSAGE
from .hetero import HeteroGraphConv
from .rgcn import RelGraphConv
from .sage import SAGEConv
from .weight_basis import WeightBasis

__all__ = ["GraphConv", "GraphSAGE", "HeteroGraphConv", "RelGraphConv", "SAGEConv", "WeightBasis"]
