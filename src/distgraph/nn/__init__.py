"""Graph neural network layers and models that consume `Block`s."""

from .graphsage import GraphSAGE
from .sage import SAGEConv

__all__ = ["SAGEConv", "GraphSAGE"]
