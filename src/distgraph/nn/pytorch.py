"""`distgraph.nn.pytorch`: the layers under the path DGL scripts import them from
(`import dgl.nn.pytorch as dglnn`); the same classes as `distgraph.nn`."""

from . import GraphConv, GraphSAGE, HeteroGraphConv, RelGraphConv, SAGEConv, WeightBasis

__all__ = ["GraphConv", "GraphSAGE", "HeteroGraphConv", "RelGraphConv", "SAGEConv", "WeightBasis"]
