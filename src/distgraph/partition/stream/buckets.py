"""Edges spread into bucket files on disk, so each bucket can then be read back and handled in
memory alone: an external bucket sort with one write and one read of every edge.

A bucket is a set of columns (same length, fixed dtypes), each an append-only raw file in a
scratch folder. Appending groups a chunk's rows by bucket with one counting sort; reading
returns a bucket's columns whole. The folder is removed on `close` (and by the context manager
on any error), so a failed run leaves no scratch behind, even on a full disk: rows that could
not be flushed are dropped with it. A write the disk refuses is one line naming the folder and
the option that moves it (`option`: `--out` on one host, `--scratch_dir` across hosts).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np

from ...arrays import group_keys
from ...errors import InputError


class Buckets:
    """`num` buckets of the columns `dtypes` (name -> dtype) under a fresh folder in `parent`
    (`option`: the command-line option that chooses `parent`, named when its disk is full)."""

    def __init__(self, parent: Path, num: int, dtypes: dict[str, np.dtype], label: str = "buckets",
                 option: str = "--out"):
        self.option = option
        try:
            parent.mkdir(parents=True, exist_ok=True)
            self.root = Path(tempfile.mkdtemp(prefix=f".{label}-", dir=parent))
        except OSError as exc:
            raise self._refused(parent, exc) from None
        self.num, self.dtypes = num, {k: np.dtype(v) for k, v in dtypes.items()}
        self.sizes = np.zeros(num, dtype=np.int64)
        self._files = {}  # (bucket, column) -> append handle, opened on a bucket's first rows

    def _path(self, bucket: int, column: str) -> Path:
        return self.root / f"{bucket}.{column}"

    def _refused(self, where: Path, exc: OSError) -> InputError:
        return InputError(f"cannot write scratch files under {where} ({exc.strerror or exc}); free disk space there "
                          f"or point {self.option} at a disk with room")

    def __enter__(self) -> "Buckets":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def append(self, bucket_of_row: np.ndarray, columns: dict[str, np.ndarray]) -> None:
        """Append every row to its bucket (`bucket_of_row` in [0, num)), keeping their order."""
        order, starts = group_keys(bucket_of_row, self.num)
        present = np.flatnonzero(np.diff(starts))
        try:
            for k, values in columns.items():
                grouped = np.asarray(values)[order].astype(self.dtypes[k], copy=False)
                for b in present:
                    f = self._files.get((b, k)) or self._files.setdefault((b, k), open(self._path(b, k), "ab"))
                    f.write(grouped[starts[b]:starts[b + 1]].data)
        except OSError as exc:
            raise self._refused(self.root.parent, exc) from None
        self.sizes += np.diff(starts)

    def read(self, bucket: int, columns: tuple[str, ...] | None = None) -> dict[str, np.ndarray]:
        """A bucket's columns (all, or those named), in the order they were appended (after `finish`);
        a bucket that got no rows reads as empty columns."""
        if not self.sizes[bucket]:
            return {k: np.zeros(0, dtype=self.dtypes[k]) for k in columns or self.dtypes}
        return {k: np.fromfile(self._path(bucket, k), dtype=self.dtypes[k]) for k in columns or self.dtypes}

    def take(self, bucket: int, columns: tuple[str, ...] | None = None) -> dict[str, np.ndarray]:
        """`read` a bucket, then `drop` it: each bucket is handled once, its disk space back at once."""
        cols = self.read(bucket, columns)
        self.drop(bucket)
        return cols

    def finish(self) -> None:
        """Flush and close the append handles (reading may start)."""
        files, self._files = self._files, {}
        try:
            for f in files.values():
                f.close()
        except OSError as exc:
            _close_quietly(files.values())
            raise self._refused(self.root.parent, exc) from None

    def drop(self, bucket: int) -> None:
        """Delete a bucket that was read (its disk space back at once)."""
        for k in self.dtypes:
            self._path(bucket, k).unlink(missing_ok=True)

    def close(self) -> None:
        """Remove the folder; rows not yet flushed go with it (so a full disk is no error here)."""
        _close_quietly(self._files.values())
        self._files = {}
        shutil.rmtree(self.root, ignore_errors=True)


def _close_quietly(files) -> None:
    """Close append handles whose rows are dropped: a flush the disk refuses does not matter
    (the handle is closed all the same)."""
    for f in files:
        try:
            f.close()
        except OSError:
            pass


def id_dtype(bound: int) -> np.dtype:
    """The smaller of int32/int64 that holds values below `bound`."""
    return np.dtype(np.int32 if bound <= np.iinfo(np.int32).max else np.int64)

