"""The METIS input (undirected simple CSR): the C kernels and the numpy path against brute force."""

import shutil

import numpy as np
import pytest

from distgraph.errors import PartitionError
from distgraph.native import kernels
from distgraph.partition import metis, symmetric
from distgraph.partition.symmetric import symmetric_adjacency

PATHS = [pytest.param(True, id="native"), pytest.param(False, id="numpy")]


@pytest.fixture
def use_path(monkeypatch):
    """use_path(native): the C kernels (which must be built here) or, as without them, numpy."""
    def use(native: bool) -> None:
        if native:
            if kernels() is None:
                pytest.skip("the C kernels are not built here")
        else:
            monkeypatch.setattr(symmetric, "kernels", lambda: None)
    return use


def brute_force_adjacency(src, dst, n):
    """Sorted neighbour lists of the undirected simple graph, the slow obvious way."""
    rows = [set() for _ in range(n)]
    for u, v in zip(src.tolist(), dst.tolist()):
        if u != v:
            rows[u].add(v)
            rows[v].add(u)
    xadj = np.cumsum([0] + [len(r) for r in rows])
    return xadj, np.array([v for r in rows for v in sorted(r)], dtype=np.int64)


def check(src, dst, n):
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    want_xadj, want_adj = brute_force_adjacency(src, dst, n)
    xadj, adjncy = symmetric_adjacency(src, dst, n)
    assert xadj.dtype == np.int32 and adjncy.dtype == np.int32
    assert np.array_equal(xadj, want_xadj) and np.array_equal(adjncy, want_adj)


def test_the_kernels_are_built_where_there_is_a_c_compiler():
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here: the package installs without its kernels and runs the numpy paths")
    assert kernels() is not None


@pytest.mark.parametrize("native", PATHS)
def test_matches_brute_force_across_several_row_blocks(use_path, native):
    use_path(native)
    # 60,000 edges on 3,000 nodes: blocks of 512 rows on the native path, so both threads'
    # halves, the move of the second half's output and rows spanning block ends are exercised.
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 3000, 60000), rng.integers(0, 3000, 60000)
    src[:500] = dst[:500]  # self-loops are dropped
    src[500:1000], dst[500:1000] = dst[1000:1500], src[1000:1500]  # both directions of an edge: once
    src[1500:2000], dst[1500:2000] = src[2000:2500], dst[2000:2500]  # an edge twice: once
    check(src, dst, 3000)


@pytest.mark.parametrize("native", PATHS)
@pytest.mark.parametrize("src,dst,n", [
    ([], [], 8),  # no edges
    ([], [], 1),
    ([3, 3, 7], [3, 3, 7], 8),  # self-loops only: nothing left
    ([1] * 60 + [2, 0], [2] * 60 + [1, 4], 8),  # one edge many times: the halves split inside its run
    ([0, 1023], [1023, 511], 1024),  # ids at a power of two's edge
    (list(range(99_999)), list(range(1, 100_000)), 100_000),  # a path: no entry repeated, so nothing moves down
    ([0, 1, 2, 3], [1, 2, 3, 0], 100_000),  # the edges in the first block, every later row isolated
])
def test_edge_cases(use_path, src, dst, n, native):
    use_path(native)
    check(src, dst, n)


@pytest.mark.parametrize("native", PATHS)
def test_a_hub_row_sorts_in_order(use_path, native):
    use_path(native)
    # One node tied to every other twice over (its buckets outgrow the insertion sort).
    rng = np.random.default_rng(1)
    others = rng.permutation(np.arange(1, 20000))
    src = np.concatenate([np.zeros(2 * others.size, dtype=np.int64), rng.integers(0, 20000, 30000)])
    dst = np.concatenate([others, others[::-1], rng.integers(0, 20000, 30000)])
    check(src, dst, 20000)


def test_the_64_bit_fallback_when_entries_reach_the_32_bit_limit(monkeypatch):
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 50, 400), rng.integers(0, 50, 400)
    want_xadj, want_adj = brute_force_adjacency(src, dst, 50)
    monkeypatch.setattr(metis, "INT32_LIMIT", int(want_adj.size) - 1)  # one entry too many for 32 bits
    xadj, adjncy = symmetric_adjacency(src, dst, 50)
    assert xadj.dtype == np.int64 and adjncy.dtype == np.int64
    assert np.array_equal(xadj, want_xadj) and np.array_equal(adjncy, want_adj)


def test_the_native_path_refuses_ids_out_of_range_without_touching_memory(use_path):
    use_path(True)
    with pytest.raises(PartitionError, match=r"edge \(2, 9\) has a node id outside \[0, 8\)"):
        symmetric_adjacency(np.array([0, 1, 2]), np.array([1, 2, 9]), 8)
    with pytest.raises(PartitionError, match=r"edge \(-1, 3\)"):
        symmetric_adjacency(np.array([-1, 1]), np.array([3, 2]), 8)


def test_without_the_kernels_numpy_gives_the_same_arrays(use_path):
    rng = np.random.default_rng(2)
    src, dst = rng.integers(0, 100, 1000), rng.integers(0, 100, 1000)
    native = symmetric_adjacency(src, dst, 100)
    use_path(False)
    check(src, dst, 100)
    assert all(np.array_equal(a, b) for a, b in zip(native, symmetric_adjacency(src, dst, 100)))
