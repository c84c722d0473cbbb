"""OGB's binary node-dataset layout (ogbn-papers100M's `papers100M-bin`), read without holding it:
`raw/data.npz` (`edge_index` (2, E), `num_nodes_list`, `num_edges_list`, `node_feat`, other
`node_*` arrays), `raw/node-label.npz` (`node_label`, NaN where a node has none) and the split
`split/<name>/{train,valid,test}.csv.gz` (node ids, one per line). `load_ogb_node` reads
ogbn-papers100M through it too.

Members stored uncompressed are read in place (`FileArray`); compressed ones (as
`np.savez_compressed` writes them) are inflated once, a piece at a time, into `.npy` files in
a scratch folder beside the dataset, then read in place too. Labels become int64 with -1 where
OGB has NaN; the splits become `train_mask`/`val_mask`/`test_mask`.
"""

from __future__ import annotations

import gzip
import zipfile
from pathlib import Path

import numpy as np

from ..errors import InputError
from .file_array import FileArray
from .npz import _NpzArrays

UNPACKED = ".distgraph-unpacked"
SPLITS = {"train": "train_mask", "valid": "val_mask", "test": "test_mask"}


def _inflate(z: _NpzArrays, key: str, out: Path) -> FileArray:
    """A compressed member, inflated into `out` (a `.npy`) a megabyte at a time; reused if there."""
    from .chunked import npy_file_array

    if not out.exists():
        tmp = out.with_name(out.name + ".tmp")
        with z._zip.open(key + ".npy") as src, open(tmp, "wb") as dst:
            while block := src.read(1 << 20):
                dst.write(block)
        tmp.replace(out)
    return npy_file_array(out, transposed_ok=True)


def _member(z: _NpzArrays, key: str, scratch: Path):
    """A member as something read in place: a `FileArray`, or a small array."""
    info = z._zip.getinfo(key + ".npy")
    if info.compress_type == zipfile.ZIP_STORED:
        return z[key]
    scratch.mkdir(exist_ok=True)
    return _inflate(z, key, scratch / f"{key}.npy")


def ogb_labels(raw: np.ndarray) -> np.ndarray:
    """OGB's label matrix (float, NaN where unlabelled) as int64 with -1; one column flat."""
    raw = raw.reshape(raw.shape[0], -1)
    labels = np.where(np.isnan(raw), -1, raw).astype(np.int64) if raw.dtype.kind == "f" else raw.astype(np.int64)
    return labels[:, 0] if labels.shape[1] == 1 else labels


def split_masks(split_dir: Path, n: int) -> dict[str, np.ndarray]:
    """`train_mask`, `val_mask`, `test_mask` from OGB's split files (node ids, one per line)."""
    out = {}
    for name, mask_name in SPLITS.items():
        f = split_dir / f"{name}.csv.gz"
        if not f.is_file():
            raise InputError(f"split folder {split_dir} lacks {f.name} (node ids of the {name} split)")
        with gzip.open(f, "rt") as fh:
            ids = np.loadtxt(fh, dtype=np.int64, ndmin=1)
        if ids.size and (ids.min() < 0 or ids.max() >= n):
            raise InputError(f"{f} names nodes outside [0, {n})")
        mask = np.zeros(n, dtype=bool)
        mask[ids] = True
        out[mask_name] = mask
    return out


class OgbBinary:
    """An OGB binary node dataset folder (`<root>/raw/data.npz`, ...), its arrays read in place."""

    def __init__(self, root: str | Path, split: str | None = None):
        self.root = Path(root)
        raw = self.root / "raw"
        data = raw / "data.npz"
        if not data.is_file():
            raise InputError(f"{self.root} is not an OGB binary dataset folder: {data} is missing (it holds "
                             f"edge_index, num_nodes_list, num_edges_list and node_feat)")
        scratch = self.root / UNPACKED
        with _NpzArrays(data, lazy=True) as z:
            keys = set(z.files)
            for k in ("edge_index", "num_nodes_list"):
                if k not in keys:
                    raise InputError(f"{data} has no {k!r} array; an OGB binary graph needs edge_index and "
                                     f"num_nodes_list")
            counts = np.asarray(z["num_nodes_list"]).reshape(-1)
            if counts.size != 1:
                raise InputError(f"{data} holds {counts.size} graphs; a node dataset holds one")
            self.num_nodes = int(counts[0])
            edges = _member(z, "edge_index", scratch)
            shape = edges.shape[::-1] if getattr(edges, "transposed", False) else edges.shape
            if len(shape) != 2 or shape[0] != 2:
                raise InputError(f"{data}: edge_index has shape {shape}; it must be (2, num_edges)")
            self.num_edges = int(shape[1])
            self.src, self.dst = _rows(edges)
            self.node_data, self.edge_data = {}, {}
            for k in sorted(keys):
                if k.startswith(("node_", "edge_")) and k not in ("num_nodes_list", "num_edges_list", "edge_index"):
                    a = _member(z, k, scratch)
                    rows = self.num_nodes if k.startswith("node_") else self.num_edges
                    if a.shape[0] != rows:
                        raise InputError(f"{data}: {k} has {a.shape[0]} rows, not one per {k[:4]} ({rows})")
                    (self.node_data if k.startswith("node_") else self.edge_data)[k[5:]] = a
        labels = raw / "node-label.npz"
        if labels.is_file():
            with _NpzArrays(labels) as f:
                self.node_data["label"] = ogb_labels(np.asarray(f["node_label"]))
        split_dir = self._split_dir(split)
        if split_dir is not None:
            self.node_data.update(split_masks(split_dir, self.num_nodes))

    def _split_dir(self, split: str | None) -> Path | None:
        root = self.root / "split"
        if split is not None:
            if not (root / split).is_dir():
                raise InputError(f"{root / split} does not exist; the splits there are "
                                 f"{sorted(p.name for p in root.iterdir()) if root.is_dir() else 'none'}")
            return root / split
        found = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
        return found[0] if found else None


class _Column:
    """Column `col` of a C-order (E, 2) `FileArray` (a Fortran-order (2, E) edge_index), sliced."""

    def __init__(self, pairs: FileArray, col: int):
        self.pairs, self.col = pairs, col

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, key) -> np.ndarray:
        return np.ascontiguousarray(self.pairs[key][:, self.col])

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return np.asarray(self[:], dtype=dtype)


def _rows(edges) -> tuple:
    """The two rows of a (2, E) edge_index as 1-D arrays read in place."""
    if getattr(edges, "transposed", False):
        return _Column(edges, 0), _Column(edges, 1)
    if isinstance(edges, FileArray):
        e = edges.shape[1]
        return (FileArray(edges.path, edges.offset, edges.dtype, (e,)),
                FileArray(edges.path, edges.offset + e * edges.dtype.itemsize, edges.dtype, (e,)))
    return edges[0], edges[1]


def load_ogb_binary(root: str | Path, *, tensors: bool = False, split: str | None = None):
    """An OGB binary node dataset read whole into a `Graph` (or with `tensors=False` an
    `ArrayGraph`), for datasets that fit in memory."""
    from .graph_kind import graph_class

    d = OgbBinary(root, split)
    return graph_class(tensors)(np.asarray(d.src), np.asarray(d.dst), d.num_nodes,
                                {k: np.asarray(v) for k, v in d.node_data.items()},
                                {k: np.asarray(v) for k, v in d.edge_data.items()})
