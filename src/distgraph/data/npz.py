"""The `.npz` exchange format.

Homogeneous: `src`, `dst`, optional `num_nodes`; any other array whose first dimension is
the number of nodes is node data, the number of edges edge data (prefix `ndata/` or
`edata/` to disambiguate when both counts are equal).
Heterogeneous: `ntypes`, `num_nodes` (one count per type), `canonical_etypes`
("src:rel:dst" strings), `src/<etype>`, `dst/<etype>`, `ndata/<ntype>/<name>` and
`edata/<etype>/<name>`. Either may hold `node_names` (string ids of an edge list).
Strings are stored as unicode arrays, so no pickle is needed; every other array is numeric.
"""

from __future__ import annotations

import os
import struct
import uuid
import zipfile
from pathlib import Path

import numpy as np

from ..array_graph import ArrayGraph
from ..errors import InputError
from ..ids import DEFAULT_ETYPE, DEFAULT_NTYPE
from .file_array import FileArray, read_npy_header
from .graph_kind import graph_class

TEXT_ARRAYS = ("ntypes", "canonical_etypes", "node_names")
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip member, or an empty zip
LAZY_BYTES = 1 << 16  # lazily read members at least this big stay in the file (`FileArray`)


class _NpzArrays:
    """The arrays of an `.npz`, memory-mapped where stored uncompressed (as `np.savez` writes).

    A mapped array costs no memory until read, so a partitioner touches features only
    while writing them instead of holding them through METIS.
    """

    def __init__(self, path: Path, lazy: bool = False):
        self.path, self.lazy = path, lazy
        if not path.is_file():
            raise InputError(f"graph file {path} does not exist")
        try:
            self._zip = zipfile.ZipFile(path)
            self.files = [n[:-4] for n in self._zip.namelist() if n.endswith(".npy")]
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise InputError(f"{path} is not a readable .npz file ({exc}); regenerate or re-export it") from None

    def __enter__(self) -> "_NpzArrays":
        return self

    def __exit__(self, *exc) -> None:
        self._zip.close()

    def __getitem__(self, key: str) -> np.ndarray:
        """A numeric array (strings only for the names in `TEXT_ARRAYS`), in native byte order."""
        try:
            info = self._zip.getinfo(key + ".npy")
            if info.compress_type == zipfile.ZIP_STORED:
                a = self._mapped(info, key)
            else:
                with self._zip.open(info) as f:
                    a = np.lib.format.read_array(f, allow_pickle=False)
        except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as exc:
            raise InputError(f"{self.path}: array {key!r} is missing, truncated or unreadable ({exc})") from None
        text = key in TEXT_ARRAYS
        if a.dtype.kind not in ("U" if text else "biufc"):
            want = "unicode strings" if text else "numbers (strings are allowed only in " + ", ".join(TEXT_ARRAYS) + ")"
            raise InputError(f"{self.path}: array {key!r} has dtype {a.dtype}; it must hold {want}")
        if not a.dtype.isnative:  # big-endian files: torch and the C kernels need native byte order
            a = a.astype(a.dtype.newbyteorder("="))
        return a

    def _mapped(self, info: zipfile.ZipInfo, key: str) -> np.ndarray:
        with open(self.path, "rb") as f:
            f.seek(info.header_offset)
            local = f.read(30)
            if local[:4] != b"PK\x03\x04":
                raise ValueError("bad local file header")
            name_len, extra_len = struct.unpack("<HH", local[26:30])
            start = info.header_offset + 30 + name_len + extra_len
            f.seek(start)
            shape, fortran, dtype, data_offset = read_npy_header(f)
        if dtype.hasobject:
            raise InputError(f"{self.path}: array {key!r} holds Python objects, which need pickle; distgraph never "
                             f"loads pickles: store numbers, or unicode strings for names")
        count = int(np.prod(shape, dtype=np.int64))
        if data_offset - start + count * dtype.itemsize > info.file_size:
            raise ValueError(f"member holds {info.file_size} bytes, fewer than its header promises")
        if count == 0:
            return np.empty(shape, dtype=dtype)
        if self.lazy and count * dtype.itemsize >= LAZY_BYTES and dtype.isnative and not fortran:
            return FileArray(self.path, data_offset, dtype, shape)
        if data_offset % dtype.alignment and len(shape) <= 1:
            # ids, masks and labels that `np.savez` left misaligned: numpy would copy them in
            # every bincount, ufunc and index they take part in (32 MB a pass for 4M edge ids),
            # so they are read once into aligned memory; rows of features stay mapped
            # (they are read by row copies, which take any alignment)
            return np.fromfile(self.path, dtype=dtype, count=count, offset=data_offset).reshape(shape)
        # copy-on-write: arrays and tensors stay writable, and the file is never modified
        return np.memmap(self.path, dtype=dtype, mode="c", offset=data_offset, shape=shape,
                         order="F" if fortran else "C")


def load_npz(path: str | Path, *, tensors: bool = True) -> ArrayGraph:
    """Read a graph written by `save_npz` or by hand in the format above: a `Graph`, or with
    `tensors=False` an `ArrayGraph` of numpy arrays (torch is then not imported)."""
    return read_npz(path, graph_class(tensors))


def read_npz(path: str | Path, build, lazy: bool = False):
    """The graph of an `.npz` as `build` makes it: `build(src, dst, num_nodes, ndata, edata)` for
    the homogeneous layout, `build.from_hetero(edges, num_nodes_dict, ndata, edata)` for the
    heterogeneous one (an `ArrayGraph` class, or the streaming partitioner's source). With
    `lazy`, stored arrays come as `FileArray`s: nothing of them is read or mapped yet."""
    with _NpzArrays(Path(path), lazy) as z:
        keys = set(z.files)
        g = _load_hetero(build, z, keys, path) if "canonical_etypes" in keys else \
            _load_homo(build, z, keys - {"node_names"}, path)
        if "node_names" in keys:
            names = z["node_names"]
            if names.shape != (g.num_nodes(),):
                raise InputError(f"{path}: 'node_names' has shape {names.shape}; it needs one name per node ({g.num_nodes()})")
            g.node_names = names
        return g


def _count(a: np.ndarray, key: str, path) -> np.ndarray:
    """Integer counts (`num_nodes`), with a clear error for anything else."""
    if a.dtype.kind not in "iu" or (a < 0).any():
        raise InputError(f"{path}: {key!r} must hold non-negative integers, got {a.dtype} {a.tolist()}")
    return a.astype(np.int64)


def _load_homo(cls: type[ArrayGraph], z: _NpzArrays, keys: set, path) -> ArrayGraph:
    """The homogeneous layout: `src`, `dst`, optional `num_nodes`, data classified by rows.

    Other scalars (a generator's `seed`, say) describe the file, not nodes or edges: skipped."""
    for k in ("src", "dst"):
        if k not in keys:
            raise InputError(f"{path} has no {k!r} array; a graph .npz needs 'src' and 'dst' (found {sorted(keys)})")
    src, dst = z["src"], z["dst"]
    if src.shape != dst.shape or src.ndim != 1:
        raise InputError(f"{path}: 'src' {src.shape} and 'dst' {dst.shape} must be 1-D arrays of equal length")
    if "num_nodes" in keys:
        nn = _count(z["num_nodes"], "num_nodes", path)
        if nn.size != 1:
            raise InputError(f"{path}: 'num_nodes' has shape {nn.shape}; a homogeneous graph needs one count "
                             f"(a heterogeneous one also needs 'ntypes' and 'canonical_etypes')")
        n = int(nn.reshape(-1)[0])
    else:
        n = int(max(src.max(initial=-1), dst.max(initial=-1))) + 1
    e = src.shape[0]
    ndata, edata = {}, {}
    for k in sorted(keys - {"src", "dst", "num_nodes"}):
        a = z[k]
        if a.ndim == 0 and "/" not in k:
            continue
        if k.startswith("ndata/"):
            ndata[k[6:]] = a
        elif k.startswith("edata/"):
            edata[k[6:]] = a
        elif a.ndim and a.shape[0] == n and n != e:
            ndata[k] = a
        elif a.ndim and a.shape[0] == e and n != e:
            edata[k] = a
        elif a.ndim and a.shape[0] == n:
            raise InputError(f"{path}: array {k!r} has {n} rows, which is both the number of nodes and of edges; "
                             f"rename it 'ndata/{k}' or 'edata/{k}'")
        else:
            raise InputError(f"{path}: array {k!r} has shape {tuple(a.shape)}; its first dimension must be the "
                             f"number of nodes ({n}) or of edges ({e})")
    return cls(src, dst, n, ndata, edata)


def _load_hetero(cls: type[ArrayGraph], z: _NpzArrays, keys: set, path) -> ArrayGraph:
    """The heterogeneous layout: `ntypes`, per-type `num_nodes`, `canonical_etypes`, typed arrays."""
    for k in ("ntypes", "num_nodes"):
        if k not in keys:
            raise InputError(f"{path} has 'canonical_etypes' but no {k!r}; a heterogeneous graph .npz needs both")
    ntypes = [str(t) for t in z["ntypes"].reshape(-1)]
    counts = _count(z["num_nodes"], "num_nodes", path).reshape(-1)
    if len(counts) != len(ntypes):
        raise InputError(f"{path}: 'num_nodes' has {len(counts)} counts for {len(ntypes)} node types")
    etypes = [tuple(str(c).split(":")) for c in z["canonical_etypes"].reshape(-1)]
    edges = {}
    for c in etypes:
        if len(c) != 3:
            raise InputError(f"{path}: canonical edge type {':'.join(c)!r} must be 'src_type:relation:dst_type'")
        name = ":".join(c)
        if f"src/{name}" not in keys or f"dst/{name}" not in keys:
            raise InputError(f"{path}: edge type {name} needs arrays 'src/{name}' and 'dst/{name}'")
        edges[c] = (z[f"src/{name}"], z[f"dst/{name}"])
    ndata: dict = {t: {} for t in ntypes}
    edata: dict = {c: {} for c in etypes}
    by_name = {":".join(c): c for c in etypes}
    for k in keys:
        parts = k.split("/")
        if parts[0] == "ndata" and len(parts) == 3 and parts[1] in ndata:
            ndata[parts[1]][parts[2]] = z[k]
        elif parts[0] == "edata" and len(parts) == 3 and parts[1] in by_name:
            edata[by_name[parts[1]]][parts[2]] = z[k]
        elif parts[0] in ("ndata", "edata"):
            raise InputError(f"{path}: array {k!r} names a type that is not in 'ntypes'/'canonical_etypes'")
    return cls.from_hetero(edges, dict(zip(ntypes, counts.tolist())), ndata, edata)


def save_npz(g: ArrayGraph, path: str | Path) -> None:
    """Write `g` in the exchange format (uncompressed, so loading is a straight read).

    The file is written beside `path` and renamed over it, so saving over the file `g` was
    memory-mapped from is safe, and the name is exactly `path` (np.savez would append '.npz').
    """
    arrays: dict[str, np.ndarray] = {}
    if g.ntypes == [DEFAULT_NTYPE] and g.canonical_etypes == [DEFAULT_ETYPE]:
        arrays.update(src=np.asarray(g.src), dst=np.asarray(g.dst), num_nodes=np.int64(g.num_nodes()))
        arrays.update({f"ndata/{k}": np.asarray(v) for k, v in g.ndata.items()})
        arrays.update({f"edata/{k}": np.asarray(v) for k, v in g.edata.items()})
    else:
        arrays["ntypes"] = np.array(g.ntypes)
        arrays["num_nodes"] = np.array([g.num_nodes(t) for t in g.ntypes], dtype=np.int64)
        arrays["canonical_etypes"] = np.array([":".join(c) for c in g.canonical_etypes])
        for i, c in enumerate(g.canonical_etypes):
            name = ":".join(c)
            lo, hi = int(g.etype_offsets[i]), int(g.etype_offsets[i + 1])
            arrays[f"src/{name}"] = np.asarray(g.src[lo:hi] - g.ntype_offsets[g.get_ntype_id(c[0])])
            arrays[f"dst/{name}"] = np.asarray(g.dst[lo:hi] - g.ntype_offsets[g.get_ntype_id(c[2])])
            arrays.update({f"edata/{name}/{k}": np.asarray(v) for k, v in g.edges[c].data.items()})
        for t in g.ntypes:
            arrays.update({f"ndata/{t}/{k}": np.asarray(v) for k, v in g.nodes[t].data.items()})
    if g.node_names is not None:
        arrays["node_names"] = np.asarray(g.node_names).astype(str)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex[:12]}.tmp"
    try:
        with open(tmp, "xb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
