"""The undirected simple-graph CSR (xadj, adjncy) METIS takes: both directions of every edge,
no self-loops, no repeats, each row's neighbours ascending.

Two paths with the same output: the C kernels of `distgraph.native` (int32 output, memory
one uint32 per entry) and numpy (one int64 key per entry), for when the kernels are not
built or the graph needs 64-bit ids.
"""

from __future__ import annotations

import ctypes
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..errors import PartitionError
from ..native import kernels
from .metis import fits_int32

_BLOCK_KEYS = 32768  # keys per row block on average: a block and its sort buffer stay in L2


def symmetric_adjacency(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR of the undirected simple graph of `src -> dst`, int32 when the 32-bit METIS can take it:
    from the C kernels when they are built and the output fits int32, else from numpy.
    Node ids must lie in [0, num_nodes)."""
    if num_nodes > 2**31:  # ids below 2**31: u << 32 stays a positive int64, and fits uint32 keys
        raise PartitionError(f"METIS partitioning takes at most 2**31 nodes, the graph has {num_nodes}; "
                             f"use --part_method random")
    src = np.ascontiguousarray(src, dtype=np.int64)
    dst = np.ascontiguousarray(dst, dtype=np.int64)
    lib = kernels()
    if lib is not None and fits_int32(num_nodes, 2 * src.size):
        return _native_path(lib, src, dst, num_nodes)
    return _numpy_path(src, dst, num_nodes)


def _native_path(lib: ctypes.CDLL, src: np.ndarray, dst: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Blocks of 2**shift rows, each entry one uint32 key (local row | column): the edges are
    counted and scattered into blocks by two threads (each its own half of the edges and its
    own slots in every block), then each thread sorts and compacts half of the blocks in place;
    the second half's output is moved down after the first's."""
    m = src.size
    cbits = max(1, (n - 1).bit_length())
    shift = max(1, min(32 - cbits, (_BLOCK_KEYS * n // max(2 * m, 1)).bit_length() - 1))
    nblocks = (n + (1 << shift) - 1) >> shift
    halves = ((src[: m // 2], dst[: m // 2]), (src[m // 2:], dst[m // 2:]))
    counts = (np.zeros(nblocks, dtype=np.int64), np.zeros(nblocks, dtype=np.int64))
    with ThreadPoolExecutor(max_workers=2) as pool:
        bad = list(pool.map(lambda h, c: lib.sym_count(h[0].size, h[0].ctypes.data, h[1].ctypes.data, n, shift,
                                                       c.ctypes.data), halves, counts))
        for (s, d), first in zip(halves, bad):
            if first:
                e = first - 1
                raise PartitionError(f"edge ({int(s[e])}, {int(d[e])}) has a node id outside [0, {n}); "
                                     f"fix the edge list or num_nodes")
        bstart = np.zeros(nblocks + 1, dtype=np.int64)
        np.cumsum(counts[0] + counts[1], out=bstart[1:])
        keys = np.empty(int(bstart[-1]), dtype=np.uint32)
        cursors = (bstart[:-1].copy(), bstart[:-1] + counts[0])
        list(pool.map(lambda h, c: lib.sym_scatter(h[0].size, h[0].ctypes.data, h[1].ctypes.data, shift, cbits,
                                                   c.ctypes.data, keys.ctypes.data), halves, cursors))
        mid = int(np.clip(np.searchsorted(bstart, bstart[-1] // 2), 1, nblocks))
        xadj = np.empty(n + 1, dtype=np.int32)

        def sort_blocks(b0: int, b1: int) -> int:
            return lib.sym_rows(b0, b1, bstart.ctypes.data, shift, cbits, n, keys.ctypes.data, xadj.ctypes.data)

        first, second = pool.map(sort_blocks, (0, mid), (mid, nblocks))
    if first < 0 or second < 0:
        raise PartitionError(f"out of memory for a sort buffer while symmetrising {n} nodes; free memory or "
                             f"partition on a larger machine")
    adjncy = keys.view(np.int32)
    start = int(bstart[mid])
    if second and start != first:  # the first half dropped repeats: its columns end before the second's start
        adjncy[first:first + second] = adjncy[start:start + second]
    xadj[min(n, mid << shift):n] += first  # the second half's rows were counted from its own start
    xadj[n] = first + second
    return xadj, adjncy[:first + second]


def _keys(u: np.ndarray, v: np.ndarray, out: np.ndarray) -> None:
    """out = u << 32 | v: one direction of every edge."""
    np.left_shift(u, 32, out=out)
    out |= v


def _sort_rows(keys: np.ndarray, rows: range, base: int) -> np.ndarray:
    """Sort a block of keys that holds the starts of `rows`; returns those starts, plus `base`."""
    keys.sort()
    return base + np.searchsorted(keys, np.arange(rows.start, rows.stop, dtype=np.int64) << 32)


def _numpy_path(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """One int64 key per directed entry (u << 32 | v), both directions in one array.

    A partition at its middle (SIMD selection, one pass) puts every key of the first half at or
    below every key of the second, so sorting the halves on two threads sorts the whole, with
    no merge after, and each thread finds the starts of its own rows. Row offsets are those
    starts less the duplicates, and the neighbour ids are the keys' low 32 bits.
    """
    loops = src == dst
    if loops.any():
        src, dst = src[~loops], dst[~loops]
    m = src.size
    key = np.empty(2 * m, dtype=np.int64)
    halves = (key[:m], key[m:])
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(_keys, (src, dst), (dst, src), halves))
        split = 0
        if m:  # rows up to the middle key's start in the first half (a search there: half the misses)
            key.partition(m)
            split = min(num_nodes, int(key[m] >> 32) + 1)
        starts = pool.map(_sort_rows, halves, (range(split), range(split, num_nodes)), (0, m))
        row_start = np.concatenate([*starts, [key.size]])
    keep = np.empty(key.size, dtype=bool)
    keep[:1] = True
    np.not_equal(key[1:], key[:-1], out=keep[1:])
    duplicates = np.flatnonzero(~keep)
    idx = np.int32 if fits_int32(num_nodes, key.size - duplicates.size) else np.int64
    xadj = (row_start - np.searchsorted(duplicates, row_start)).astype(idx)
    if idx is np.int32:  # the low halves, as int32 (ids < 2**31): no uint32 copy to convert
        return xadj, key.view(np.int32)[(0 if sys.byteorder == "little" else 1)::2][keep]
    return xadj, np.bitwise_and(key[keep], 0xFFFFFFFF)
