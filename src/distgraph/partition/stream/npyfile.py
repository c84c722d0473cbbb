"""A `.npy` file written a piece at a time: its header first (the final shape is known), then rows
appended or written at their place, so an array bigger than memory never has to be whole."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ...errors import InputError


class NpyFile:
    """`path` as a `.npy` of `shape` and `dtype` (the same bytes `np.save` writes for that array)."""

    def __init__(self, path: Path, dtype, shape: tuple[int, ...]):
        self.path, self.dtype, self.shape = Path(path), np.dtype(dtype), tuple(int(s) for s in shape)
        self.row_bytes = self.dtype.itemsize * int(np.prod(self.shape[1:], dtype=np.int64))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, "wb")
        np.lib.format.write_array_header_1_0(self._f, {"descr": np.lib.format.dtype_to_descr(self.dtype),
                                                       "fortran_order": False, "shape": self.shape})
        self.start = self._f.tell()
        self.rows = 0  # rows appended so far

    def append(self, a: np.ndarray) -> None:
        self.write_at(self.rows, a)
        self.rows += len(a)

    def write_at(self, row: int, a: np.ndarray) -> None:
        """Rows `a` at row `row` (a positioned write: no mapping of the file, no seek shared with appends)."""
        data = np.ascontiguousarray(a, dtype=self.dtype)
        if row + len(data) > self.shape[0]:
            raise ValueError(f"rows {row}..{row + len(data)} overflow {self.path} ({self.shape[0]} rows)")
        try:
            os.pwrite(self._f.fileno(), data.data, self.start + row * self.row_bytes)
        except OSError as exc:
            raise InputError(f"cannot write {self.path} ({exc.strerror or exc}); free disk space there") from None

    def close(self) -> None:
        """Finish the file at its full size (rows never written read as zeros)."""
        self._f.truncate(self.start + self.shape[0] * self.row_bytes)
        self._f.close()


def save_rows(path: Path, rows: np.ndarray, source, chunk_bytes: int = 8 << 20) -> None:
    """Write rows `rows` of `source` (an array, memory-mapped array or `ChunkedArray`) as a `.npy`,
    about `chunk_bytes` at a time."""
    shape = tuple(source.shape)
    out = NpyFile(path, source.dtype, (rows.size, *shape[1:]))
    step = max(1, chunk_bytes // max(1, out.row_bytes))
    try:
        for i in range(0, rows.size, step):
            out.append(source[rows[i:i + step]])
    finally:
        out.close()
