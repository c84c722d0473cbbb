"""Small vectorised array helpers shared by partitioning, loading and sampling.

`np.unique` on int64 is hash-based and slow in numpy 2.x (8.5 s for 8M ids here, against
0.14 s for sort + mask), so sorted uniques go through `unique_sorted`.
"""

from __future__ import annotations

import numpy as np


def unique_sorted(a: np.ndarray) -> np.ndarray:
    """Sorted distinct values of an integer array."""
    b = np.sort(a, axis=None)
    if b.size == 0:
        return b
    keep = np.empty(b.size, dtype=bool)
    keep[0] = True
    np.not_equal(b[1:], b[:-1], out=keep[1:])
    return b[keep]


def unique_inverse(ids: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct ids, each id's index among them) for int ids in [0, bound), as
    `np.unique(ids, return_inverse=True)`. When the ids are at least an eighth of the bound, a
    bitmap and a lookup table over the bound replace the sort (6x faster for a 200k-id halo of
    200k nodes) in about as much memory as the sort would take."""
    if bound > 8 * ids.size:
        return np.unique(ids, return_inverse=True)
    mark = np.zeros(bound, dtype=bool)
    mark[ids] = True
    uniq = np.flatnonzero(mark)
    where = np.empty(bound, dtype=np.int32 if bound <= np.iinfo(np.int32).max else np.int64)
    where[uniq] = np.arange(uniq.size, dtype=where.dtype)  # only the ids' entries are read back
    return uniq, where[ids].astype(np.int64, copy=False)


def offsets(counts: np.ndarray) -> np.ndarray:
    """Exclusive prefix sum with the total appended: counts [2, 3] -> [0, 2, 5]."""
    out = np.zeros(np.size(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def concat_ranges(indptr: np.ndarray, rows: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
    """Positions indptr[r]..indptr[r+1]-1 of every r in `rows`, concatenated in that order
    (vectorised); `counts` may pass indptr[rows+1] - indptr[rows] when already known.

    One output array and no other of its size: ones, the jump at each range's start, cumsum."""
    lo = indptr[rows]
    if counts is None:
        counts = indptr[rows + 1] - lo
    nonempty = np.flatnonzero(counts)
    lo, counts = lo[nonempty], counts[nonempty]
    out = np.ones(int(counts.sum()), dtype=np.int64)
    if out.size:
        out[0] = lo[0]
        out[offsets(counts)[1:-1]] = lo[1:] - (lo[:-1] + counts[:-1] - 1)
        np.cumsum(out, out=out)
    return out


def gather_in_place(values: np.ndarray, index: np.ndarray, step: int = 1 << 20) -> np.ndarray:
    """index[i] = values[index[i]], a piece at a time: the result takes no second array of
    its size (fresh memory is the slow part of a big gather on a VM). Returns `index`."""
    for i in range(0, index.size, step):
        index[i:i + step] = values[index[i:i + step]]
    return index


def inverse_permutation(perm: np.ndarray) -> np.ndarray:
    """`inv` such that inv[perm[i]] == i."""
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size, dtype=perm.dtype)
    return inv


def small_key_argsort(key: np.ndarray, num_keys: int) -> np.ndarray:
    """Stable argsort of keys in [0, num_keys): one `flatnonzero` per key for up to 4 keys
    (4M keys: 0.04 s for 2 keys against 0.08 s), radix sort when the keys fit in 16 bits."""
    if num_keys <= 4:
        return np.concatenate([np.flatnonzero(key == k) for k in range(num_keys)])
    if num_keys <= np.iinfo(np.uint16).max:
        key = key.astype(np.uint16)
    return np.argsort(key, kind="stable")
