"""Graph neural network layers that consume `Block`s."""

from .sage import SAGEConv

__all__ = ["SAGEConv"]
