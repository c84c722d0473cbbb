"""`CoraGraphDataset`, `CiteseerGraphDataset`, `PubmedGraphDataset`: DGL's citation graphs read
from an already-downloaded copy of the Planetoid files (never a download).

The files are Planetoid's (`ind.<name>.x`, `.y`, `.tx`, `.ty`, `.allx`, `.ally`, `.graph`,
`.test.index`): Python 2 pickles of SciPy sparse matrices, NumPy arrays and an adjacency
dict. They are read here without SciPy, by an unpickler that builds only arrays, lists,
dicts and a stand-in for SciPy's CSR matrix (any other object in a file is refused), then
made into DGL's graph: features row-normalised, the test rows put back in graph order,
Citeseer's isolated test nodes given zero rows, labels as the one-hot's arg-max, masks of
the first 140 (Cora; the training labels' count) training, the next 500 validation and the
test index's nodes test, each undirected edge both ways (DGL's `reverse_edge=True`).

Folders: DGL's `<raw_dir>/cora_v2` (files `ind.cora_v2.*`), `<raw_dir>/citeseer`,
`<raw_dir>/pubmed`, `raw_dir` defaulting to DGL's download folder; also PyG's
`<raw_dir>/Cora/raw` and a `raw_dir` holding the files itself, named `ind.cora.*`.
"""

from __future__ import annotations

import _compat_pickle
import codecs
import collections
import copyreg
import io
import pickle
from pathlib import Path
from typing import Callable

import numpy as np
import torch

try:
    from numpy._core import multiarray
except ImportError:  # numpy 1.x
    from numpy.core import multiarray

from ..cluster.env import dgl_download_dir
from ..errors import InputError
from ..tensor_graph import Graph

PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph")
VALIDATION = 500  # DGL's (and Planetoid's) validation nodes, after the training ones


class _CSR:
    """What a pickled `scipy.sparse.csr_matrix` becomes: its arrays, as a dense float32 matrix."""

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def dense(self, what: str) -> np.ndarray:
        shape = self.__dict__.get("_shape", self.__dict__.get("shape"))
        try:
            data, indices, indptr = (np.asarray(self.__dict__[k]) for k in ("data", "indices", "indptr"))
            rows, cols = (int(s) for s in shape)
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{what} is not a SciPy CSR matrix as Planetoid's files hold them") from None
        out = np.zeros((rows, cols), dtype=np.float32)
        out[np.repeat(np.arange(rows), np.diff(indptr)), indices] = data
        return out


# everything a Planetoid file may ask for: arrays, lists, dicts, and SciPy's CSR as `_CSR`
_ALLOWED = {
    ("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype,
    **{(m, "_reconstruct"): multiarray._reconstruct for m in ("numpy.core.multiarray", "numpy._core.multiarray")},
    **{(m, "scalar"): multiarray.scalar for m in ("numpy.core.multiarray", "numpy._core.multiarray")},
    ("copyreg", "_reconstructor"): copyreg._reconstructor, ("_codecs", "encode"): codecs.encode,
    ("builtins", "object"): object, ("builtins", "list"): list, ("builtins", "set"): set,
    ("collections", "defaultdict"): collections.defaultdict,
    **{(m, "csr_matrix"): _CSR for m in ("scipy.sparse.csr", "scipy.sparse._csr", "scipy.sparse")},
}


class _PlanetoidUnpickler(pickle.Unpickler):
    """Builds what `_ALLOWED` names only: a pickle is code, and a file that asks for anything
    else is refused rather than run."""

    def find_class(self, module: str, name: str):
        if (module, name) in _compat_pickle.NAME_MAPPING:  # Python 2's names (the originals are Python 2 pickles)
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        found = _ALLOWED.get((module, name))
        if found is None:
            raise InputError(f"a Planetoid file asks for {module}.{name}, which is not an array, list, dict or CSR "
                             f"matrix: refused (is it really a Planetoid file?)")
        return found


def _load(path: Path):
    try:
        return _PlanetoidUnpickler(io.BytesIO(path.read_bytes()), encoding="latin1").load()
    except InputError:
        raise
    except Exception as exc:  # a truncated or foreign file: pickle raises many kinds
        raise InputError(f"{path} is not a readable Planetoid file ({type(exc).__name__}: {exc})") from None


def _dense(value, what: str) -> np.ndarray:
    if isinstance(value, _CSR):
        return value.dense(what)
    a = np.asarray(value)
    if a.ndim != 2 or a.dtype.kind not in "biuf":
        raise InputError(f"{what} must be a 2-D numeric matrix, got shape {a.shape} of {a.dtype}")
    return a.astype(np.float32)


def _edges(adjacency, n: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Each undirected pair of the adjacency dict once each way, a self-loop once (networkx's
    undirected graph of the dict, as a directed one)."""
    if not isinstance(adjacency, dict):
        raise InputError(f"{what} must hold a dict {{node: [neighbours]}}, got {type(adjacency).__name__}")
    counts = np.fromiter((len(v) for v in adjacency.values()), dtype=np.int64, count=len(adjacency))
    u = np.repeat(np.fromiter(adjacency.keys(), dtype=np.int64, count=len(adjacency)), counts)
    v = np.fromiter((x for vs in adjacency.values() for x in vs), dtype=np.int64, count=int(counts.sum()))
    if u.size and (min(u.min(), v.min()) < 0 or max(u.max(), v.max()) >= n):
        raise InputError(f"{what} names nodes outside [0, {n}) (there are {n} feature rows)")
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    pairs = np.unique(lo * n + hi)
    lo, hi = pairs // n, pairs % n
    loop = lo == hi
    return np.concatenate([lo, hi[~loop]]), np.concatenate([hi, lo[~loop]])


def _normalise_rows(features: np.ndarray) -> np.ndarray:
    """Each row divided by its sum (a row summing to 0 stays 0), as DGL's preprocessing does."""
    total = features.sum(1, keepdims=True)
    return np.divide(features, total, out=np.zeros_like(features), where=total != 0)


class CitationGraphDataset:
    """DGL's `CitationGraphDataset(name, raw_dir=None, force_reload=False, verbose=True,
    reverse_edge=True, transform=None, reorder=False)`: `dataset[0]` is the graph with `feat`,
    `label`, `train_mask`, `val_mask`, `test_mask`; `num_classes`. `force_reload` changes
    nothing (the files are read every time); `reverse_edge=False` keeps each undirected edge
    once (lower id first); `reorder` is refused (DGL renumbers by reverse Cuthill-McKee)."""

    def __init__(self, name: str, raw_dir: str | Path | None = None, force_reload: bool = False,
                 verbose: bool = True, reverse_edge: bool = True, transform: Callable | None = None,
                 reorder: bool = False):
        name = name.lower()
        if name not in ("cora", "citeseer", "pubmed"):
            raise InputError(f"unknown citation dataset {name!r}: cora, citeseer or pubmed")
        if reorder:
            raise InputError("reorder=True is not offered: the nodes keep the files' order")
        self.name, self._transform = name, transform
        folder, stem = self._find(name, Path(raw_dir) if raw_dir is not None else dgl_download_dir())
        self.raw_path = folder
        self._graph, self._num_classes = self._read(folder, stem, reverse_edge)
        if verbose:
            g = self._graph
            print(f"{name} from {folder}: {g.num_nodes():,} nodes, {g.num_edges():,} edges, "
                  f"{g.ndata['feat'].shape[1]} features, {self._num_classes} classes")

    @staticmethod
    def _find(name: str, root: Path) -> tuple[Path, str]:
        dgl_name = "cora_v2" if name == "cora" else name
        candidates = [(root / dgl_name, dgl_name), (root / dgl_name, name), (root / name.capitalize() / "raw", name),
                      (root / name / "raw", name), (root, dgl_name), (root, name)]
        for folder, stem in candidates:
            if all((folder / f"ind.{stem}.{p}").is_file() for p in (*PARTS, "test.index")):
                return folder, stem
        raise InputError(f"the Planetoid files of {name} (ind.{name}.x, .y, .tx, .ty, .allx, .ally, .graph, "
                         f".test.index) are not in {root / dgl_name} (nor {root / name.capitalize() / 'raw'} or "
                         f"{root}): distgraph reads an already-downloaded copy and never downloads; put them "
                         f"there or pass raw_dir=")

    def _read(self, folder: Path, stem: str, reverse_edge: bool) -> tuple[Graph, int]:
        what = {p: folder / f"ind.{stem}.{p}" for p in PARTS}
        x, y, tx, ty, allx, ally = (_dense(_load(what[p]), str(what[p])) for p in PARTS[:-1])
        adjacency = _load(what["graph"])
        index_file = folder / f"ind.{stem}.test.index"
        try:
            test_order = np.loadtxt(index_file, dtype=np.int64, ndmin=1)
        except ValueError:
            raise InputError(f"{index_file} must hold one integer node id a line") from None
        test_sorted = np.sort(test_order)
        if self.name == "citeseer":  # isolated test nodes have no rows: zero rows in their places
            span = int(test_sorted[-1] - test_sorted[0]) + 1
            tx_full, ty_full = np.zeros((span, tx.shape[1]), np.float32), np.zeros((span, ty.shape[1]), np.float32)
            tx_full[test_sorted - test_sorted[0]], ty_full[test_sorted - test_sorted[0]] = tx, ty
            tx, ty = tx_full, ty_full
        features, onehot = np.vstack([allx, tx]), np.vstack([ally, ty])
        n = features.shape[0]
        if onehot.shape[0] != n or test_sorted.size and (test_sorted[0] < 0 or test_sorted[-1] >= n):
            raise InputError(f"{folder}'s files disagree: {n} feature rows, {onehot.shape[0]} label rows, test "
                             f"ids up to {int(test_sorted[-1]) if test_sorted.size else -1}")
        features[test_order], onehot[test_order] = features[test_sorted], onehot[test_sorted]
        src, dst = _edges(adjacency, n, str(what["graph"]))
        if not reverse_edge:
            keep = src <= dst
            src, dst = src[keep], dst[keep]
        masks = {k: np.zeros(n, dtype=bool) for k in ("train_mask", "val_mask", "test_mask")}
        masks["train_mask"][:y.shape[0]] = True
        masks["val_mask"][y.shape[0]:y.shape[0] + VALIDATION] = True
        masks["test_mask"][test_sorted] = True
        ndata = {"feat": torch.from_numpy(_normalise_rows(features)),
                 "label": torch.from_numpy(onehot.argmax(1).astype(np.int64)),
                 **{k: torch.from_numpy(v) for k, v in masks.items()}}
        return Graph(torch.from_numpy(src), torch.from_numpy(dst), n, ndata), onehot.shape[1]

    @property
    def num_classes(self) -> int:
        return self._num_classes

    def __getitem__(self, idx: int) -> Graph:
        if idx != 0:
            raise IndexError(f"the {self.name} dataset has one graph (index 0)")
        return self._graph if self._transform is None else self._transform(self._graph)

    def __len__(self) -> int:
        return 1


class CoraGraphDataset(CitationGraphDataset):
    """DGL's `CoraGraphDataset(raw_dir=None, ...)`: 2,708 nodes, 10,556 edges, 7 classes."""

    def __init__(self, raw_dir: str | Path | None = None, force_reload: bool = False, verbose: bool = True,
                 reverse_edge: bool = True, transform: Callable | None = None, reorder: bool = False):
        super().__init__("cora", raw_dir, force_reload, verbose, reverse_edge, transform, reorder)


class CiteseerGraphDataset(CitationGraphDataset):
    """DGL's `CiteseerGraphDataset(raw_dir=None, ...)`: 3,327 nodes, 9,228 edges, 6 classes."""

    def __init__(self, raw_dir: str | Path | None = None, force_reload: bool = False, verbose: bool = True,
                 reverse_edge: bool = True, transform: Callable | None = None, reorder: bool = False):
        super().__init__("citeseer", raw_dir, force_reload, verbose, reverse_edge, transform, reorder)


class PubmedGraphDataset(CitationGraphDataset):
    """DGL's `PubmedGraphDataset(raw_dir=None, ...)`: 19,717 nodes, 88,651 edges, 3 classes."""

    def __init__(self, raw_dir: str | Path | None = None, force_reload: bool = False, verbose: bool = True,
                 reverse_edge: bool = True, transform: Callable | None = None, reorder: bool = False):
        super().__init__("pubmed", raw_dir, force_reload, verbose, reverse_edge, transform, reorder)
