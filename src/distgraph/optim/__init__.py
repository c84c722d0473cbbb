"""Sparse optimisers for `DistEmbedding` (applied server-side)."""

from .sparse import SparseAdagrad, SparseAdam, SparseOptimizer

__all__ = ["SparseAdagrad", "SparseAdam", "SparseOptimizer"]
