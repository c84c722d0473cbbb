"""DGL's chunked graph format: `metadata.json` plus edge and data chunks, for graphs that do not
fit one process.

`metadata.json` names the node types with their counts per chunk (`num_nodes_per_chunk`), the
edge types ("src:rel:dst") with theirs (`num_edges_per_chunk`), and for each edge type and each
node/edge data array a `ChunkFileSpec`: `{"format": {"name": "csv"|"numpy"|"parquet", ...},
"data": [paths]}` (paths relative to the folder or absolute). Edge chunks hold one edge per row,
(source, destination) in per-type ids: a two-column CSV (`delimiter`, default space), a numpy
array of shape (E, 2), or a parquet table whose first two columns are the endpoints. Data
chunks hold consecutive rows (numpy or parquet; CSV for one-column data).

`ChunkedGraph` reads the metadata and checks it (every file present, counts consistent) before
anything else; edges come a chunk at a time, numpy chunks memory-mapped, and data arrays are
`ChunkedArray`s that read only the rows asked for. `write_chunked` writes the format.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..files import check_space
from .file_array import FileArray, read_npy_header

METADATA = "metadata.json"
FORMATS = ("csv", "numpy", "parquet")


@dataclass(frozen=True)
class ChunkFile:
    """One chunk: its path, format and rows."""

    path: Path
    format: dict
    rows: int

    def read(self, columns: int | None = None):
        """The chunk's rows, checked against the metadata's count: a `FileArray` for numpy chunks
        (read as they are indexed, never mapped), an array for the others."""
        name = self.format["name"]
        try:
            if name == "numpy":
                a = npy_file_array(self.path)
            elif name == "csv":
                a = np.loadtxt(self.path, delimiter=self.format.get("delimiter", " "), dtype=np.int64, ndmin=2)
                if a.shape[1] == 1 and columns is None:
                    a = a[:, 0]
            else:
                import pyarrow.parquet as pq

                table = pq.read_table(self.path)
                a = np.stack([c.to_numpy() for c in table.columns], axis=1) if table.num_columns > 1 \
                    else table.column(0).to_numpy()
        except (OSError, ValueError) as exc:
            raise InputError(f"chunk {self.path} cannot be read as {name} ({exc}); fix or regenerate it") from None
        except ImportError:
            raise InputError(f"chunk {self.path} is parquet, which needs pyarrow: pip install pyarrow") from None
        if a.shape[0] != self.rows:
            raise InputError(f"chunk {self.path} has {a.shape[0]} rows but {METADATA} says {self.rows}; "
                             f"fix the counts or the file")
        if columns is not None and (a.ndim != 2 or a.shape[1] != columns):
            raise InputError(f"chunk {self.path} has shape {tuple(a.shape)}: an edge chunk has {columns} columns "
                             f"(source, destination)")
        if columns is not None and np.dtype(a.dtype).kind not in "iu":
            raise InputError(f"chunk {self.path} holds {a.dtype} values: an edge chunk holds integer node ids; "
                             f"convert it (e.g. np.save(path, a.astype(np.int64)))")
        return a


class ChunkedArray:
    """A data array stored as consecutive chunks: its shape and dtype from the first chunk (or
    `spec`, (dtype, row shape), where not every chunk is at hand), its rows read on demand."""

    def __init__(self, chunks: Sequence[ChunkFile], what: str, spec: tuple | None = None):
        self.chunks, self.what = list(chunks), what
        self.starts = np.concatenate([[0], np.cumsum([c.rows for c in self.chunks])]).astype(np.int64)
        if spec is None:
            first = self.chunks[0].read() if self.chunks else np.empty(0)
            spec = first.dtype, first.shape[1:]
        self.dtype, self.row_shape = np.dtype(spec[0]), tuple(spec[1])

    def _chunk(self, i: int) -> np.ndarray:
        a = self.chunks[i].read()
        if a.dtype != self.dtype or tuple(a.shape[1:]) != self.row_shape:
            raise InputError(f"{self.what}: chunk {self.chunks[i].path} holds {a.dtype}{list(a.shape[1:])} rows, the "
                             f"first chunk {self.dtype}{list(self.row_shape)}; every chunk needs the same")
        return a

    @property
    def shape(self) -> tuple[int, ...]:
        return (int(self.starts[-1]), *self.row_shape)

    def __len__(self) -> int:
        return int(self.starts[-1])

    def take(self, rows: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Rows `rows` (any order), chunk by chunk."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((rows.size, *self.row_shape), dtype=self.dtype) if out is None else out
        which = np.searchsorted(self.starts, rows, side="right") - 1
        for i in np.unique(which):
            sel = np.flatnonzero(which == i)
            out[sel] = np.asarray(self._chunk(i)[rows[sel] - self.starts[i]])
        return out

    def __getitem__(self, key) -> np.ndarray:
        if isinstance(key, slice):
            return self.take(np.arange(*key.indices(len(self))))
        return self.take(np.asarray(key))

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        a = self.take(np.arange(len(self)))
        return a if dtype is None else a.astype(dtype)


class RowReader:
    """Contiguous rows of a `ChunkedArray`, read in ascending ranges: the chunk being read stays
    open until a read moves past it (a parquet or CSV chunk is read once, not once per range),
    and only the chunks holding the rows asked for are touched."""

    def __init__(self, array: ChunkedArray):
        self.array, self._index, self._chunk = array, -1, None

    def read(self, lo: int, hi: int) -> np.ndarray:
        """Rows [lo, hi)."""
        a = self.array
        out = np.empty((hi - lo, *a.row_shape), dtype=a.dtype)
        at = lo
        while at < hi:
            i = int(np.searchsorted(a.starts, at, side="right")) - 1  # (past chunks without rows)
            if i != self._index:
                self._chunk, self._index = None, -1  # (the previous chunk freed before the next is read)
                self._chunk, self._index = a._chunk(i), i
            first, end = int(a.starts[i]), min(hi, int(a.starts[i + 1]))
            out[at - lo:end - lo] = np.asarray(self._chunk[at - first:end - first])
            at = end
        return out


def _spec(meta: dict, root: Path, where: str, present: bool = True) -> list[tuple[Path, dict]]:
    """The files of one chunk list with their format; `present`: each is checked to exist."""
    if not isinstance(meta, dict) or not isinstance(meta.get("data"), list):
        raise InputError(f"{METADATA}: {where} needs a 'data' list of files")
    fmt = meta.get("format", {})
    if not isinstance(fmt, dict) or fmt.get("name") not in FORMATS:
        raise InputError(f"{METADATA}: {where} has format {fmt!r}; use one of {FORMATS}")
    paths = [(root / p) if not Path(p).is_absolute() else Path(p) for p in meta["data"]]
    for p in paths if present else ():
        if not p.is_file():
            raise InputError(f"{METADATA}: {where} names {p}, which is missing; restore it or fix the metadata")
    return [(p, fmt) for p in paths]


class ChunkedGraph:
    """A graph in DGL's chunked format, read a chunk at a time. With `every_file=False` no
    chunk is checked to exist up front and no data chunk is opened (a host of a distributed
    partitioning holds only its share of them): the data arrays are then left empty and their
    files listed in `node_data_files` and `edge_data_files` (type -> name -> [(path, format)])."""

    def __init__(self, path: str | Path, every_file: bool = True):
        path = Path(path)
        self.root = path.parent if path.is_file() else path
        meta_file = self.root / METADATA
        if not meta_file.is_file():
            raise InputError(f"{meta_file} does not exist: a chunked graph is a folder with {METADATA}")
        try:
            meta = json.loads(meta_file.read_text())
        except (OSError, ValueError) as exc:
            raise InputError(f"{meta_file} is not valid JSON ({exc})") from None
        self.graph_name = str(meta.get("graph_name", self.root.name))
        try:
            self.ntypes = [str(t) for t in meta["node_type"]]
            nodes = meta["num_nodes_per_chunk"]
            etypes = [str(t) for t in meta["edge_type"]]
            edges = meta["num_edges_per_chunk"]
        except (KeyError, TypeError) as exc:
            raise InputError(f"{meta_file} lacks {exc}: it needs node_type, num_nodes_per_chunk, edge_type and "
                             f"num_edges_per_chunk") from None
        if len(nodes) != len(self.ntypes) or len(edges) != len(etypes):
            raise InputError(f"{meta_file}: one count list per node type and per edge type is needed")
        self.num_nodes = {t: int(sum(c)) for t, c in zip(self.ntypes, nodes)}
        self.canonical_etypes = []
        for e in etypes:
            parts = tuple(e.split(":"))
            if len(parts) != 3 or parts[0] not in self.num_nodes or parts[2] not in self.num_nodes:
                raise InputError(f"{meta_file}: edge type {e!r} must be 'src:rel:dst' with known node types")
            self.canonical_etypes.append(parts)
        self.edge_files: dict[tuple, list[ChunkFile]] = {}
        for c, counts in zip(self.canonical_etypes, edges):
            key = ":".join(c)
            files = _spec(meta.get("edges", {}).get(key), self.root, f"edges of {key}", every_file)
            if len(files) != len(counts):
                raise InputError(f"{meta_file}: edges of {key} list {len(files)} files for {len(counts)} chunk counts")
            self.edge_files[c] = [ChunkFile(p, f, int(n)) for (p, f), n in zip(files, counts)]
        self.num_edges = {c: sum(f.rows for f in fs) for c, fs in self.edge_files.items()}
        self.node_data_files = {t: self._data_files(meta.get("node_data", {}).get(t, {}), f"node data of {t}",
                                                    every_file) for t in self.ntypes}
        self.edge_data_files = {c: self._data_files(meta.get("edge_data", {}).get(":".join(c), {}),
                                                    f"edge data of {':'.join(c)}", every_file)
                                for c in self.canonical_etypes}
        self.node_data = {t: self._data(self.node_data_files[t], f"node data of {t}", self.num_nodes[t])
                          for t in self.ntypes} if every_file else {}
        self.edge_data = {c: self._data(self.edge_data_files[c], f"edge data of {':'.join(c)}", self.num_edges[c])
                          for c in self.canonical_etypes} if every_file else {}

    def _data_files(self, arrays: dict, what: str, present: bool) -> dict[str, list[tuple[Path, dict]]]:
        return {name: _spec(spec, self.root, f"{what} {name!r}", present) for name, spec in arrays.items()}

    def _data(self, files: dict[str, list], what: str, rows: int) -> dict[str, ChunkedArray]:
        out = {}
        for name, chunk_files in files.items():
            out[name] = ChunkedArray([ChunkFile(p, f, data_rows(p, f)) for p, f in chunk_files], f"{what} {name!r}")
            check_data_rows(f"{what} {name!r}", len(out[name]), rows)
        return out

    def edge_chunks(self, etype: tuple, piece: int = 1 << 20) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(source, destination) per-type ids of `etype`'s edges, at most `piece` at a time (numpy
        chunks stay memory-mapped: only the piece is copied), checked in range."""
        for i in range(len(self.edge_files[etype])):
            yield from self.file_chunks(etype, i, piece)

    def file_chunks(self, etype: tuple, index: int, piece: int = 1 << 20,
                    rows: tuple[int, int] | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """`edge_chunks` of one chunk file of `etype` (its `index`-th), or of its rows [lo, hi)."""
        ns, nd = self.num_nodes[etype[0]], self.num_nodes[etype[2]]
        f = self.edge_files[etype][index]
        a = f.read(columns=2)
        lo, hi = rows or (0, a.shape[0])
        for i in range(lo, hi, piece):
            block = np.asarray(a[i:min(i + piece, hi)])
            src, dst = block[:, 0].astype(np.int64), block[:, 1].astype(np.int64)
            del block  # (not held while the consumer works on the piece)
            if src.size and (src.min() < 0 or src.max() >= ns or dst.min() < 0 or dst.max() >= nd):
                raise InputError(f"chunk {f.path} has node ids outside [0, {ns}) x [0, {nd}) of edge type "
                                 f"{':'.join(etype)}; fix the ids or the node counts")
            yield src, dst



def npy_file_array(path: Path, transposed_ok: bool = False) -> FileArray:
    """A `.npy` file as a `FileArray` (its header read, its data left in the file, checked to be
    all there). A Fortran-order array is taken only with `transposed_ok`, as the C-order array of
    its transpose."""
    with open(path, "rb") as f:
        shape, fortran, dtype, offset = read_npy_header(f)
        size = os.fstat(f.fileno()).st_size
    if dtype.hasobject or (fortran and not transposed_ok) or not dtype.isnative:
        raise ValueError(f"{dtype} {'Fortran-order ' if fortran else ''}arrays are not read here; save C-order "
                         f"native numbers")
    want = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if size - offset < want:
        raise InputError(f"{path} is truncated: its header declares {dtype}{list(shape)} ({want:,} bytes of data) "
                         f"but it holds {max(size - offset, 0):,}; copy or regenerate the file")
    a = FileArray(path, offset, dtype, shape[::-1] if fortran else shape)
    a.transposed = fortran
    return a


def check_data_rows(what: str, have: int, want: int) -> None:
    """A data array's rows in its chunks against its type's count."""
    if have != want:
        raise InputError(f"{what} has {have} rows in its chunks, but the type has {want}")


def data_rows(path: Path, fmt: dict) -> int:
    """Rows of a data chunk from its header where the format has one (numpy: mapped, not read)."""
    try:
        if fmt["name"] == "numpy":
            shape = npy_file_array(path).shape
            return int(shape[0]) if shape else 0
        if fmt["name"] == "parquet":
            import pyarrow.parquet as pq

            return pq.ParquetFile(path).metadata.num_rows
        with open(path, "rb") as f:
            return sum(1 for line in f if line.strip())
    except (OSError, ValueError) as exc:
        raise InputError(f"chunk {path} cannot be read as {fmt['name']} ({exc}); fix or regenerate it") from None
    except ImportError:
        raise InputError(f"chunk {path} is parquet, which needs pyarrow: pip install pyarrow") from None


def write_chunked(root: str | Path, graph_name: str, num_nodes: dict[str, list[int]],
                  edges: dict[str, list[str]], num_edges: dict[str, list[int]],
                  node_data: dict[str, dict[str, list[str]]] | None = None,
                  edge_data: dict[str, dict[str, list[str]]] | None = None) -> Path:
    """Write `metadata.json` for chunk files already written as numpy arrays under `root`
    (paths relative to it): node counts per type and chunk, edge files and counts per
    "src:rel:dst" type, data files per type and name."""
    spec = lambda files: {"format": {"name": "numpy"}, "data": list(files)}  # noqa: E731
    meta = {
        "graph_name": graph_name,
        "node_type": list(num_nodes),
        "num_nodes_per_chunk": [list(map(int, c)) for c in num_nodes.values()],
        "edge_type": list(edges),
        "num_edges_per_chunk": [list(map(int, num_edges[e])) for e in edges],
        "edges": {e: spec(f) for e, f in edges.items()},
        "node_data": {t: {k: spec(f) for k, f in d.items()} for t, d in (node_data or {}).items()},
        "edge_data": {e: {k: spec(f) for k, f in d.items()} for e, d in (edge_data or {}).items()},
    }
    path = Path(root) / METADATA
    path.write_text(json.dumps(meta, indent=1))
    return path


class ChunkWriter:
    """Writes a graph in the chunked format a chunk at a time: edge chunks per edge type, node
    data chunks per node type (all of a chunk's arrays with the same rows), then `metadata.json`."""

    def __init__(self, root: str | Path, graph_name: str, need_bytes: int = 0):
        """`root` must be a new or empty folder with about `need_bytes` free beneath it."""
        self.root, self.graph_name = Path(root), graph_name
        if self.root.exists() and any(self.root.iterdir()):
            raise InputError(f"{self.root} is not empty; give a new folder for the chunked graph")
        check_space(self.root, need_bytes, f"the graph {graph_name}")
        self.edges: dict[str, list[str]] = {}
        self.edge_counts: dict[str, list[int]] = {}
        self.node_data: dict[str, dict[str, list[str]]] = {}
        self.node_counts: dict[str, list[int]] = {}

    def add_edges(self, etype: str, src: np.ndarray, dst: np.ndarray) -> None:
        files = self.edges.setdefault(etype, [])
        rel = f"edges/{etype.replace(':', '-')}-{len(files)}.npy"
        (self.root / "edges").mkdir(parents=True, exist_ok=True)
        np.save(self.root / rel, np.stack([src, dst], axis=1))
        files.append(rel)
        self.edge_counts.setdefault(etype, []).append(int(src.size))

    def add_nodes(self, ntype: str, count: int, arrays: dict[str, np.ndarray]) -> None:
        (self.root / "node_data").mkdir(parents=True, exist_ok=True)
        chunk = len(self.node_counts.setdefault(ntype, []))
        for name, a in arrays.items():
            if len(a) != count:
                raise ValueError(f"node data {name!r} has {len(a)} rows for a chunk of {count} nodes")
            rel = f"node_data/{ntype}-{name}-{chunk}.npy"
            np.save(self.root / rel, a)
            self.node_data.setdefault(ntype, {}).setdefault(name, []).append(rel)
        self.node_counts[ntype].append(int(count))

    def finish(self) -> Path:
        return write_chunked(self.root, self.graph_name, self.node_counts, self.edges, self.edge_counts,
                             node_data=self.node_data)


def load_chunked(path: str | Path, *, tensors: bool = False):
    """A chunked-format graph read whole into a `Graph` (or with `tensors=False` an `ArrayGraph`):
    for graphs that fit in memory; the streaming partitioner reads bigger ones a chunk at a time."""
    from .graph_kind import graph_class

    cg = ChunkedGraph(path)
    edges = {}
    for c in cg.canonical_etypes:
        pieces = list(cg.edge_chunks(c))
        edges[c] = tuple(np.concatenate([p[i] for p in pieces]) if pieces else np.zeros(0, dtype=np.int64)
                         for i in (0, 1))
    ndata = {t: {k: np.asarray(v) for k, v in d.items()} for t, d in cg.node_data.items()}
    edata = {c: {k: np.asarray(v) for k, v in d.items()} for c, d in cg.edge_data.items()}
    cls = graph_class(tensors)
    if cg.ntypes == ["_N"] and [":".join(c) for c in cg.canonical_etypes] == ["_N:_E:_N"]:
        (src, dst), = edges.values()
        return cls(src, dst, cg.num_nodes["_N"], ndata["_N"], edata[cg.canonical_etypes[0]])
    return cls.from_hetero(edges, cg.num_nodes, ndata, edata)
