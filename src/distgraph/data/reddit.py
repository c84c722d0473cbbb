"""`RedditDataset`: DGL's Reddit dataset read from an already-downloaded copy of DGL's files
(never a download): `reddit_data.npz` (`feature`, `label`, `node_types` 1/2/3 = train/val/test)
and `reddit_graph.npz` (`reddit_self_loop_graph.npz` with `self_loop=True`), a SciPy sparse
adjacency matrix saved by `scipy.sparse.save_npz` (read here without SciPy).

The folder is DGL's: `<raw_dir>/reddit` (`reddit_self_loop`), `raw_dir` defaulting to DGL's
download folder; a `raw_dir` that holds the files itself is read too. Nodes keep the files'
order (DGL renumbers them by reverse Cuthill-McKee: the same graph, other ids).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import torch

from ..cluster.env import dgl_download_dir
from ..errors import InputError
from ..tensor_graph import Graph


def read_scipy_npz(path: Path) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(row, col, rows, cols) of every stored entry of a COO, CSR or CSC matrix written by
    `scipy.sparse.save_npz`."""
    with np.load(path) as f:
        if "format" not in f or "shape" not in f:
            raise InputError(f"{path} is not a SciPy sparse matrix file (no 'format'/'shape' members)")
        fmt, (rows, cols) = f["format"].item(), (int(x) for x in f["shape"])
        fmt = fmt.decode() if isinstance(fmt, bytes) else str(fmt)
        if fmt == "coo":
            return f["row"].astype(np.int64), f["col"].astype(np.int64), rows, cols
        if fmt in ("csr", "csc"):
            indptr, indices = f["indptr"].astype(np.int64), f["indices"].astype(np.int64)
            major = np.repeat(np.arange(indptr.size - 1, dtype=np.int64), np.diff(indptr))
            return (major, indices, rows, cols) if fmt == "csr" else (indices, major, rows, cols)
    raise InputError(f"{path} holds a SciPy {fmt!r} matrix; save it as COO, CSR or CSC")


class RedditDataset:
    """DGL's `RedditDataset(self_loop=False, raw_dir=None, force_reload=False, verbose=False,
    transform=None)`: `dataset[0]` is the graph with `feat`, `label`, `train_mask`, `val_mask`
    and `test_mask` node data; `num_classes` its number of classes. `force_reload` changes
    nothing: the files are read every time, nothing is cached."""

    def __init__(self, self_loop: bool = False, raw_dir: str | Path | None = None, force_reload: bool = False,
                 verbose: bool = False, transform: Callable | None = None):
        self.name = "reddit_self_loop" if self_loop else "reddit"
        graph_file = f"{self.name}_graph.npz"
        root = Path(raw_dir) if raw_dir is not None else dgl_download_dir()
        candidates = [root / self.name, root]
        folder = next((d for d in candidates if (d / "reddit_data.npz").is_file() and (d / graph_file).is_file()),
                      None)
        if folder is None:
            raise InputError(f"Reddit's files reddit_data.npz and {graph_file} are not in {candidates[0]} (nor in "
                             f"{root}): distgraph reads an already-downloaded copy and never downloads; put DGL's "
                             f"reddit{'_self_loop' if self_loop else ''}.zip contents there or pass raw_dir=")
        self.raw_path, self._transform, self.verbose = folder, transform, verbose
        self._graph = self._load(folder / "reddit_data.npz", folder / graph_file)
        self._num_classes = int(self._graph.ndata["label"].max()) + 1  # before a script renames the labels
        if verbose:
            g = self._graph
            print(f"Reddit from {folder}: {g.num_nodes():,} nodes, {g.num_edges():,} edges, "
                  f"{g.ndata['feat'].shape[1]} features, {self.num_classes} classes")

    @staticmethod
    def _load(data_path: Path, graph_path: Path) -> Graph:
        row, col, rows, cols = read_scipy_npz(graph_path)
        with np.load(data_path) as f:
            missing = {"feature", "label", "node_types"} - set(f.files)
            if missing:
                raise InputError(f"{data_path} lacks {sorted(missing)}; it must hold feature, label and node_types")
            feature, label, kinds = f["feature"], f["label"], f["node_types"]
        n = feature.shape[0]
        if rows != cols or rows != n or label.shape[0] != n or kinds.shape[0] != n:
            raise InputError(f"Reddit's files disagree: a {rows} x {cols} adjacency matrix, {n} feature rows, "
                             f"{label.shape[0]} labels, {kinds.shape[0]} node types")
        ndata = {"train_mask": torch.from_numpy(kinds == 1), "val_mask": torch.from_numpy(kinds == 2),
                 "test_mask": torch.from_numpy(kinds == 3),
                 "feat": torch.from_numpy(np.ascontiguousarray(feature, dtype=np.float32)),
                 "label": torch.from_numpy(label.astype(np.int64))}
        return Graph(torch.from_numpy(row), torch.from_numpy(col), n, ndata)

    @property
    def num_classes(self) -> int:
        return self._num_classes

    def __getitem__(self, idx: int) -> Graph:
        if idx != 0:
            raise IndexError("the Reddit dataset has one graph (index 0)")
        return self._graph if self._transform is None else self._transform(self._graph)

    def __len__(self) -> int:
        return 1
