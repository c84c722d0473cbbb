"""`distgraph.distributed.optim`: the sparse optimisers under DGL's path (the very classes
of `distgraph.optim`)."""

from ..optim import SparseAdagrad, SparseAdam

__all__ = ["SparseAdagrad", "SparseAdam"]
