"""The vectorised array helpers against numpy's obvious forms."""

import numpy as np
import pytest

from distgraph.arrays import concat_ranges, unique_inverse


@pytest.mark.parametrize("size,bound", [(0, 10), (5, 10), (1000, 600), (1000, 100_000), (50, 2**40)])
def test_unique_inverse_matches_numpy_on_both_paths(size, bound):
    """Dense ids go through the bitmap, sparse ones through the sort; both answer as np.unique."""
    ids = np.random.default_rng(size).integers(0, bound, size)
    uniq, at = unique_inverse(ids, bound)
    want_uniq, want_at = np.unique(ids, return_inverse=True)
    assert np.array_equal(uniq, want_uniq) and np.array_equal(at, want_at)
    assert at.dtype == np.int64 and np.array_equal(uniq[at], ids)


def test_concat_ranges_lists_each_rows_positions_in_order():
    indptr = np.array([0, 3, 3, 7, 8])
    rows = np.array([2, 0, 1, 3, 2])
    want = np.concatenate([np.arange(indptr[r], indptr[r + 1]) for r in rows])
    assert np.array_equal(concat_ranges(indptr, rows), want)
