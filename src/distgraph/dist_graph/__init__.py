"""`DistGraph` and the graph operations servers answer for it."""

from .graph import DistGraph

__all__ = ["DistGraph"]
