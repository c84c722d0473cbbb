"""Small vectorised array helpers shared by partitioning, loading and sampling.

`np.unique` on int64 is hash-based and slow in numpy 2.x (8.5 s for 8M ids here, against
0.14 s for sort + mask), so sorted uniques go through `unique_sorted`.
"""

from __future__ import annotations

import numpy as np

from .native import kernels


def _sorted_runs(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(an integer array sorted, a mask of the first element of each run of equal values)."""
    b = np.sort(a, axis=None)
    first = np.empty(b.size, dtype=bool)
    first[:1] = True
    np.not_equal(b[1:], b[:-1], out=first[1:])
    return b, first


def unique_sorted(a: np.ndarray) -> np.ndarray:
    """Sorted distinct values of an integer array."""
    b, first = _sorted_runs(a)
    return b[first]


def unique_counts(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values of an integer array, how often each occurs), as np.unique with
    return_counts but with one sort and no index arrays."""
    b, first = _sorted_runs(a)
    starts = np.flatnonzero(first)
    return b[starts], np.diff(starts, append=b.size)


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


def gather_rows(a: np.ndarray, rows: np.ndarray, out: np.ndarray) -> np.ndarray:
    """out[i] = a[rows[i]] for rows in range (out: len(rows) rows of a's shape and dtype); one
    memcpy a row in C when built and `a` is C-contiguous, as fast as torch's index_select
    (numpy's `take` takes 1.5-2x as long for 400-byte rows here). Returns `out`."""
    lib = kernels()
    if lib is None or not a.flags.c_contiguous or not out.flags.c_contiguous or a.size == 0:
        return np.take(a, rows, axis=0, out=out)
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    lib.gather_rows(rows.size, rows.ctypes.data, a.ctypes.data, a[:1].nbytes, out.ctypes.data)
    return out


def inverse_permutation(perm: np.ndarray) -> np.ndarray:
    """`inv` such that inv[perm[i]] == i."""
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size, dtype=perm.dtype)
    return inv


def group_keys(key: np.ndarray, num_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """(stable argsort of integer keys in [0, num_keys), where each key's run starts in it:
    num_keys + 1 offsets). One counting sort in C when built (2M keys in 0.006 s, 4M keys of
    2 values in 0.01 s); else one `flatnonzero` per key for up to 4 keys, radix sort when the
    keys fit in 16 bits, numpy's stable sort otherwise (2M int32 keys: 0.23 s)."""
    lib = kernels()
    if lib is not None:
        key = np.ascontiguousarray(key, dtype=np.int64)
        order, starts = np.empty(key.size, dtype=np.int64), np.zeros(num_keys + 1, dtype=np.int64)
        if lib.group_by_kind(key.size, key.ctypes.data, None, num_keys, starts.ctypes.data, order.ctypes.data) < 0:
            raise ValueError(f"keys must lie in [0, {num_keys})")
        return order, starts
    starts = offsets(np.bincount(key, minlength=num_keys))
    if num_keys <= 4:
        return np.concatenate([np.flatnonzero(key == k) for k in range(num_keys)]), starts
    if num_keys <= np.iinfo(np.uint16).max:
        key = key.astype(np.uint16)
    elif num_keys <= np.iinfo(np.int32).max:
        key = key.astype(np.int32)
    return np.argsort(key, kind="stable"), starts


def add_counts(counts: np.ndarray, ids: np.ndarray) -> None:
    """counts[i] += number of times i occurs in `ids` (int64 counts; ids in range): in C when
    built, with no temporary as big as `counts` (numpy's bincount needs one per call)."""
    lib = kernels()
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    if lib is not None and counts.dtype == np.int64 and counts.flags.c_contiguous:
        lib.add_counts(ids.size, ids.ctypes.data, counts.ctypes.data)
    else:
        counts += np.bincount(ids, minlength=counts.size).astype(counts.dtype, copy=False)
