"""`distgraph.nn.pytorch`: the layers under the path DGL scripts import them from
(`import dgl.nn.pytorch as dglnn`); the same classes as `distgraph.nn`."""

from . import GraphSAGE, HeteroGraphConv, RelGraphConv, SAGEConv

__all__ = ["GraphSAGE", "HeteroGraphConv", "RelGraphConv", "SAGEConv"]
