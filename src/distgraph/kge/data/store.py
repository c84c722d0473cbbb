"""Where a load's arrays live: in memory for small inputs; for big ones, `.npy` files written a
chunk of rows at a time and memory-mapped, in a cache folder reused by later loads of the same files.

The cache folder is `DATA_PATH/.distgraph-cache/KEY/`, KEY a digest of the input files' paths,
sizes and modification times and of the load's options: editing an input makes a new KEY (delete
`.distgraph-cache` to reclaim the space of old ones). A folder is written under a temporary name and
renamed when complete, so a load that stops halfway leaves nothing to reuse; a file of a complete
folder whose size is not the recorded one is refused (the folder was damaged: delete it). Where
DATA_PATH is not writable the files go to a temporary folder, removed once mapped (nothing is reused).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import tempfile
from pathlib import Path

import numpy as np

from ...errors import InputError

MEMORY_BYTES = 64 << 20  # input files up to this size in all are loaded into memory, not cached
CACHE_DIR = ".distgraph-cache"
FORMAT = 1  # of the cache folder's files
_HEADER = 128  # bytes of a .npy header written before its rows are counted, then rewritten


def _npy_header(dtype: np.dtype, shape: tuple[int, ...]) -> bytes:
    """A .npy (version 1.0) header of exactly _HEADER bytes."""
    text = repr({"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": shape}).encode()
    body = text + b" " * (_HEADER - 10 - len(text) - 1) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(body)) + body


class Rows:
    """An array of shape (N, *cols) appended a block of rows at a time: in memory, or to a .npy file."""

    def __init__(self, path: Path | None, dtype: np.dtype, cols: tuple[int, ...] = ()):
        self.path, self.dtype, self.cols, self.count = path, np.dtype(dtype), cols, 0
        self.blocks: list[np.ndarray] = []
        self.file = None
        if path is not None:
            self.file = open(path, "wb")
            self.file.write(_npy_header(self.dtype, (0, *cols)))

    def add(self, rows: np.ndarray) -> None:
        """Append rows (cast to the array's type)."""
        rows = np.ascontiguousarray(rows, dtype=self.dtype)
        if self.file is None:
            self.blocks.append(rows)
        else:
            self.file.write(rows.data)
        self.count += len(rows)

    def finish(self) -> np.ndarray | None:
        """The array in memory; None when written to its file (then complete, its header right)."""
        if self.file is None:
            return np.concatenate(self.blocks) if self.blocks else np.empty((0, *self.cols), dtype=self.dtype)
        self.file.seek(0)
        self.file.write(_npy_header(self.dtype, (self.count, *self.cols)))
        self.file.close()
        return None


class Store:
    """The arrays of one load as they are parsed: in memory (`folder` None), or in .npy files of `folder`
    that `close` makes a complete cache folder named `final` (or maps and removes, when temporary)."""

    def __init__(self, folder: Path | None, final: Path | None = None):
        self.folder, self.final = folder, final
        self.rows_of: dict[str, Rows] = {}

    def __enter__(self) -> Store:
        return self

    def __exit__(self, kind, *_) -> None:
        """A load that stops (a bad line) leaves no files behind."""
        if kind is not None and self.folder is not None:
            for rows in self.rows_of.values():
                rows.file.close()
            shutil.rmtree(self.folder, ignore_errors=True)

    def rows(self, name: str, dtype: np.dtype, cols: tuple[int, ...] = ()) -> Rows:
        """A new array `name` to append rows to (replacing one of that name)."""
        if name in self.rows_of and self.rows_of[name].file is not None:
            self.rows_of[name].file.close()
        self.rows_of[name] = Rows(None if self.folder is None else self.folder / f"{name}.npy", dtype, cols)
        return self.rows_of[name]

    def put(self, name: str, array: np.ndarray) -> None:
        """A whole array."""
        self.rows(name, array.dtype, array.shape[1:]).add(array)

    def close(self) -> dict[str, np.ndarray]:
        """Every array by name: in memory, or mapped from the completed cache folder."""
        arrays = {name: rows.finish() for name, rows in self.rows_of.items()}
        if self.folder is None:
            return arrays
        sizes = {name: (self.folder / f"{name}.npy").stat().st_size for name in self.rows_of}
        (self.folder / "meta.json").write_text(json.dumps({"format": FORMAT, "sizes": sizes}))
        if self.final is not None:
            try:
                os.rename(self.folder, self.final)
                return open_folder(self.final)
            except OSError:  # another load of the same files completed it first: use ours, then drop it
                pass
        arrays = open_folder(self.folder)
        shutil.rmtree(self.folder, ignore_errors=True)  # mapped files stay readable until unmapped
        return arrays


def open_folder(folder: Path) -> dict[str, np.ndarray]:
    """The arrays of a complete cache folder, memory-mapped; a file of another size than recorded is refused."""
    try:
        sizes = json.loads((folder / "meta.json").read_text())["sizes"]
    except (OSError, ValueError, KeyError, TypeError):
        raise InputError(f"{folder}/meta.json is not readable: the cache folder is damaged; delete {folder} and "
                         f"load again") from None
    arrays = {}
    for name, size in sizes.items():
        path = folder / f"{name}.npy"
        found = path.stat().st_size if path.is_file() else 0
        if found != size:
            raise InputError(f"{path} holds {found:,} bytes where the cache recorded {size:,}: the cache folder is "
                             f"damaged (truncated?); delete {folder} and load again")
        try:
            arrays[name] = np.load(path, mmap_mode="c") if size > _HEADER else np.load(path)
        except ValueError as exc:
            raise InputError(f"{path} is not a readable .npy file ({exc}); delete {folder} and load again") from None
    return arrays


def cache_key(files: list[Path], options: dict) -> str:
    """A digest of the files (path, size, modification time) and the load's options."""
    stats = [[str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns] for p in files]
    return hashlib.sha1(json.dumps([FORMAT, stats, options], sort_keys=True).encode()).hexdigest()[:20]


def open_store(data_path: Path, files: list[Path], options: dict) -> tuple[dict[str, np.ndarray] | None, Store]:
    """(the arrays of a cached earlier load of `files`, or None; where a new load writes its arrays).
    Inputs of up to MEMORY_BYTES in all are not cached."""
    if sum(p.stat().st_size for p in files) <= MEMORY_BYTES:
        return None, Store(None)
    root = data_path / CACHE_DIR
    final = root / cache_key(files, options)
    if final.is_dir():
        return open_folder(final), Store(None)
    try:
        root.mkdir(exist_ok=True)
        return None, Store(Path(tempfile.mkdtemp(prefix=f"{final.name}.tmp", dir=root)), final)
    except OSError:  # DATA_PATH is not writable
        return None, Store(Path(tempfile.mkdtemp(prefix="distgraph-kg-")))
