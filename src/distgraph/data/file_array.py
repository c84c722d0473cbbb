"""An array that stays in its file: C-order rows at an offset, read by positioned reads.

Nothing is mapped, so rows count in the process's memory only while a read holds them (a mapped
file's pages would count as resident for as long as the mapping lives: the whole edge list of a
billion-edge graph after one pass). Slices are one read; `take` reads the spans of the rows asked
for, a window at a time, in file order.
"""

from __future__ import annotations

import numpy as np

WINDOW_BYTES = 64 << 20  # what one read of `take` brings in at most


def read_npy_header(f) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """(shape, Fortran order, dtype, the data's offset in `f`) of the .npy header at `f`'s position."""
    version = np.lib.format.read_magic(f)
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, fortran, dtype = read_header(f)
    return shape, fortran, dtype, f.tell()


def unmapped(a):
    """A memory-mapped array (`np.memmap`) as a `FileArray` of the same rows, so one pass over them
    leaves nothing resident in this process; any other array as it is."""
    if isinstance(a, np.memmap) and a.filename and a.flags.c_contiguous:
        return FileArray(a.filename, a.offset, a.dtype, a.shape)
    return a


class FileArray:
    """`shape` rows of `dtype` stored from byte `offset` of `path`."""

    transposed = False  # True: the file holds the Fortran-order array of which this is the transpose

    def __init__(self, path, offset: int, dtype, shape: tuple[int, ...]):
        self.path, self.offset, self.dtype, self.shape = str(path), int(offset), np.dtype(dtype), tuple(shape)
        self.ndim = len(self.shape)
        self.row_items = int(np.prod(self.shape[1:], dtype=np.int64))
        self.row_bytes = self.row_items * self.dtype.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) in one read."""
        start, stop = max(0, start), min(len(self), stop)
        count = max(0, stop - start)
        a = np.fromfile(self.path, dtype=self.dtype, count=count * self.row_items,
                        offset=self.offset + start * self.row_bytes)
        return a.reshape((count, *self.shape[1:]))

    def take(self, rows: np.ndarray) -> np.ndarray:
        """Rows `rows` in their order; the file is read in ascending windows."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        out = np.empty((rows.size, *self.shape[1:]), dtype=self.dtype)
        if rows.size == 0:
            return out
        order = None if bool((rows[1:] >= rows[:-1]).all()) else np.argsort(rows, kind="stable")
        srt = rows if order is None else rows[order]
        span = max(1, WINDOW_BYTES // max(1, self.row_bytes))
        i = 0
        while i < srt.size:
            lo = int(srt[i])
            j = int(np.searchsorted(srt, lo + span, side="left"))
            block = self.read(lo, int(srt[j - 1]) + 1)
            picked = block[srt[i:j] - lo]
            if order is None:
                out[i:j] = picked
            else:
                out[order[i:j]] = picked
            i = j
        return out

    def __getitem__(self, key) -> np.ndarray:
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            return self.read(start, stop)[::step] if step != 1 else self.read(start, stop)
        if isinstance(key, (int, np.integer)):
            return self.read(int(key), int(key) + 1)[0]
        return self.take(np.asarray(key))

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        a = self.read(0, len(self))
        return a if dtype is None else a.astype(dtype)

    def max(self, initial=None, step: int = 1 << 22):
        """The largest value (as `ndarray.max(initial=...)`), a piece at a time."""
        best = initial
        for i in range(0, len(self), step):
            m = self.read(i, i + step).max()
            best = m if best is None or m > best else best
        return best


class FileColumn:
    """Column `col` of a `FileArray` of rows (a KG's head, relation or tail column), unmapped: a
    slice is one read of its rows, shared with the sibling columns of `file_columns` (heads and
    tails of the same rows are read once); indexing by ids reads the column whole once and keeps
    it (a gather of rows spread over the file would read all of it on every call)."""

    ndim = 1

    def __init__(self, rows: FileArray, col: int, last: dict | None = None, step: int = 1 << 22):
        self.rows, self.col, self.step = rows, col, step
        self.dtype, self.shape = rows.dtype, (len(rows),)
        self._last = {} if last is None else last  # (start, stop) -> rows of the latest slice read
        self._whole: np.ndarray | None = None

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key) -> np.ndarray:
        if self._whole is None and isinstance(key, slice) and key.step in (None, 1):
            start, stop, _ = key.indices(len(self))
            if (start, stop) not in self._last:
                self._last.clear()
                self._last[start, stop] = self.rows.read(start, stop)
            return np.ascontiguousarray(self._last[start, stop][:, self.col])
        if self._whole is None:
            self._whole = np.empty(len(self), dtype=self.dtype)
            for i in range(0, len(self), self.step):
                self._whole[i:i + self.step] = self.rows.read(i, i + self.step)[:, self.col]
        return self._whole[key]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        a = self[:]
        return a if dtype is None else a.astype(dtype)


def file_columns(rows: FileArray) -> tuple[FileColumn, ...]:
    """Every column of `rows`, sharing their latest slice: columns sliced alike read the rows once."""
    last: dict = {}
    return tuple(FileColumn(rows, c, last) for c in range(rows.shape[1]))
