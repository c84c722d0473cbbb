"""The node and edge data of a chunked graph in a distributed partitioning. No host need hold
every data chunk file, so no host alone can count every chunk's rows: each reports the files it
holds (their rows; the array's dtype and row shape from the first of them), the coordinator
joins the reports into one layout, checks that every host holds the files of its share
(`shares.my_rows`), and sends the layout back; each host then reads its share's rows by it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...data.chunked import ChunkedArray, ChunkFile, check_data_rows, data_rows
from ...errors import PartitionError
from ...rpc.wire import WireError
from .shares import my_rows

DATA_BYTES_PER_MESSAGE = 4 << 20  # data rows travel (and are read) in slices of about this many bytes,
MAX_ROWS_PER_MESSAGE = 1 << 18  # and of at most this many rows (their new ids and grouping take ~40 bytes a row)


@dataclass
class DataArray:
    """One node or edge data array of the metadata: its chunk files and, once joined, their rows
    and the array's dtype and row shape."""

    kind: str  # "node" or "edge"
    type_index: int
    key: str  # the node type, or "src:rel:dst"
    name: str
    files: list[tuple[Path, dict]]
    rows: list[int] | None = None
    dtype: str = "float64"
    shape: tuple[int, ...] = ()

    @property
    def what(self) -> str:
        return f"{self.kind} data {self.name!r} of {self.key}"

    @property
    def row_bytes(self) -> int:
        return np.dtype(self.dtype).itemsize * int(np.prod(self.shape, dtype=np.int64))

    def chunked(self) -> ChunkedArray:
        """The array over its chunk files (only those read need to exist)."""
        return ChunkedArray([ChunkFile(p, f, r) for (p, f), r in zip(self.files, self.rows)], self.what,
                            (self.dtype, self.shape))

    def files_of(self, lo: int, hi: int) -> list[int]:
        """The indices of the files holding rows [lo, hi)."""
        rows = np.asarray(self.rows, dtype=np.int64)
        ends = np.cumsum(rows)
        return np.flatnonzero((rows > 0) & (ends - rows < hi) & (ends > lo)).tolist()


def data_arrays(cg) -> list[DataArray]:
    """The data arrays of a `ChunkedGraph` (opened with `every_file=False`), in the metadata's
    order: every host lists the same."""
    arrays = [DataArray("node", i, t, name, files) for i, t in enumerate(cg.ntypes)
              for name, files in cg.node_data_files[t].items()]
    return arrays + [DataArray("edge", i, ":".join(c), name, files) for i, c in enumerate(cg.canonical_etypes)
                     for name, files in cg.edge_data_files[c].items()]


def report(arrays: list[DataArray]) -> list[dict]:
    """What this host holds of each array: each file's rows (-1: not here), and the dtype and
    row shape of the first file it holds."""
    out = []
    for a in arrays:
        rows = [data_rows(p, f) if p.is_file() else -1 for p, f in a.files]
        first = next((i for i, r in enumerate(rows) if r >= 0), None)
        entry = {"rows": rows, "dtype": None, "shape": []}
        if first is not None:
            sample = ChunkFile(*a.files[first], rows[first]).read()
            entry.update(dtype=np.dtype(sample.dtype).str, shape=list(sample.shape[1:]))
        out.append(entry)
    return out


def join(arrays: list[DataArray], reports: list[list[dict]], offsets: dict[str, np.ndarray],
         machines: list[str]) -> None:
    """Fill in the layout from every host's `report` (`offsets`: the node and edge types'
    homogeneous id ranges by kind; `machines`: how each host is named), checking that each host
    holds the files of its share."""
    for r, m in zip(reports, machines):
        if len(r) != len(arrays) or any(len(e["rows"]) != len(a.files) for e, a in zip(r, arrays)):
            raise PartitionError(f"{m} reads other node or edge data than this host; give every host the same "
                                 f"metadata.json")
    for i, a in enumerate(arrays):
        seen = [r[i] for r in reports]
        a.rows = []
        for f, (path, _) in enumerate(a.files):
            counts = {e["rows"][f] for e in seen if e["rows"][f] >= 0}
            if not counts:
                raise PartitionError(f"{a.what}: no machine holds its chunk {path}; copy it to the machine whose share "
                                     f"of the data it holds")
            if len(counts) > 1:
                raise PartitionError(f"{a.what}: the machines hold its chunk {path} with different numbers of rows "
                                     f"({sorted(counts)}); give every machine the same file")
            a.rows.append(counts.pop())
        specs = {(e["dtype"], tuple(e["shape"])) for e in seen if e["dtype"] is not None}
        if len(specs) > 1:
            raise PartitionError(f"{a.what}: its chunks hold rows of different dtypes or shapes "
                                 f"({sorted(map(str, specs))}); every chunk needs the same")
        if specs:
            a.dtype, a.shape = specs.pop()
        check_data_rows(a.what, sum(a.rows), int(offsets[a.kind][a.type_index + 1] - offsets[a.kind][a.type_index]))
    for h, (r, m) in enumerate(zip(reports, machines)):
        for i, a in enumerate(arrays):
            lo, hi = my_rows(a.kind, offsets[a.kind], h, len(reports))[a.type_index]
            missing = [a.files[f][0] for f in a.files_of(lo, hi) if r[i]["rows"][f] < 0]
            if missing:
                raise PartitionError(f"{m} lacks {missing[0]}, a chunk of {a.what} holding rows of its share "
                                     f"({lo:,} to {hi:,}); copy it there")


def layout(arrays: list[DataArray]) -> list[dict]:
    """The joined layout, as the coordinator sends it to the hosts."""
    return [{"rows": a.rows, "dtype": a.dtype, "shape": list(a.shape)} for a in arrays]


def apply(arrays: list[DataArray], sent: list) -> None:
    """Take the layout the coordinator sent."""
    if not isinstance(sent, list) or len(sent) != len(arrays):
        raise WireError(f"the data layout must list {len(arrays)} arrays")
    for a, e in zip(arrays, sent):
        rows, shape = e.get("rows"), e.get("shape")
        if (not isinstance(rows, list) or len(rows) != len(a.files) or not all(isinstance(r, int) and r >= 0
                                                                               for r in rows)
                or not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape)):
            raise WireError(f"bad layout of {a.what}")
        try:
            dtype = np.dtype(e.get("dtype"))
        except TypeError:
            raise WireError(f"bad dtype in the layout of {a.what}") from None
        if dtype.hasobject:
            raise WireError(f"bad dtype in the layout of {a.what}")
        a.rows, a.dtype, a.shape = rows, dtype.str, tuple(shape)


def rows_per_message(row_bytes: int) -> int:
    """Data rows of `row_bytes` bytes that travel (and are read) at once."""
    return max(1, min(MAX_ROWS_PER_MESSAGE, DATA_BYTES_PER_MESSAGE // max(1, row_bytes)))


def as_bytes(rows: np.ndarray) -> np.ndarray:
    """Rows of any dtype as a (rows, row bytes) uint8 array: how data rows travel."""
    rows = np.ascontiguousarray(rows)
    return rows.view(np.uint8).reshape(rows.shape[0], rows.itemsize * int(np.prod(rows.shape[1:], dtype=np.int64)))


def from_bytes(a: DataArray, raw: np.ndarray, count: int) -> np.ndarray:
    """`count` rows of `a` sent by `as_bytes`, checked."""
    if raw.dtype != np.uint8 or raw.shape != (count, a.row_bytes):
        raise WireError(f"rows of {a.what} must come as ({count}, {a.row_bytes}) bytes")
    return raw.view(np.dtype(a.dtype)).reshape(count, *a.shape)
